package memory

import (
	"bytes"
	"context"

	"github.com/chunklock/chunklock/backends"
)

// recordTable holds the records (backends/records.go), guarded by the
// backend's mutex; its zero value is empty.
type recordTable struct {
	m map[string]backends.Record
}

func (b *Backend) GetRecord(ctx context.Context, key string) (backends.Record, error) {
	if err := ctx.Err(); err != nil {
		return backends.Record{}, backends.Unavailable(err, "request cancelled")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return backends.Record{}, backends.Unavailable(nil, "store is closed")
	}
	return b.records.get(key), nil
}

func (b *Backend) SwapRecord(ctx context.Context, key string, value []byte, version int64) (backends.Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return backends.Record{}, false, backends.Unavailable(err, "request cancelled")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return backends.Record{}, false, backends.Unavailable(nil, "store is closed")
	}
	cur := b.records.get(key)
	if cur.Version != version {
		return cur, false, nil
	}
	if b.records.m == nil {
		b.records.m = map[string]backends.Record{}
	}
	r := backends.Record{Key: key, Value: bytes.Clone(value), Version: version + 1}
	b.records.m[key] = r
	return r, true, nil
}

// get returns a copy of the record of key (Version 0 when never written).
func (t *recordTable) get(key string) backends.Record {
	r, ok := t.m[key]
	if !ok {
		return backends.Record{Key: key}
	}
	r.Value = bytes.Clone(r.Value)
	return r
}
