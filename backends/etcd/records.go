package etcd

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

// Records (backends/records.go) are values under records/<key>; a record's
// version is the key's mod revision, so a swap is one Txn comparing it.

func (b *Backend) recordKey(key string) string { return b.key("records", key) }

func (b *Backend) GetRecord(ctx context.Context, key string) (backends.Record, error) {
	resp, err := b.get(ctx, b.recordKey(key))
	if err != nil {
		return backends.Record{}, err
	}
	r := backends.Record{Key: key}
	if len(resp.Kvs) > 0 {
		r.Value, r.Version = resp.Kvs[0].Value, resp.Kvs[0].ModRevision
	}
	return r, nil
}

func (b *Backend) SwapRecord(ctx context.Context, key string, value []byte, version int64) (backends.Record, bool, error) {
	k := b.recordKey(key)
	resp, err := b.txn(ctx,
		[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", version)},
		[]clientv3.Op{clientv3.OpPut(k, string(value))},
		[]clientv3.Op{clientv3.OpGet(k)})
	if err != nil {
		return backends.Record{}, false, mapErr(err, "write record "+key)
	}
	if resp.Succeeded {
		return backends.Record{Key: key, Value: value, Version: resp.Header.Revision}, true, nil
	}
	r := backends.Record{Key: key}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		r.Value, r.Version = kvs[0].Value, kvs[0].ModRevision
	}
	return r, false, nil
}
