package etcd

import (
	"bytes"
	"context"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

var (
	_ backends.OutputStatusReader  = (*Backend)(nil)
	_ backends.OutputStatusBatcher = (*Backend)(nil)
)

// outputSpan is the key range of a span of a dataset's rows.
func (b *Backend) outputSpan(dataset, from, to string) (start, end string) {
	base := b.key("rows", dataset) + "/"
	return base + backends.SortKey(from) + "/", base + backends.SortKey(to) + "0" // '0' follows '/'
}

// OutputStatusesBatch reads several spans in transactions of range reads,
// MaxTxnOps at a time, each up to its limit (backends.OutputStatusBatcher).
func (b *Backend) OutputStatusesBatch(ctx context.Context, spans []backends.StatusSpan) ([][]string, [][]backends.Status, error) {
	ids, sts := make([][]string, len(spans)), make([][]backends.Status, len(spans))
	for lo := 0; lo < len(spans); lo += b.cfg.MaxTxnOps {
		part := spans[lo:min(len(spans), lo+b.cfg.MaxTxnOps)]
		ops := make([]clientv3.Op, len(part))
		for i, s := range part {
			start, end := b.outputSpan(s.Dataset, s.From, s.To)
			ops[i] = clientv3.OpGet(start, clientv3.WithRange(end), clientv3.WithLimit(int64(s.Limit)))
		}
		resp, err := b.txn(ctx, nil, ops, nil)
		if err != nil {
			return nil, nil, mapErr(err, "read the statuses of spans of chunks")
		}
		for i, r := range resp.Responses {
			if rr := r.GetResponseRange(); rr.More && outputRows(rr.Kvs, part[i].Job, b) < part[i].Limit {
				// The limit stopped at other rows (consumers' INPUT rows):
				// read on until limit OUTPUT rows of the job, or the end.
				s := part[i]
				if ids[lo+i], sts[lo+i], err = b.OutputStatuses(ctx, s.Dataset, s.Job, s.From, s.To, s.Limit); err != nil {
					return nil, nil, err
				}
				continue
			}
			for _, kv := range r.GetResponseRange().Kvs {
				k, ok := b.parseRowKey(string(kv.Key))
				if !ok || k.Role != backends.RoleOutput || k.Job != part[i].Job || k.ReadFor != "" {
					continue
				}
				st, err := statusOfValue(k, kv.Value)
				if err != nil {
					return nil, nil, err
				}
				ids[lo+i], sts[lo+i] = append(ids[lo+i], k.DataID), append(sts[lo+i], st)
			}
		}
	}
	return ids, sts, nil
}

// outputRows counts the OUTPUT rows of job among kvs.
func outputRows(kvs []*mvccpb.KeyValue, job string, b *Backend) int {
	n := 0
	for _, kv := range kvs {
		if k, ok := b.parseRowKey(string(kv.Key)); ok && k.Role == backends.RoleOutput && k.Job == job && k.ReadFor == "" {
			n++
		}
	}
	return n
}

// OutputStatuses reads the dataids and statuses of job's OUTPUT rows on a
// dataset between from and to (backends.OutputStatusReader): range reads of
// that span of the dataset's rows at one revision, the status taken from
// the front of each value without decoding the rest.
func (b *Backend) OutputStatuses(ctx context.Context, dataset, job, from, to string, limit int) ([]string, []backends.Status, error) {
	start, end := b.outputSpan(dataset, from, to)
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
