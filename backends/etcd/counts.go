package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

// Chunk counts (backends.StatusCounter), kept from the events every
// transaction commits with its rows (evq/, see doc.go):
//
//	cnt/at           the base: every OUTPUT row counted at revision R, by
//	                 dataset, job and status, written once (the first
//	                 mover to find it missing counts the rows)
//	cnt/c/<dataset>  the net changes of the transactions after R whose
//	                 events the mover has sequenced, by job and status
//	cntgen           written by every deleteDataset that drops cnt/ (its
//	                 rows go without events): a base counted at a revision
//	                 before it is never written
//
// The mover folds a transaction's changes into cnt/c/ in the etcd Txn
// that deletes its evq/ entry, guarded by that entry and the counts it
// read, so a change is folded once. A count reads the base, the dataset's
// folded changes and the evq/ entries still pending after R at one
// revision: exact at that revision, however long the history.

// jobCounts is a dataset's OUTPUT rows by job and status.
type jobCounts map[string]map[backends.Status]int

type countBase struct {
	Rev    int64                `json:"r"`
	Counts map[string]jobCounts `json:"c"`
}

var _ backends.StatusCounter = (*Backend)(nil)

var errFoldConflict = errors.New("etcd: another process folded the same chunk counts; retried on the next round")

func (c jobCounts) add(job string, s backends.Status, n int) {
	if s == backends.StatusNone || n == 0 {
		return
	}
	m := c[job]
	if m == nil {
		m = map[backends.Status]int{}
		c[job] = m
	}
	if m[s] += n; m[s] == 0 {
		delete(m, s)
	}
}

// addEvents adds the changes to OUTPUT rows that evs record, by dataset.
func addEvents(into map[string]jobCounts, evs []backends.Event) {
	for _, e := range evs {
		if e.Role != backends.RoleOutput || e.From == e.To {
			continue
		}
		c := into[e.Dataset]
		if c == nil {
			c = jobCounts{}
			into[e.Dataset] = c
		}
		c.add(e.Job, e.From, -1)
		c.add(e.Job, e.To, 1)
	}
}

func (b *Backend) countsKey(dataset string) string { return b.key("cnt", "c", dataset) }

// CountStatuses counts job's OUTPUT rows on dataset by status.
func (b *Backend) CountStatuses(ctx context.Context, dataset, job string) (map[backends.Status]int, error) {
	evq := b.key("evq") + "/"
	resp, err := b.txn(ctx, nil, []clientv3.Op{
		clientv3.OpGet(b.key("cnt", "at")),
		clientv3.OpGet(b.countsKey(dataset)),
		clientv3.OpGet(evq, clientv3.WithPrefix()),
	}, nil)
	if err != nil {
		return nil, mapErr(err, "read chunk counts")
	}
	rev := resp.Header.Revision
	baseKvs := resp.Responses[0].GetResponseRange().Kvs
	if len(baseKvs) == 0 {
		return b.scanCounts(ctx, dataset, job, rev) // not counted yet: count the rows
	}
	var base countBase
	if err := json.Unmarshal(baseKvs[0].Value, &base); err != nil {
		return nil, fmt.Errorf("etcd: chunk counts %s are corrupt: %w", baseKvs[0].Key, err)
	}
	out := jobCounts{}
	for s, n := range base.Counts[dataset][job] {
		out.add(job, s, n)
	}
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
		var folded jobCounts
		if err := json.Unmarshal(kvs[0].Value, &folded); err != nil {
			return nil, fmt.Errorf("etcd: chunk counts %s are corrupt: %w", kvs[0].Key, err)
		}
		for s, n := range folded[job] {
			out.add(job, s, n)
		}
	}
	pending := map[string]jobCounts{}
	for _, kv := range resp.Responses[2].GetResponseRange().Kvs {
		if kv.ModRevision <= base.Rev {
			continue // in the base already
		}
		evs, err := decodePending(kv.Key, kv.Value, kv.ModRevision)
		if err != nil {
			return nil, err
		}
		addEvents(pending, evs)
	}
	for s, n := range pending[dataset][job] {
		out.add(job, s, n)
	}
	if out[job] == nil {
		return map[backends.Status]int{}, nil
	}
	return out[job], nil
}

// scanCounts counts job's OUTPUT rows on dataset at rev by reading them.
func (b *Backend) scanCounts(ctx context.Context, dataset, job string, rev int64) (map[backends.Status]int, error) {
	all, err := b.countRows(ctx, b.key("rows", dataset)+"/", rev)
	if err != nil {
		return nil, err
	}
	if m := all[dataset][job]; m != nil {
		return m, nil
	}
	return map[backends.Status]int{}, nil
}

// countRows counts the OUTPUT rows under prefix at rev.
func (b *Backend) countRows(ctx context.Context, prefix string, rev int64) (map[string]jobCounts, error) {
	rows := b.key("rows") + "/"
	out := map[string]jobCounts{}
	err := b.scan(ctx, prefix, clientv3.GetPrefixRangeEnd(prefix), rev, func(key, val []byte, _ int64) (bool, error) {
		k, ok := parseCursor(strings.TrimPrefix(string(key), rows))
		if !ok || k.Role != backends.RoleOutput {
			return true, nil
		}
		r, err := decodeRow(k, val)
		if err != nil {
			return false, err
		}
		c := out[k.Dataset]
		if c == nil {
			c = jobCounts{}
			out[k.Dataset] = c
		}
		c.add(k.Job, r.Status, 1)
		return true, nil
	})
	return out, err
}

// ensureCounts makes sure the base of the counts exists: when it is
// missing (a new store, or one made before counts), it counts every OUTPUT
// row at one revision and writes the base, unless another process did
// first. It returns the base's revision.
func (b *Backend) ensureCounts(ctx context.Context) (int64, error) {
	if rev := b.countsRev.Load(); rev != 0 {
		return rev, nil
	}
	at := b.key("cnt", "at")
	resp, err := b.get(ctx, at)
	if err != nil {
		return 0, err
	}
	if len(resp.Kvs) == 0 {
		if err := b.writeBase(ctx, resp.Header.Revision); err != nil {
			return 0, err
		}
		if resp, err = b.get(ctx, at); err != nil {
			return 0, err
		}
		if len(resp.Kvs) == 0 {
			return 0, errFoldConflict // a deletion came between: count again on the next round
		}
	}
	var base countBase
	if len(resp.Kvs) != 1 || json.Unmarshal(resp.Kvs[0].Value, &base) != nil || base.Rev == 0 {
		return 0, errors.New("etcd: the chunk counts base (cnt/at) is missing or corrupt")
	}
	b.countsAt.Store(resp.Kvs[0].ModRevision)
	b.countsRev.Store(base.Rev)
	return base.Rev, nil
}

// writeBase counts every OUTPUT row at rev and writes the base of the
// counts, unless another process wrote one first or a dataset was deleted
// after rev (cntgen moved): its rows went without events, and a base
// counted before would hold them for ever.
func (b *Backend) writeBase(ctx context.Context, rev int64) error {
	base := countBase{Rev: rev}
	var err error
	if base.Counts, err = b.countRows(ctx, b.key("rows")+"/", rev); err != nil {
		return err
	}
	v, _ := json.Marshal(base)
	at := b.key("cnt", "at")
	_, err = b.txn(ctx, []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(at), "=", 0),
		clientv3.Compare(clientv3.ModRevision(b.key("cntgen")), "<", rev+1),
	}, []clientv3.Op{clientv3.OpPut(at, string(v))}, nil)
	return mapErr(err, "write the chunk counts")
}

// foldAndDrop deletes the evq/ entries kvs, whose events are sequenced,
// and adds the count changes of each (changes[i]) to cnt/c/, a group of
// entries per etcd Txn, each guarded by its entries and the counts it read.
func (b *Backend) foldAndDrop(ctx context.Context, kvs []*mvccpb.KeyValue, changes []map[string]jobCounts) error {
	for len(kvs) > 0 {
		group := map[string]jobCounts{}
		n := 0
		for ; n < len(kvs); n++ {
			touched := len(group)
			for d := range changes[n] {
				if group[d] == nil {
					touched++
				}
			}
			if n > 0 && n+1+touched > b.cfg.MaxTxnOps {
				break
			}
			for d, c := range changes[n] {
				if group[d] == nil {
					group[d] = jobCounts{}
				}
				for job, m := range c {
					for s, k := range m {
						group[d].add(job, s, k)
					}
				}
			}
		}
		if err := b.fold(ctx, kvs[:n], group); err != nil {
			return err
		}
		kvs, changes = kvs[n:], changes[n:]
	}
	return nil
}

// fold commits one group of foldAndDrop.
func (b *Backend) fold(ctx context.Context, kvs []*mvccpb.KeyValue, changes map[string]jobCounts) error {
	datasets := make([]string, 0, len(changes))
	for d := range changes {
		datasets = append(datasets, d)
	}
	slices.Sort(datasets)
	// The base this process knows must still be the one: counts dropped
	// and counted again by another process since would count twice what
	// the new base holds.
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(b.key("cnt", "at")), "=", b.countsAt.Load())}
	var ops []clientv3.Op
	for _, kv := range kvs {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision))
		ops = append(ops, clientv3.OpDelete(string(kv.Key)))
	}
	if len(datasets) > 0 {
		gets := make([]clientv3.Op, len(datasets))
		for i, d := range datasets {
			gets[i] = clientv3.OpGet(b.countsKey(d))
		}
		resp, err := b.txn(ctx, nil, gets, nil)
		if err != nil {
			return mapErr(err, "read chunk counts")
		}
		for i, d := range datasets {
			key, cur := b.countsKey(d), jobCounts{}
			if kvs := resp.Responses[i].GetResponseRange().Kvs; len(kvs) == 1 {
				if err := json.Unmarshal(kvs[0].Value, &cur); err != nil {
					return fmt.Errorf("etcd: chunk counts %s are corrupt: %w", key, err)
				}
				cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", kvs[0].ModRevision))
			} else {
				cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(key), "=", 0))
			}
			for job, m := range changes[d] {
				for s, n := range m {
					cur.add(job, s, n)
				}
			}
			for job, m := range cur {
				if len(m) == 0 {
					delete(cur, job)
				}
			}
			v, _ := json.Marshal(cur)
			ops = append(ops, clientv3.OpPut(key, string(v)))
		}
	}
	resp, err := b.txn(ctx, cmps, ops, nil)
	if err != nil {
		return mapErr(err, "fold chunk counts")
	}
	if !resp.Succeeded {
		b.countsRev.Store(0) // read the base again on the next round
		return errFoldConflict
	}
	return nil
}
