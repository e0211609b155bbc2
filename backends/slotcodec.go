package backends

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"
)

// SlotCodec encodes slot records as JSON and decodes them, remembering
// the last encodings of each record it wrote or read. A claim round reads
// back its job's record exactly as an earlier round wrote it, and an
// ending reads it as a claim left it: such a record is copied from memory
// instead of parsed again, token by token. Backends whose stored bytes
// are the bytes written (PostgreSQL's text column, etcd values) share one
// codec per store. It keeps slotEncodings versions per record key (a
// reader may see a version older than the last one written, which is
// still being committed), a handful of keys per limited job or pool.
type SlotCodec struct {
	mu   sync.Mutex
	last map[string][]slotEncoding // newest last
}

// slotEncodings is how many versions of each record SlotCodec keeps.
const slotEncodings = 4

type slotEncoding struct {
	raw []byte
	rec Slots
}

// slotsJSON is Slots as SlotCodec unmarshals it: the same fields and
// names, with the holder list read by hand where it can be (holderList).
type slotsJSON struct {
	Key     string
	Pool    Pool
	Holders holderList
	Ended   []string `json:",omitempty"`
	Seeded  map[string]int64
}

// holderList is a record's holders as SlotCodec reads them.
type holderList []SlotHolder

// appendHolders appends hs as json.Marshal writes []SlotHolder,
// [{"t":token,"l":lease},...] or null, without a reflective round per
// holder: a claim round writes its job's record, and the list is most of it.
func appendHolders(out []byte, hs []SlotHolder) ([]byte, error) {
	if hs == nil {
		return append(out, "null"...), nil
	}
	start := len(out)
	out = append(out, '[')
	for i, h := range hs {
		if !plainToken(h.Token) {
			b, err := json.Marshal(hs) // escaping needed: the slow way
			return append(out[:start], b...), err
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"t":"`...)
		out = append(out, h.Token...)
		out = append(out, `","l":`...)
		out = strconv.AppendInt(out, h.LeaseExpiresAt.UnixMicro(), 10)
		out = append(out, '}')
	}
	return append(out, ']'), nil
}

// UnmarshalJSON reads what appendHolders wrote; anything else (other
// spacing or field order, escapes) goes through encoding/json.
func (l *holderList) UnmarshalJSON(b []byte) error {
	if hs, ok := parseHolders(b); ok {
		*l = hs
		return nil
	}
	var hs []SlotHolder
	if err := json.Unmarshal(b, &hs); err != nil {
		return err
	}
	*l = hs
	return nil
}

// parseHolders parses exactly the bytes appendHolders writes.
func parseHolders(b []byte) ([]SlotHolder, bool) {
	if string(b) == "null" {
		return nil, true
	}
	rest, ok := bytes.CutPrefix(b, []byte("["))
	if !ok {
		return nil, false
	}
	hs := []SlotHolder{}
	for len(rest) > 0 && rest[0] != ']' {
		if len(hs) > 0 {
			if rest, ok = bytes.CutPrefix(rest, []byte(",")); !ok {
				return nil, false
			}
		}
		if rest, ok = bytes.CutPrefix(rest, []byte(`{"t":"`)); !ok {
			return nil, false
		}
		end := bytes.IndexByte(rest, '"')
		if end < 0 || !plainToken(string(rest[:end])) {
			return nil, false
		}
		token := string(rest[:end])
		if rest, ok = bytes.CutPrefix(rest[end:], []byte(`","l":`)); !ok {
			return nil, false
		}
		end = bytes.IndexByte(rest, '}')
		if end < 0 {
			return nil, false
		}
		lease, err := strconv.ParseInt(string(rest[:end]), 10, 64)
		if err != nil {
			return nil, false
		}
		rest = rest[end+1:]
		k, _, err := ParseToken(token)
		if err != nil {
			return nil, false // the slow way reports it
		}
		hs = append(hs, SlotHolder{Job: k.Job, Dataset: k.Dataset, DataID: k.DataID, Token: token, LeaseExpiresAt: time.UnixMicro(lease).UTC()})
	}
	return hs, string(rest) == "]"
}

// plainToken tells whether token is written in JSON as it is: claim
// tokens are "ct1." and unpadded base64url.
func plainToken(token string) bool {
	for i := 0; i < len(token); i++ {
		c := token[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Encode marshals s and remembers the encoding. The bytes are those of
// json.Marshal(s), written field by field (marshalSlots).
func (c *SlotCodec) Encode(s Slots) ([]byte, error) {
	raw, err := marshalSlots(s)
	if err != nil {
		return nil, err
	}
	c.remember(s.Key, raw, s)
	return raw, nil
}

// zeroPool is how json.Marshal writes the Pool of a job's record.
var zeroPool, _ = json.Marshal(Pool{})

// marshalSlots writes s as json.Marshal does, without reflection over the
// holders and ended tokens, which are most of a record and are written on
// every claim round and ending.
func marshalSlots(s Slots) ([]byte, error) {
	out := make([]byte, 0, 64+len(s.Holders)*(len(zeroPool)+32))
	out = append(out, `{"Key":`...)
	out = appendJSON(out, s.Key)
	out = append(out, `,"Pool":`...)
	if s.Pool == (Pool{}) {
		out = append(out, zeroPool...)
	} else {
		p, err := json.Marshal(s.Pool) // fails on a time it cannot write, as json.Marshal(s) did
		if err != nil {
			return nil, err
		}
		out = append(out, p...)
	}
	out = append(out, `,"Holders":`...)
	out, err := appendHolders(out, s.Holders)
	if err != nil {
		return nil, err
	}
	if len(s.Ended) > 0 {
		out = append(out, `,"Ended":[`...)
		for i, t := range s.Ended {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendJSON(out, t)
		}
		out = append(out, ']')
	}
	out = append(out, `,"Seeded":`...)
	out = appendJSON(out, s.Seeded)
	return append(out, '}'), nil
}

// appendJSON appends v as json.Marshal writes it: a plain string as it is,
// anything else through encoding/json, which cannot fail for a string or a
// map[string]int64.
func appendJSON(out []byte, v any) []byte {
	if s, ok := v.(string); ok && plainToken(s) {
		out = append(out, '"')
		out = append(out, s...)
		return append(out, '"')
	}
	b, _ := json.Marshal(v)
	return append(out, b...)
}

// Decode unmarshals the record stored under key. raw may be reused by the
// caller afterwards; the answer is the caller's own copy.
func (c *SlotCodec) Decode(key string, raw []byte) (*Slots, error) {
	c.mu.Lock()
	for _, e := range c.last[key] {
		if bytes.Equal(e.raw, raw) {
			s := cloneSlots(e.rec)
			c.mu.Unlock()
			return &s, nil
		}
	}
	c.mu.Unlock()
	var v slotsJSON
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("slot record %s is corrupt: %w", key, err)
	}
	s := Slots{Key: key, Pool: v.Pool, Holders: v.Holders, Ended: v.Ended, Seeded: v.Seeded}
	c.remember(key, slices.Clone(raw), s)
	return &s, nil
}

func (c *SlotCodec) remember(key string, raw []byte, s Slots) {
	s = cloneSlots(s)
	s.Key = key
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last = map[string][]slotEncoding{}
	}
	versions := c.last[key]
	if len(versions) == slotEncodings {
		versions = slices.Delete(versions, 0, 1)
	}
	c.last[key] = append(versions, slotEncoding{raw: raw, rec: s})
}

// cloneSlots copies s deeply enough that changing the copy's holders,
// ended tokens or seeded versions leaves s as it was.
func cloneSlots(s Slots) Slots {
	s.Holders = slices.Clone(s.Holders)
	s.Ended = slices.Clone(s.Ended)
	s.Seeded = maps.Clone(s.Seeded)
	return s
}
