package etcd

import (
	"context"
	"errors"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

// Slot records (backends/slots.go) are JSON values under slots/<key>; a
// claim's transaction reads its job's records, which the commit's guard
// then compares: two claims counting the same record cannot both commit.

func (b *Backend) slotsKey(key string) string { return b.key("slots", key) }

func (b *Backend) decodeSlots(key string, val []byte) (*backends.Slots, error) {
	s, err := b.slots.Decode(key, val)
	if err != nil {
		return nil, errors.New("etcd: " + err.Error())
	}
	return s, nil
}

// GetSlots reads records at the snapshot: tracked for the commit's guard
// with forUpdate, untracked without (a record written by the other side,
// claims or endings, then never makes this transaction run again).
func (t *tx) GetSlots(ctx context.Context, keys []string, forUpdate bool) ([]*backends.Slots, error) {
	ks := make([]string, len(keys))
	for i, k := range keys {
		ks[i] = t.b.slotsKey(k)
	}
	var vals [][]byte
	var err error
	if forUpdate {
		// The engine reads each record's partner (a slot record's ended
		// record, or the other way round) next, untracked: fetch it now.
		partners := make([]string, len(keys))
		for i, k := range keys {
			partners[i] = t.b.slotsKey(partnerOf(k))
		}
		vals, err = t.read(ctx, ks, partners...)
	} else {
		vals, err = t.peek(ctx, ks)
	}
	if err != nil {
		return nil, err
	}
	out := make([]*backends.Slots, len(keys))
	for i, v := range vals {
		if v == nil {
			continue
		}
		if out[i], err = t.b.decodeSlots(keys[i], v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (t *tx) PutSlots(_ context.Context, s backends.Slots) error {
	val, err := t.b.slots.Encode(s)
	if err != nil {
		return err
	}
	t.write(t.b.slotsKey(s.Key), val)
	return nil
}

// CheckHolders reads the rows as GetRows does: the commit's guard makes
// every read consistent.
func (t *tx) CheckHolders(ctx context.Context, keys []backends.RowKey) ([]*backends.StatusRow, []bool, error) {
	rows, err := t.GetRows(ctx, keys)
	known := make([]bool, len(keys))
	for i := range known {
		known[i] = true
	}
	return rows, known, err
}

// RunningOutputs scans the live-claim index of output at the snapshot,
// with this transaction's own writes. The range is not guarded: every
// claim that could add to it commits under the catalog version and the
// slot records this transaction read, which are.
func (t *tx) RunningOutputs(ctx context.Context, job, output string) ([]backends.StatusRow, error) {
	base := t.b.key("running", output) + "/"
	var out []backends.StatusRow
	add := func(key string, val []byte) error {
		k, ok := t.b.parseRunningKey(key)
		if !ok || k.Job != job {
			return nil
		}
		r, err := decodeRow(k, val)
		if err == nil && r.Status == backends.StatusRunning {
			out = append(out, r)
		}
		return err
	}
	err := t.b.scan(ctx, base, clientv3.GetPrefixRangeEnd(base), t.rev, func(key, val []byte, _ int64) (bool, error) {
		if _, written := t.writes[string(key)]; written {
			return true, nil
		}
		return true, add(string(key), val)
	})
	if err != nil {
		return nil, mapErr(err, "read live claims")
	}
	for key, val := range t.writes {
		if val != nil && strings.HasPrefix(key, base) {
			if err := add(key, *val); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// ListPools reads every pool's slot record.
func (b *Backend) ListPools(ctx context.Context) ([]backends.Pool, error) {
	base := b.slotsKey("pool/")
	var out []backends.Pool
	err := b.scan(ctx, base, clientv3.GetPrefixRangeEnd(base), 0, func(key, val []byte, _ int64) (bool, error) {
		s, err := b.decodeSlots(strings.TrimPrefix(string(key), b.key("slots")+"/"), val)
		if err == nil && s.Pool.Slots > 0 {
			out = append(out, s.Pool)
		}
		return err == nil, err
	})
	if err != nil {
		return nil, mapErr(err, "list pools")
	}
	return out, nil
}

// partnerOf is the record read with key: "ended/<key>" for a slot record
// and the slot record for an ended one.
func partnerOf(key string) string {
	if rest, ok := strings.CutPrefix(key, "ended/"); ok {
		return rest
	}
	return "ended/" + key
}

// peek reads keys at the snapshot without tracking them; a buffered write
// of this transaction wins, then a value fetched ahead. A first read fixes
// the snapshot. Keys go a Txn of at most 64 (and the cluster's limit) at a
// time.
func (t *tx) peek(ctx context.Context, keys []string) ([][]byte, error) {
	out := make([][]byte, len(keys))
	var idx []int
	for i, k := range keys {
		if w, ok := t.writes[k]; ok {
			if w != nil {
				out[i] = *w
			}
			continue
		}
		if p, ok := t.prefetched[k]; ok {
			out[i] = p.val
			continue
		}
		idx = append(idx, i)
	}
	batch := min(64, t.b.cfg.MaxTxnOps)
	for len(idx) > 0 {
		n := min(batch, len(idx))
		ops := make([]clientv3.Op, n)
		for j, i := range idx[:n] {
			ops[j] = clientv3.OpGet(keys[i], clientv3.WithRev(t.rev))
		}
		resp, err := t.b.txn(ctx, nil, ops, nil)
		if err != nil {
			return nil, mapErr(err, "read ahead")
		}
		if t.rev == 0 {
			t.rev = resp.Header.Revision
		}
		for j, i := range idx[:n] {
			if kvs := resp.Responses[j].GetResponseRange().Kvs; len(kvs) > 0 {
				out[i] = kvs[0].Value
			}
		}
		idx = idx[n:]
	}
	return out, nil
}

// PrefetchSlots has the next read fetch the records ahead, untracked
// until asked for (the guard then covers those read with forUpdate).
func (t *tx) PrefetchSlots(locked, peeked []string) {
	for _, k := range append(slices.Clone(locked), peeked...) {
		t.aheadNext = append(t.aheadNext, t.b.slotsKey(k))
	}
}
