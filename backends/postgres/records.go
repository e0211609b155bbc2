package postgres

import (
	"context"
	"errors"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/postgres/internal/sqldb"
	"github.com/jackc/pgx/v5"
)

// Records (backends/records.go) live in table records; a swap is one
// conditional INSERT (version 0) or UPDATE (any other version).

func (b *Backend) GetRecord(ctx context.Context, key string) (backends.Record, error) {
	if err := b.usable(ctx); err != nil {
		return backends.Record{}, err
	}
	r, err := b.q.GetRecord(ctx, key)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return backends.Record{Key: key}, nil
	case err != nil:
		return backends.Record{}, mapErr(err, "reading a record")
	}
	return backends.Record{Key: r.Key, Value: r.Value, Version: r.Version}, nil
}

func (b *Backend) SwapRecord(ctx context.Context, key string, value []byte, version int64) (backends.Record, bool, error) {
	if err := b.usable(ctx); err != nil {
		return backends.Record{}, false, err
	}
	if value == nil {
		value = []byte{} // the column holds bytes, never NULL
	}
	var v int64
	var err error
	if version == 0 {
		v, err = b.q.InsertRecord(ctx, sqldb.InsertRecordParams{Key: key, Value: value})
	} else {
		v, err = b.q.UpdateRecord(ctx, sqldb.UpdateRecordParams{Key: key, Value: value, Version: version})
	}
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		cur, err := b.GetRecord(ctx, key)
		return cur, false, err
	case err != nil:
		return backends.Record{}, false, mapErr(err, "writing a record")
	}
	return backends.Record{Key: key, Value: value, Version: v}, true, nil
}
