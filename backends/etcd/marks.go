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

// markHolds reads marks/holds-checked, and writes it when it is not there
// (the first open of a store by a version that refuses holds outside a
// definition). A store that takes no write (NOSPACE) still opens: the
// mark is then unknown, and every dataset taken as made before it.
func (b *Backend) markHolds(ctx context.Context) error {
	key := b.holdsKey()
	resp, err := b.get(ctx, key)
	if err != nil {
		return mapErr(err, "read since when holds are checked")
	}
	if len(resp.Kvs) == 0 {
		now := micros(time.Now())
		put, err := b.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
			[]clientv3.Op{clientv3.OpPut(key, strconv.FormatInt(now, 10))}, []clientv3.Op{clientv3.OpGet(key)})
		switch {
		case err != nil:
			b.holdsSince.Store(micros(unknownMark))
			return nil
		case put.Succeeded:
			b.holdsSince.Store(now)
			return nil
		}
		resp = (*clientv3.GetResponse)(put.Responses[0].GetResponseRange())
	}
	if len(resp.Kvs) != 1 {
		return errors.New("etcd: " + key + " vanished while it was read")
	}
	v, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
	if err != nil {
		return errors.New("etcd: " + key + " is corrupt")
	}
	b.holdsSince.Store(v)
	return nil
}

// unknownMark stands for a mark that could not be written: later than
// every dataset.
var unknownMark = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// HoldsCheckedSince is the time of marks/holds-checked (backends.HoldsMarker).
func (b *Backend) HoldsCheckedSince(context.Context) (time.Time, error) {
	return fromMicros(b.holdsSince.Load()), nil
}

// markLoaded moves the mark to the time of a load (store copy): the rows
// copied are from a store whose holds may not have been checked, and the
// datasets keep their creation times. Once per Backend.
func (b *Backend) markLoaded(ctx context.Context) error {
	if b.loadMarked.Swap(true) {
		return nil
	}
	now := micros(time.Now())
	if _, err := b.cli.Put(ctx, b.holdsKey(), strconv.FormatInt(now, 10)); err != nil {
		return mapErr(err, "mark since when holds are checked")
	}
	b.holdsSince.Store(now)
	return nil
}
