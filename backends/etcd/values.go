package etcd

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

// The values of dynamic sets (backends/dynamic.go): one key per value,
// pv/<dataset>/<dimension>/<sortkey of the value> ("" dimension for a
// one-dimensional dataset), holding the time it was added in Unix
// microseconds. Key order is shortlex order of the values, so a page of a
// set, the next value after one, and one value are each one range read,
// however many values the set holds. A transaction reads values like rows
// (tracked, guarded at commit), so an add or a remove and a claim of the
// same value are ordered.

var _ backends.DynamicTx = (*tx)(nil)

// valuePrefix is the prefix of the keys of a set, with its trailing slash.
func (b *Backend) valuePrefix(dataset, dimension string) string {
	return b.key("pv", dataset, dimension) + "/"
}

func (b *Backend) valueKey(dataset, dimension, value string) string {
	return b.valuePrefix(dataset, dimension) + backends.SortKey(value)
}

func encodeAdded(t time.Time) []byte { return []byte(strconv.FormatInt(micros(t), 10)) }

func decodeAdded(v []byte) (time.Time, error) {
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("etcd: partition value holds %q, not a time", v)
	}
	return fromMicros(n), nil
}

func (t *tx) GetPartitionValues(ctx context.Context, dataset, dimension string, ids []string) ([]*backends.PartitionValue, error) {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = t.b.valueKey(dataset, dimension, id)
	}
	vals, err := t.read(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make([]*backends.PartitionValue, len(ids))
	for i, v := range vals {
		if v == nil {
			continue
		}
		at, err := decodeAdded(v)
		if err != nil {
			return nil, err
		}
		out[i] = &backends.PartitionValue{Dataset: dataset, Dimension: dimension, Value: ids[i], AddedAt: at}
	}
	return out, nil
}

func (t *tx) PutPartitionValue(_ context.Context, v backends.PartitionValue) error {
	t.write(t.b.valueKey(v.Dataset, v.Dimension, v.Value), encodeAdded(v.AddedAt))
	return nil
}

func (t *tx) DeletePartitionValue(_ context.Context, dataset, dimension, value string) error {
	t.del(t.b.valueKey(dataset, dimension, value))
	return nil
}

func (b *Backend) ListPartitionValues(ctx context.Context, dataset, dimension, from, after, to string, limit int) ([]backends.PartitionValue, error) {
	if limit <= 0 {
		return nil, nil
	}
	p := b.valuePrefix(dataset, dimension)
	lo := p
	if from != "" {
		lo = p + backends.SortKey(from)
	}
	if after != "" && (from == "" || backends.CompareDataID(after, from) >= 0) {
		lo = p + backends.SortKey(after) + "\x00"
	}
	hi := clientv3.GetPrefixRangeEnd(p)
	if to != "" {
		hi = p + backends.SortKey(to) + "\x00"
	}
	kvs, err := b.rangeFirst(ctx, lo, hi, limit)
	if err != nil {
		return nil, mapErr(err, "list partition values")
	}
	out := make([]backends.PartitionValue, 0, len(kvs))
	for _, kv := range kvs {
		v, err := b.decodeValue(string(kv.Key), kv.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// rangeFirst reads the first limit keys of [from, to) at one revision. A
// range read with a limit visits every key up to the range's end to count
// them (a page of a million values took 60-80 ms), so it reads windows that
// share ever shorter prefixes with from, each at most about 256 times the
// one before: the window that completes the page holds a few hundred
// times the page, not the rest of the set.
func (b *Backend) rangeFirst(ctx context.Context, from, to string, limit int) ([]*mvccpb.KeyValue, error) {
	var out []*mvccpb.KeyValue
	var rev int64
	cur := from
	for n := len(from) - 1; ; n-- {
		end := to
		if n > 0 {
			if w := clientv3.GetPrefixRangeEnd(from[:n]); w < end {
				end = w
			}
		}
		if cur < end {
			opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(int64(limit - len(out)))}
			if rev != 0 {
				opts = append(opts, clientv3.WithRev(rev))
			}
			resp, err := b.get(ctx, cur, opts...)
			if err != nil {
				return nil, err
			}
			rev = resp.Header.Revision
			out = append(out, resp.Kvs...)
			if len(out) >= limit {
				return out, nil
			}
		}
		if end == to || n <= 0 {
			return out, nil
		}
		cur = max(cur, end)
	}
}

// decodeValue reads a full pv/ key and its value.
func (b *Backend) decodeValue(key string, val []byte) (backends.PartitionValue, error) {
	rest, ok := strings.CutPrefix(key, b.key("pv")+"/")
	parts := strings.SplitN(rest, "/", 3)
	if !ok || len(parts) != 3 {
		return backends.PartitionValue{}, fmt.Errorf("etcd: %q is not a partition value key", key)
	}
	id, err := backends.DataIDFromSortKey(parts[2])
	if err != nil {
		return backends.PartitionValue{}, fmt.Errorf("etcd: %q: %w", key, err)
	}
	at, err := decodeAdded(val)
	return backends.PartitionValue{Dataset: parts[0], Dimension: parts[1], Value: id, AddedAt: at}, err
}
