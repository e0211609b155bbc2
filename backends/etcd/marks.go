package etcd

import (
	"context"
	"errors"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

var _ backends.HoldsMarker = (*Backend)(nil)

func (b *Backend) holdsKey() string { return b.key("marks", "holds-checked") }

// markHolds writes marks/holds-checked unless it is there (the first open
// of a store by a version that refuses holds outside a definition), and
// reads it.
func (b *Backend) markHolds(ctx context.Context) error {
	key, now := b.holdsKey(), micros(time.Now())
	resp, err := b.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
		[]clientv3.Op{clientv3.OpPut(key, strconv.FormatInt(now, 10))},
		[]clientv3.Op{clientv3.OpGet(key)})
	if err != nil {
		return mapErr(err, "mark since when holds are checked")
	}
	if resp.Succeeded {
		b.holdsSince = fromMicros(now)
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) != 1 {
		return errors.New("etcd: " + key + " vanished while it was read")
	}
	v, err := strconv.ParseInt(string(kvs[0].Value), 10, 64)
	if err != nil {
		return errors.New("etcd: " + key + " is corrupt")
	}
	b.holdsSince = fromMicros(v)
	return nil
}

// HoldsCheckedSince is the time of marks/holds-checked (backends.HoldsMarker).
func (b *Backend) HoldsCheckedSince(context.Context) (time.Time, error) {
	return b.holdsSince, nil
}
