package etcd

import (
	"bytes"
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

var _ backends.OutputStatusReader = (*Backend)(nil)

// OutputStatuses reads the dataids and statuses of job's OUTPUT rows on a
// dataset between from and to (backends.OutputStatusReader): range reads of
// that span of the dataset's rows at one revision, the status taken from
// the front of each value without decoding the rest.
func (b *Backend) OutputStatuses(ctx context.Context, dataset, job, from, to string, limit int) ([]string, []backends.Status, error) {
	base := b.key("rows", dataset) + "/"
	start, end := base+backends.SortKey(from)+"/", base+backends.SortKey(to)+"0" // '0' follows '/'
	var ids []string
	var sts []backends.Status
	var rev int64
	for len(ids) < limit {
		resp, err := b.get(ctx, start, clientv3.WithRange(end), clientv3.WithLimit(int64(limit)), clientv3.WithRev(rev))
		if err != nil {
			return nil, nil, err
		}
		rev = resp.Header.Revision
		for _, kv := range resp.Kvs {
			k, ok := b.parseRowKey(string(kv.Key))
			if !ok || k.Role != backends.RoleOutput || k.Job != job || k.ReadFor != "" {
				continue
			}
			st, err := statusOfValue(k, kv.Value)
			if err != nil {
				return nil, nil, err
			}
			if ids, sts = append(ids, k.DataID), append(sts, st); len(ids) == limit {
				break
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	return ids, sts, nil
}

// statusPrefix starts every stored row: rowVal's first field, the status,
// is never omitted.
var statusPrefix = []byte(`{"s":"`)

// statusOfValue is the status of a stored row, read from the front of its
// value; a value of another shape is decoded whole.
func statusOfValue(k backends.RowKey, val []byte) (backends.Status, error) {
	if rest, ok := bytes.CutPrefix(val, statusPrefix); ok {
		if n := bytes.IndexByte(rest, '"'); n >= 0 && bytes.IndexByte(rest[:n], '\\') < 0 {
			return backends.Status(rest[:n]), nil
		}
	}
	r, err := decodeRow(k, val)
	return r.Status, err
}
