package postgres

import (
	"context"
	"time"

	"github.com/chunklock/chunklock/backends"
)

var _ backends.HoldsMarker = (*Backend)(nil)

// HoldsCheckedSince reads the time migration 0018 recorded
// (backends.HoldsMarker).
func (b *Backend) HoldsCheckedSince(ctx context.Context) (time.Time, error) {
	if err := b.usable(ctx); err != nil {
		return time.Time{}, err
	}
	var at time.Time
	err := b.pool.QueryRow(ctx, `SELECT at FROM store_marks WHERE name = 'holds_checked'`).Scan(&at)
	if err != nil {
		return time.Time{}, mapErr(err, "reading since when holds are checked")
	}
	return at, nil
}

// markLoaded moves the mark to the time of a load (store copy): the rows
// copied are from a store whose holds may not have been checked, and the
// datasets keep their creation times (backends.HoldsMarker). Once per
// Backend.
func (b *Backend) markLoaded(ctx context.Context) error {
	if b.loadMarked.Swap(true) {
		return nil
	}
	_, err := b.pool.Exec(ctx, `UPDATE store_marks SET at = greatest(at, now()) WHERE name = 'holds_checked'`)
	return mapErr(err, "marking since when holds are checked")
}
