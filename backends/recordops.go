package backends

import "context"

func (e *engine) Record(ctx context.Context, key string) (Record, error) {
	if err := ValidateRecordKey(key); err != nil {
		return Record{}, err
	}
	return e.b.GetRecord(ctx, key)
}

func (e *engine) SwapRecord(ctx context.Context, key string, value []byte, version int64) (Record, bool, error) {
	if err := ValidateRecordKey(key); err != nil {
		return Record{}, false, err
	}
	switch {
	case len(value) > MaxRecordValueBytes:
		return Record{}, false, InvalidArgument("a record value has at most %d bytes, got %d", MaxRecordValueBytes, len(value))
	case version < 0:
		return Record{}, false, InvalidArgument("record version must not be negative, got %d", version)
	}
	if value == nil {
		value = []byte{}
	}
	return e.b.SwapRecord(ctx, key, value, version)
}
