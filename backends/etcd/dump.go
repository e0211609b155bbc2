package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"

	"github.com/chunklock/chunklock/backends"
)

// The etcd backend dumps and loads its keys (backends/dump.go), prefix by
// prefix (the key layout of doc.go).

var _ backends.Dumper = (*Backend)(nil)

// DumpCovers names every key prefix of the layout (doc.go) with the kind
// that dumps it; the tests check that the package writes no other.
func (b *Backend) DumpCovers() map[string]backends.DumpKind {
	return map[string]backends.DumpKind{
		"datasets": backends.DumpDatasets, "jobs": backends.DumpJobs, "catalog": "", "producers": "", "cnt": "", "cntgen": "",
		"backfill": backends.DumpBackfills, "creds": backends.DumpCredentials, "rows": backends.DumpRows,
		"running": "", "out": "", "fences": backends.DumpFences, "fencefloor": backends.DumpFences, "cand": backends.DumpCandidates,
		"evq": backends.DumpEvents, "events": backends.DumpEvents, "evc": "", "txn": "",
		"rlocks": backends.DumpLocks, "rlockids": "", "rlockseq": "", "slots": backends.DumpSlots,
		"records": backends.DumpRecords, "ping": "", "changes": backends.DumpChanges,
		"purge": "", // a deleted job's INPUT rows left to purge are not dumped (Dump)
		"pv":    backends.DumpValues,
		"marks": "", // the target's own, written when it is opened
	}
}

// dumpPage is how many keys one read of a dump returns.
const dumpPage = 1000

// dumpScan calls fn with every key and value under prefix p/, in key order:
// one RangeStream (etcd 3.7), or, from a server without it, a page at a
// time (a dumped store is stopped: nothing changes between pages). A page
// of a plain range read counts every key after it, which makes paging
// through millions of keys quadratic; the stream does not count.
func (b *Backend) dumpScan(ctx context.Context, p string, fn func(key string, val []byte, modRev int64) error) error {
	base := b.key(p) + "/"
	end := clientv3.GetPrefixRangeEnd(base)
	if b.closed.Load() {
		return backends.Unavailable(nil, "etcd store is closed")
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := b.cli.GetStream(sctx, base, clientv3.WithRange(end))
	if err == nil {
		for r := range stream {
			if err := r.Err(); err != nil {
				if codeOf(err) == codes.Unimplemented {
					return b.dumpPages(ctx, base, end, fn)
				}
				return mapErr(err, "dump "+p)
			}
			for _, kv := range r.Kvs {
				if err := fn(strings.TrimPrefix(string(kv.Key), base), kv.Value, kv.ModRevision); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if codeOf(err) == codes.Unimplemented {
		return b.dumpPages(ctx, base, end, fn)
	}
	return mapErr(err, "dump "+p)
}

// dumpPages is dumpScan a page at a time.
func (b *Backend) dumpPages(ctx context.Context, base, end string, fn func(key string, val []byte, modRev int64) error) error {
	from := base
	for {
		resp, err := b.get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(dumpPage))
		if err != nil {
			return err
		}
		for _, kv := range resp.Kvs {
			if err := fn(strings.TrimPrefix(string(kv.Key), base), kv.Value, kv.ModRevision); err != nil {
				return err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

func (b *Backend) Empty(ctx context.Context) (bool, error) {
	for p, kind := range b.DumpCovers() {
		if kind == "" {
			continue
		}
		resp, err := b.get(ctx, b.key(p)+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return false, err
		}
		if resp.Count > 0 {
			return false, nil
		}
	}
	return true, nil
}

func (b *Backend) Dump(ctx context.Context, kind backends.DumpKind, fn func(backends.DumpItem) error) error {
	if kind == backends.DumpEvents {
		return b.dumpEvents(ctx, fn)
	}
	if kind == backends.DumpChanges {
		return b.dumpChanges(ctx, fn)
	}
	if kind == backends.DumpFences {
		// The floor (a store loaded from PostgreSQL) stands for every
		// chunk without a counter: it goes as a global fence.
		if n := b.fenceFloor.Load(); n > 0 {
			if err := fn(backends.DumpItem{Fence: &backends.Fence{Fence: n, Global: true}}); err != nil {
				return err
			}
		}
	}
	p, decode := b.dumpDecoder(kind)
	if decode == nil {
		return fmt.Errorf("etcd: no dump kind %q", kind)
	}
	purging := map[string]bool{}
	if kind == backends.DumpRows {
		// A deleted job whose INPUT rows were not all purged yet
		// (purge/<job>, deletejob.go): its rows left are not copied, so
		// the copy holds none of them and needs no marker.
		if err := b.dumpScan(ctx, "purge", func(k string, _ []byte, _ int64) error {
			purging[k] = true
			return nil
		}); err != nil {
			return err
		}
	}
	return b.dumpScan(ctx, p, func(k string, v []byte, rev int64) error {
		it, err := decode(k, v, rev)
		if err != nil {
			return fmt.Errorf("etcd: %s/%s: %w", p, k, err)
		}
		if it.Row != nil && it.Row.Role == backends.RoleInput && purging[it.Row.Job] {
			return nil
		}
		return fn(it)
	})
}

// dumpDecoder is the prefix of kind and what reads one of its keys.
func (b *Backend) dumpDecoder(kind backends.DumpKind) (string, func(k string, v []byte, rev int64) (backends.DumpItem, error)) {
	switch kind {
	case backends.DumpDatasets:
		return "datasets", func(_ string, v []byte, _ int64) (backends.DumpItem, error) {
			var d backends.Dataset
			return backends.DumpItem{Dataset: &d}, json.Unmarshal(v, &d)
		}
	case backends.DumpJobs:
		return "jobs", func(_ string, v []byte, _ int64) (backends.DumpItem, error) {
			var j backends.Job
			return backends.DumpItem{Job: &j}, json.Unmarshal(v, &j)
		}
	case backends.DumpCredentials:
		return "creds", func(_ string, v []byte, _ int64) (backends.DumpItem, error) {
			var c backends.Credential
			return backends.DumpItem{Credential: &c}, json.Unmarshal(v, &c)
		}
	case backends.DumpRows:
		return "rows", func(k string, v []byte, _ int64) (backends.DumpItem, error) {
			rk, ok := parseCursor(k)
			if !ok {
				return backends.DumpItem{}, fmt.Errorf("not a row key")
			}
			r, err := decodeRow(rk, v)
			return backends.DumpItem{Row: &r}, err
		}
	case backends.DumpFences:
		return "fences", func(k string, v []byte, _ int64) (backends.DumpItem, error) {
			ds, sk, _ := strings.Cut(k, "/")
			id, err := backends.DataIDFromSortKey(sk)
			if err != nil {
				return backends.DumpItem{}, err
			}
			n, err := strconv.ParseInt(string(v), 10, 64)
			return backends.DumpItem{Fence: &backends.Fence{Dataset: ds, DataID: id, Fence: n}}, err
		}
	case backends.DumpCandidates:
		return "cand", func(k string, v []byte, _ int64) (backends.DumpItem, error) {
			job, rest, _ := strings.Cut(k, "/")
			c, ok := parseCandKey(rest, job)
			if !ok {
				return backends.DumpItem{}, fmt.Errorf("not a candidate key")
			}
			decodeCand(&c, v)
			c.Frontier = strings.HasSuffix(rest, "/frontier")
			c.Handle = nil
			return backends.DumpItem{Candidate: &c}, nil
		}
	case backends.DumpLocks:
		return "rlocks", func(_ string, v []byte, _ int64) (backends.DumpItem, error) {
			var l backends.ResourceLock
			return backends.DumpItem{Lock: &l}, json.Unmarshal(v, &l)
		}
	case backends.DumpSlots:
		return "slots", func(k string, v []byte, _ int64) (backends.DumpItem, error) {
			s, err := b.decodeSlots(k, v)
			return backends.DumpItem{Slots: s}, err
		}
	case backends.DumpRecords:
		return "records", func(k string, v []byte, rev int64) (backends.DumpItem, error) {
			return backends.DumpItem{Record: &backends.Record{Key: k, Value: v, Version: rev}}, nil
		}
	case backends.DumpValues:
		pv := b.key("pv") + "/"
		return "pv", func(k string, v []byte, _ int64) (backends.DumpItem, error) {
			val, err := b.decodeValue(pv+k, v)
			return backends.DumpItem{Value: &val}, err
		}
	case backends.DumpBackfills:
		return "backfill", func(k string, v []byte, _ int64) (backends.DumpItem, error) {
			var m backfillVal
			err := json.Unmarshal(v, &m)
			return backends.DumpItem{Backfill: &backends.Backfill{Job: k, Since: time.UnixMicro(m.T).UTC()}}, err
		}
	}
	return "", nil
}

// dumpEvents streams the log in Seq order: the events not moved yet
// (evq/, few) merged into those moved (events/).
func (b *Backend) dumpEvents(ctx context.Context, fn func(backends.DumpItem) error) error {
	var pending []backends.Event
	evq := b.key("evq") + "/"
	err := b.dumpScan(ctx, "evq", func(k string, v []byte, rev int64) error {
		evs, err := decodePending([]byte(evq+k), v, rev)
		pending = append(pending, evs...)
		return err
	})
	if err != nil {
		return err
	}
	sortEvents(pending)
	flush := func(upTo int64) error {
		for len(pending) > 0 && pending[0].Seq <= upTo {
			e := pending[0]
			pending = pending[1:]
			if err := fn(backends.DumpItem{Event: &e}); err != nil {
				return err
			}
		}
		return nil
	}
	events := b.key("events") + "/"
	err = b.dumpScan(ctx, "events", func(k string, v []byte, _ int64) error {
		e, err := b.decodeEvent([]byte(events+k), v)
		if err != nil {
			return err
		}
		if err := flush(e.Seq - 1); err != nil {
			return err
		}
		if len(pending) > 0 && pending[0].Seq == e.Seq {
			pending = pending[1:] // moved while read
		}
		return fn(backends.DumpItem{Event: &e})
	})
	if err != nil {
		return err
	}
	return flush(math.MaxInt64)
}
