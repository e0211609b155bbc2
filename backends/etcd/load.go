package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

// Loading a dump (backends.Dumper): plain puts, as many per Txn as the
// cluster's --max-txn-ops allows; events go through transactions of the
// engine's kind (AppendEvent), so that the store numbers them as its own.

// putAll writes ops in Txns of at most MaxTxnOps operations; of two puts
// of one key (frontier candidates that merge), the last.
func (b *Backend) putAll(ctx context.Context, ops []clientv3.Op) error {
	last := map[string]int{}
	for i, op := range ops {
		last[string(op.KeyBytes())] = i
	}
	kept := ops[:0]
	for i, op := range ops {
		if last[string(op.KeyBytes())] == i {
			kept = append(kept, op)
		}
	}
	ops = kept
	n := max(b.cfg.MaxTxnOps, 1)
	for len(ops) > 0 {
		k := min(n, len(ops))
		if _, err := b.txn(ctx, nil, ops[:k], nil); err != nil {
			return mapErr(err, "load a dump")
		}
		ops = ops[k:]
	}
	return nil
}

func (b *Backend) Load(ctx context.Context, kind backends.DumpKind, items []backends.DumpItem) error {
	if err := b.markLoaded(ctx); err != nil {
		return err
	}
	if kind == backends.DumpChanges {
		for _, it := range items {
			if err := b.loadChange(ctx, *it.Change); err != nil {
				return err
			}
		}
		return nil
	}
	if kind == backends.DumpEvents {
		// A few hundred a transaction: its events are one value, which
		// --max-request-bytes bounds.
		for len(items) > 0 {
			n := min(len(items), 500)
			err := b.Update(ctx, func(tx backends.Tx) error {
				for _, it := range items[:n] {
					if err := tx.AppendEvent(ctx, *it.Event); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			items = items[n:]
		}
		return nil
	}
	var ops []clientv3.Op
	put := func(key string, v []byte) { ops = append(ops, clientv3.OpPut(key, string(v))) }
	if kind == backends.DumpDatasets || kind == backends.DumpJobs {
		ops = append(ops, b.bumpCatalog("loaded "+string(kind)))
	}
	for _, it := range items {
		switch kind {
		case backends.DumpDatasets:
			v, _ := json.Marshal(it.Dataset)
			put(b.key("datasets", it.Dataset.ID), v)
		case backends.DumpJobs:
			v, _ := json.Marshal(it.Job)
			put(b.key("jobs", it.Job.ID), v)
			put(b.producerKey(it.Job.Output), []byte(it.Job.ID))
		case backends.DumpCredentials:
			v, _ := json.Marshal(it.Credential)
			put(b.key("creds", it.Credential.Job, it.Credential.Dataset), v)
		case backends.DumpRows:
			r := *it.Row
			v := encodeRow(r)
			if r.Role == backends.RoleOutput && r.Status == backends.StatusRunning {
				put(b.runningKey(r.RowKey), v)
			}
			if r.Role == backends.RoleOutput {
				put(b.outKey(r.RowKey), nil)
			}
			put(b.rowKey(r.RowKey), v)
		case backends.DumpFences:
			more, err := b.fenceOps(ctx, *it.Fence)
			if err != nil {
				return err
			}
			ops = append(ops, more...)
		case backends.DumpCandidates:
			put(b.candKey(*it.Candidate), encodeCand(*it.Candidate))
		case backends.DumpLocks:
			more, err := b.lockOps(ctx, *it.Lock)
			if err != nil {
				return err
			}
			ops = append(ops, more...)
		case backends.DumpSlots:
			v, err := b.slots.Encode(*it.Slots)
			if err != nil {
				return err
			}
			put(b.slotsKey(it.Slots.Key), v)
		case backends.DumpRecords:
			put(b.recordKey(it.Record.Key), it.Record.Value)
		case backends.DumpValues:
			put(b.valueKey(it.Value.Dataset, it.Value.Dimension, it.Value.Value), encodeAdded(it.Value.AddedAt))
		case backends.DumpBackfills:
			// A marker older than staleBackfill: the sweep at the next
			// Open takes it over and queues the job's candidates.
			put(b.backfillKey(it.Backfill.Job), []byte(backfillMarker(it.Backfill.Since)))
		default:
			return fmt.Errorf("etcd: no dump kind %q", kind)
		}
	}
	return b.putAll(ctx, ops)
}

// forgetCounts drops the chunk counts (counts.go) at the end of a load
// (FinishLoad): rows are loaded without events, and events through
// transactions without rows, so a base the mover counted between two
// loads, with the changes it folded from loaded events after it, counts a
// chunk twice or not at all. The next mover counts the rows again at a
// revision after the load (every loaded event's evq/ entry lies before
// it), as after a deleteDataset.
func (b *Backend) forgetCounts(ctx context.Context) error {
	_, err := b.txn(ctx, nil, []clientv3.Op{clientv3.OpDelete(b.key("cnt")+"/", clientv3.WithPrefix()), clientv3.OpPut(b.key("cntgen"), "")}, nil)
	if err != nil {
		return mapErr(err, "drop the chunk counts after a load")
	}
	b.counts.Store(nil)
	return nil
}

// fenceOps writes a chunk's fencing counter; a global one (PostgreSQL's
// sequence) is laid on every chunk the loaded rows and events name, and
// kept as the floor of every other chunk (fencefloor/global).
func (b *Backend) fenceOps(ctx context.Context, f backends.Fence) ([]clientv3.Op, error) {
	if !f.Global {
		return []clientv3.Op{clientv3.OpPut(b.fenceKey(f.Dataset, f.DataID), strconv.FormatInt(f.Fence, 10))}, nil
	}
	chunks := map[[2]string]bool{}
	err := b.dumpScan(ctx, "rows", func(k string, _ []byte, _ int64) error {
		if rk, ok := parseCursor(k); ok {
			chunks[[2]string{rk.Dataset, rk.DataID}] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = b.dumpEvents(ctx, func(it backends.DumpItem) error {
		chunks[[2]string{it.Event.Dataset, it.Event.DataID}] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Chunks neither names (a deleted dataset's, their events pruned)
	// start above the floor too.
	floor := max(b.fenceFloor.Load(), f.Fence)
	b.fenceFloor.Store(floor)
	ops := make([]clientv3.Op, 0, len(chunks)+1)
	ops = append(ops, clientv3.OpPut(b.fenceFloorKey(), strconv.FormatInt(floor, 10)))
	for c := range chunks {
		ops = append(ops, clientv3.OpPut(b.fenceKey(c[0], c[1]), strconv.FormatInt(f.Fence, 10)))
	}
	return ops, nil
}

// lockOps stores a resource lock under a new id of this store's counter.
func (b *Backend) lockOps(ctx context.Context, l backends.ResourceLock) ([]clientv3.Op, error) {
	seqKey := b.key("rlockseq")
	resp, err := b.get(ctx, seqKey)
	if err != nil {
		return nil, err
	}
	var n int64
	if len(resp.Kvs) == 1 {
		if n, err = strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64); err != nil {
			return nil, fmt.Errorf("etcd: resource lock counter is corrupt: %w", err)
		}
	}
	n++
	l.ID = fmt.Sprintf("rl%010d", n)
	v, _ := json.Marshal(l)
	hash := resourceHash(l.Resource)
	// The counter is written at once: the next lock of the batch reads it.
	if _, err := b.txn(ctx, nil, []clientv3.Op{clientv3.OpPut(seqKey, strconv.FormatInt(n, 10))}, nil); err != nil {
		return nil, mapErr(err, "load a resource lock")
	}
	return []clientv3.Op{clientv3.OpPut(b.key("rlocks", hash, l.ID), string(v)), clientv3.OpPut(b.key("rlockids", l.ID), hash)}, nil
}

// FinishLoad drops the chunk counts, to be counted again from the loaded
// rows (forgetCounts); events were numbered as they were loaded.
func (b *Backend) FinishLoad(ctx context.Context) error { return b.forgetCounts(ctx) }

// keyPrefixes lists the first segment of every key under the backend's
// prefix (tests: what the store holds, against DumpCovers).
func (b *Backend) keyPrefixes(ctx context.Context) (map[string]int, error) {
	resp, err := b.get(ctx, b.p, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, kv := range resp.Kvs {
		seg, _, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), b.p), "/")
		out[seg]++
	}
	return out, nil
}
