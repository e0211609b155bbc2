package etcd

import (
	"bytes"
	"context"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

// The catalog lifecycle (SPEC §11): deleting datasets.

// DeleteDataset removes the dataset's definition, its rows/, running/ and
// out/ ranges and its credentials in one Txn, guarded by the catalog version
// and by the rows/ range as it was read: a row written in between (a
// publish committed after the read) fails the guard, and the engine runs
// the deletion again. fences/ and the event log stay.
func (b *Backend) DeleteDataset(ctx context.Context, id string, withChunks bool, version int64) (int, int64, error) {
	rows := b.key("rows", id) + "/"
	resp, err := b.txn(ctx, nil, []clientv3.Op{
		clientv3.OpGet(rows, clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		clientv3.OpGet(b.key("creds")+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly()),
	}, nil)
	if err != nil {
		return 0, 0, mapErr(err, "read dataset "+id)
	}
	chunks := 0
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		if bytes.Contains(kv.Key[len(rows):], []byte("/"+string(backends.RoleOutput)+"/")) {
			chunks++
		}
	}
	if chunks > 0 && !withChunks {
		return chunks, 0, nil
	}
	ops := []clientv3.Op{
		clientv3.OpDelete(b.key("datasets", id)),
		clientv3.OpDelete(b.producerKey(id)),
		clientv3.OpDelete(rows, clientv3.WithPrefix()),
		clientv3.OpDelete(b.key("running", id)+"/", clientv3.WithPrefix()),
		clientv3.OpDelete(b.key("out", id)+"/", clientv3.WithPrefix()),
		clientv3.OpDelete(b.key("pv", id)+"/", clientv3.WithPrefix()),
		b.bumpCatalog("datasets/" + id + " deleted"),
	}
	ops = append(ops, b.changeOps(ctx, nil)...)
	if chunks > 0 {
		// The chunk counts (counts.go) hold the deleted rows, in the base
		// and in the folded changes: drop them, and the next mover counts
		// the rows again at a revision after this Txn (evq/ entries of the
		// deleted rows lie before it and count no more). A dataset's
		// deletion is rare; the recount reads every OUTPUT row once.
		ops = append(ops, clientv3.OpDelete(b.key("cnt")+"/", clientv3.WithPrefix()),
			clientv3.OpPut(b.key("cntgen"), "")) // a mover counting the rows before this Txn writes no base (ensureCounts)
	}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		if strings.HasSuffix(string(kv.Key), "/"+id) {
			ops = append(ops, clientv3.OpDelete(string(kv.Key)))
		}
	}
	cmps := []clientv3.Cmp{
		b.versionIs(version),
		clientv3.Compare(clientv3.ModRevision(rows), "<", resp.Header.Revision+1).WithPrefix(),
	}
	tr, err := b.txn(ctx, cmps, ops, nil)
	if err != nil {
		return 0, 0, mapErr(err, "delete dataset "+id)
	}
	if !tr.Succeeded {
		return 0, 0, backends.ErrCatalogChanged
	}
	return chunks, tr.Header.Revision, nil
}

// DeletePool rewrites the pool's slot record without its definition,
// keeping the holders it lists (their claims give their slots back to it
// as they end), in one Txn guarded by the catalog version and the record
// as read.
func (b *Backend) DeletePool(ctx context.Context, id string, version int64) (int64, error) {
	key := b.slotsKey(backends.PoolSlotsKey(id))
	resp, err := b.get(ctx, key)
	if err != nil {
		return 0, err
	}
	cmps := []clientv3.Cmp{b.versionIs(version)}
	ops := append([]clientv3.Op{b.bumpCatalog("pools/" + id + " deleted")}, b.changeOps(ctx, nil)...)
	if len(resp.Kvs) == 1 {
		kv := resp.Kvs[0]
		s, err := b.decodeSlots(backends.PoolSlotsKey(id), kv.Value)
		if err != nil {
			return 0, err
		}
		s.Pool = backends.Pool{}
		val, err := b.slots.Encode(*s)
		if err != nil {
			return 0, err
		}
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision))
		ops = append(ops, clientv3.OpPut(key, string(val)))
	}
	tr, err := b.txn(ctx, cmps, ops, nil)
	if err != nil {
		return 0, mapErr(err, "delete pool "+id)
	}
	if !tr.Succeeded {
		return 0, backends.ErrCatalogChanged
	}
	return tr.Header.Revision, nil
}
