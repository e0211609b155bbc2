package etcd

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

// The index of OUTPUT rows (backends.OutputCounter):
//
//	out/<dataset>/<job>/<sk>   one empty key per OUTPUT row of job on
//	                           dataset (job empty for a source row)
//	marks/outputs-indexed      written once every OUTPUT row of the store
//	                           has its key
//
// rows/ keys hold a dataset's OUTPUT rows beside its consumers' INPUT rows,
// so a count-only read of rows/ cannot count the producer's rows; a
// count-only read of out/ can, from etcd's in-memory index alone, without
// reading a row. A transaction writes the key when it puts an OUTPUT row
// that was not there, and deletes it with the row (tx.PutRow,
// tx.DeleteRow), so a key is never there without its row. A store written
// before the index was kept is indexed in the background at open
// (indexOutputs); until then CountOutputs answers ok false and the engine
// reads rows. A replica of an earlier version, which keeps no index,
// should not write to a store a later one opened: a claim it releases
// leaves its key behind. The engine then finds the index counting more
// rows than the kept counts, and reads the rows instead (countsAgree).

var _ backends.OutputCounter = (*Backend)(nil)

func (b *Backend) outKey(k backends.RowKey) string {
	return b.key("out", k.Dataset, k.Job, backends.SortKey(k.DataID))
}

func (b *Backend) outIndexedKey() string { return b.key("marks", "outputs-indexed") }

// CountOutputs counts job's OUTPUT rows on dataset with dataids in
// [from, to] by a count-only read of out/ (backends.OutputCounter).
func (b *Backend) CountOutputs(ctx context.Context, dataset, job, from, to string) (int64, bool, error) {
	if !b.outIndexed.Load() {
		return 0, false, nil
	}
	base := b.key("out", dataset, job) + "/"
	resp, err := b.get(ctx, base+backends.SortKey(from), clientv3.WithRange(base+backends.SortKey(to)+"\x00"), clientv3.WithCountOnly())
	if err != nil {
		return 0, false, err
	}
	return resp.Count, true, nil
}

// markOutputsIndexed reads marks/outputs-indexed at open. Without it, a
// store without rows is marked at once; one with rows is indexed in the
// background.
func (b *Backend) markOutputsIndexed(ctx context.Context) error {
	resp, err := b.get(ctx, b.outIndexedKey(), clientv3.WithCountOnly())
	if err != nil {
		return mapErr(err, "read whether the OUTPUT rows are indexed")
	}
	if resp.Count > 0 {
		b.outIndexed.Store(true)
		return nil
	}
	rows := b.key("rows") + "/"
	resp, err = b.get(ctx, rows, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return mapErr(err, "count the rows")
	}
	if resp.Count == 0 {
		if _, err := b.cli.Put(ctx, b.outIndexedKey(), ""); err == nil {
			b.outIndexed.Store(true)
		}
		// (A store that takes no write, NOSPACE, opens unindexed.)
		return nil
	}
	b.goBackground(func() {
		// Until it succeeds (counts read rows meanwhile), or Close.
		for wait := time.Second; b.indexOutputs(b.bg) != nil; wait = min(2*wait, time.Minute) {
			select {
			case <-b.bg.Done():
				return
			case <-time.After(wait):
			}
		}
	})
	return nil
}

// indexOutputs writes the out/ key of every OUTPUT row there is, in
// transactions guarded by each row's ModRevision as read (a row changed
// since is read again, one deleted is skipped), then the mark.
func (b *Backend) indexOutputs(ctx context.Context) error {
	type seen struct {
		row, out string
		rev      int64
	}
	var batch []seen
	n := max(1, min(256, b.cfg.MaxTxnOps))
	one := func(s seen) error {
		for {
			resp, err := b.get(ctx, s.row)
			if err != nil || len(resp.Kvs) == 0 {
				return err
			}
			put, err := b.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(s.row), "=", resp.Kvs[0].ModRevision)},
				[]clientv3.Op{clientv3.OpPut(s.out, "")}, nil)
			if err != nil || put.Succeeded {
				return err
			}
		}
	}
	flush := func() error {
		cmps := make([]clientv3.Cmp, len(batch))
		ops := make([]clientv3.Op, len(batch))
		for i, s := range batch {
			cmps[i] = clientv3.Compare(clientv3.ModRevision(s.row), "=", s.rev)
			ops[i] = clientv3.OpPut(s.out, "")
		}
		resp, err := b.txn(ctx, cmps, ops, nil)
		if err == nil && !resp.Succeeded {
			for _, s := range batch {
				if err = one(s); err != nil {
					break
				}
			}
		}
		batch = batch[:0]
		return err
	}
	err := b.dumpScan(ctx, "rows", func(key string, _ []byte, modRev int64) error {
		k, ok := parseCursor(key)
		if !ok || k.Role != backends.RoleOutput || k.ReadFor != "" {
			return nil
		}
		if batch = append(batch, seen{b.rowKey(k), b.outKey(k), modRev}); len(batch) >= n {
			return flush()
		}
		return nil
	})
	if err == nil && len(batch) > 0 {
		err = flush()
	}
	if err != nil {
		return err
	}
	if _, err := b.cli.Put(ctx, b.outIndexedKey(), ""); err != nil {
		return mapErr(err, "mark the OUTPUT rows indexed")
	}
	b.outIndexed.Store(true)
	return nil
}
