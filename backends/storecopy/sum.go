package storecopy

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// sum is a checksum of a kind's items: the sum of each item's SHA-256
// (over its canonical form), so that the order of a dump does not matter,
// but for events, whose order is part of what is copied: there each
// item's hash is chained with the hash before.
type sum struct {
	ordered bool
	count   int64
	lanes   [4]uint64
	chain   [32]byte
}

func newSum(kind backends.DumpKind) *sum { return &sum{ordered: kind == backends.DumpEvents} }

func (s *sum) add(it backends.DumpItem) error {
	b, err := canonical(it)
	if err != nil {
		return err
	}
	h := sha256.Sum256(b)
	if s.ordered {
		s.chain = sha256.Sum256(append(s.chain[:], h[:]...))
		h = s.chain
	}
	for i := range s.lanes {
		s.lanes[i] += binary.BigEndian.Uint64(h[8*i:])
	}
	s.count++
	return nil
}

func (s *sum) String() string {
	if s.ordered {
		return fmt.Sprintf("%x", s.chain[:16])
	}
	return fmt.Sprintf("%016x%016x", s.lanes[0], s.lanes[1])
}

// canonical is an item as JSON, without what the target numbers anew
// (event Seq, lock id, record version, candidate handle), with every time
// in UTC to the microsecond, and empty slices and maps as absent ones.
func canonical(it backends.DumpItem) ([]byte, error) {
	switch {
	case it.Event != nil:
		e := *it.Event
		e.Seq = 0
		it.Event = &e
	case it.Lock != nil:
		l := *it.Lock
		l.ID = ""
		it.Lock = &l
	case it.Record != nil:
		r := *it.Record
		r.Version = 0
		it.Record = &r
	case it.Candidate != nil:
		c := *it.Candidate
		c.Handle = nil
		it.Candidate = &c
	}
	v := reflect.New(reflect.TypeOf(it)).Elem()
	v.Set(reflect.ValueOf(it))
	normalize(v)
	return json.Marshal(v.Interface())
}

var timeType = reflect.TypeOf(time.Time{})

// normalize rewrites v in place (v is addressable), copying what pointers
// point to so that the caller's items are left as they are.
func normalize(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		c := reflect.New(v.Type().Elem())
		c.Elem().Set(v.Elem())
		normalize(c.Elem())
		v.Set(c)
	case reflect.Struct:
		if v.Type() == timeType {
			t := v.Interface().(time.Time)
			if !t.IsZero() {
				v.Set(reflect.ValueOf(t.UTC().Truncate(time.Microsecond)))
			} else {
				v.Set(reflect.ValueOf(time.Time{}))
			}
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				normalize(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(c, v)
		for i := 0; i < c.Len(); i++ {
			normalize(c.Index(i))
		}
		v.Set(c)
	case reflect.Map:
		if v.Len() == 0 {
			v.Set(reflect.Zero(v.Type()))
		}
	case reflect.Interface:
		// Candidate.Handle, cleared above.
	}
}

// fenceFloors is what NextFence must exceed, by chunk, and for every
// chunk (a global counter).
type fenceFloors struct {
	global int64
	chunks map[[2]string]int64
}

func (f *fenceFloors) add(x backends.Fence) {
	if x.Global {
		f.global = max(f.global, x.Fence)
		return
	}
	if f.chunks == nil {
		f.chunks = map[[2]string]int64{}
	}
	k := [2]string{x.Dataset, x.DataID}
	f.chunks[k] = max(f.chunks[k], x.Fence)
}

// floor is what the next fence of chunk k must exceed.
func (f *fenceFloors) floor(k [2]string) int64 { return max(f.global, f.chunks[k]) }

// covers checks that every chunk's next fence in f exceeds what it must
// in src: fences never repeat after a copy.
func (f *fenceFloors) covers(src *fenceFloors) error {
	for k, n := range src.chunks {
		if f.floor(k) < n {
			return fmt.Errorf("chunk %s/%s would issue fence %d again (the target's counter is %d)", k[0], k[1], f.floor(k)+1, f.floor(k))
		}
	}
	if src.global > f.global {
		for k := range f.chunks {
			if f.chunks[k] < src.global {
				return fmt.Errorf("chunk %s/%s would issue fence %d again (the source's counter was %d)", k[0], k[1], f.floor(k)+1, src.global)
			}
		}
	}
	return nil
}
