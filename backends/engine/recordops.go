package engine

import (
	"context"

	"github.com/chunklock/chunklock/backends"
)

func (e *engine) Record(ctx context.Context, key string) (backends.Record, error) {
	if err := backends.ValidateRecordKey(key); err != nil {
		return backends.Record{}, err
	}
	return e.b.GetRecord(ctx, key)
}

func (e *engine) SwapRecord(ctx context.Context, key string, value []byte, version int64) (backends.Record, bool, error) {
	if err := backends.ValidateRecordKey(key); err != nil {
		return backends.Record{}, false, err
	}
	switch {
	case len(value) > backends.MaxRecordValueBytes:
		return backends.Record{}, false, backends.InvalidArgument("a record value has at most %d bytes, got %d", backends.MaxRecordValueBytes, len(value))
	case version < 0:
		return backends.Record{}, false, backends.InvalidArgument("record version must not be negative, got %d", version)
	}
	if value == nil {
		value = []byte{}
	}
	return e.b.SwapRecord(ctx, key, value, version)
}
