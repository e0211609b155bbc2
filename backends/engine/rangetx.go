package engine

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// A range operation (rangeops.go) serves several chunks in one
// transaction, each all or nothing: a chunk's operation runs on a chunkTx,
// which keeps its writes aside until the chunk is known to succeed; a
// refused chunk's writes are dropped while the others are kept. Reads
// first look at the chunk's own writes, then at rows read ahead for the
// whole batch (batchReads), then at the transaction.

// errNotInRange refuses what no range operation does on a chunkTx.
var errNotInRange = errors.New("backends: not available to a range operation's chunk")

// batchReads is a transaction whose reads of some keys were made ahead,
// in one call for a whole batch.
type batchReads struct {
	backends.Tx
	ahead map[backends.RowKey]*backends.StatusRow
	// sweeps is, by job and kind, the lowest dataid of a sweep (a frontier
	// candidate, addSweep) that the batch's kept chunks added: a sweep
	// walks every output after it, so one at a higher dataid of the same
	// job adds nothing (a range of snapshots starts one sweep per job).
	sweeps map[string]string
}

// addCandidate adds c, unless c is a sweep that one the batch added
// already covers.
func (b *batchReads) addCandidate(ctx context.Context, c backends.Candidate) error {
	if c.Frontier {
		kind := c.Job + "\x00" + strconv.FormatBool(c.Resubmit)
		if at, ok := b.sweeps[kind]; ok && backends.CompareDataID(at, c.DataID) <= 0 {
			return nil
		}
		if b.sweeps == nil {
			b.sweeps = map[string]string{}
		}
		b.sweeps[kind] = c.DataID
	}
	return b.Tx.AddCandidate(ctx, c)
}

// readAhead reads keys in one call and keeps them for the chunks.
func (b *batchReads) readAhead(ctx context.Context, keys []backends.RowKey) error {
	rows, err := b.Tx.GetRows(ctx, keys)
	if err != nil {
		return err
	}
	b.ahead = make(map[backends.RowKey]*backends.StatusRow, len(keys))
	for i, k := range keys {
		b.ahead[k] = rows[i]
	}
	return nil
}

// GetRows answers from the rows read ahead, and reads the others.
func (b *batchReads) GetRows(ctx context.Context, keys []backends.RowKey) ([]*backends.StatusRow, error) {
	out := make([]*backends.StatusRow, len(keys))
	var rest []backends.RowKey
	var at []int
	for i, k := range keys {
		if r, ok := b.ahead[k]; ok {
			if r != nil {
				c := *r
				out[i] = &c
			}
			continue
		}
		rest = append(rest, k)
		at = append(at, i)
	}
	if len(rest) == 0 {
		return out, nil
	}
	rows, err := b.Tx.GetRows(ctx, rest)
	if err != nil {
		return nil, err
	}
	for j, i := range at {
		out[i] = rows[j]
	}
	return out, nil
}

// forget drops k from the rows read ahead: it was written, and the
// transaction answers its own writes.
func (b *batchReads) forget(k backends.RowKey) { delete(b.ahead, k) }

// chunkTx holds one chunk's writes until commit or drop.
type chunkTx struct {
	base   *batchReads
	rows   map[backends.RowKey]*backends.StatusRow // written (nil: deleted)
	writes []func(context.Context, backends.Tx) error
}

func newChunkTx(base *batchReads) *chunkTx {
	return &chunkTx{base: base, rows: map[backends.RowKey]*backends.StatusRow{}}
}

// wrote tells whether the chunk's operation wrote anything.
func (c *chunkTx) wrote() bool { return len(c.writes) > 0 }

// commit passes the chunk's writes, in order, to the transaction.
func (c *chunkTx) commit(ctx context.Context) error {
	for k := range c.rows {
		c.base.forget(k)
	}
	for _, w := range c.writes {
		if err := w(ctx, c.base.Tx); err != nil {
			return err
		}
	}
	return nil
}

// LockChunks is refused: a range takes every lock of its batch first.
func (c *chunkTx) LockChunks(context.Context, string, []string, []string) error {
	return errNotInRange
}

func (c *chunkTx) GetRows(ctx context.Context, keys []backends.RowKey) ([]*backends.StatusRow, error) {
	out := make([]*backends.StatusRow, len(keys))
	var rest []backends.RowKey
	var at []int
	for i, k := range keys {
		if r, ok := c.rows[k]; ok {
			if r != nil {
				cp := *r
				out[i] = &cp
			}
			continue
		}
		rest = append(rest, k)
		at = append(at, i)
	}
	if len(rest) == 0 {
		return out, nil
	}
	rows, err := c.base.GetRows(ctx, rest)
	if err != nil {
		return nil, err
	}
	for j, i := range at {
		out[i] = rows[j]
	}
	return out, nil
}

// PeekRows reads as GetRows does: a range's reads lock nothing more.
func (c *chunkTx) PeekRows(ctx context.Context, keys []backends.RowKey) ([]*backends.StatusRow, error) {
	return c.GetRows(ctx, keys)
}

// LatestReady is refused: it serves the reads of claims, and a range
// claims nothing.
func (c *chunkTx) LatestReady(context.Context, string, string, string, string) (string, bool, error) {
	return "", false, errNotInRange
}

func (c *chunkTx) CatalogVersion(ctx context.Context) (int64, error) {
	return c.base.CatalogVersion(ctx)
}

func (c *chunkTx) ListReads(ctx context.Context, dataset, dataid, job string) ([]backends.StatusRow, error) {
	rows, err := c.base.ListReads(ctx, dataset, dataid, job)
	if err != nil {
		return nil, err
	}
	return overlayReads(rows, c.rows, dataset, dataid, job), nil
}

func (c *chunkTx) PutRow(_ context.Context, r backends.StatusRow) error {
	c.rows[r.RowKey] = &r
	c.writes = append(c.writes, func(ctx context.Context, tx backends.Tx) error { return tx.PutRow(ctx, r) })
	return nil
}

func (c *chunkTx) DeleteRow(_ context.Context, k backends.RowKey) error {
	c.rows[k] = nil
	c.writes = append(c.writes, func(ctx context.Context, tx backends.Tx) error { return tx.DeleteRow(ctx, k) })
	return nil
}

func (c *chunkTx) AppendEvent(_ context.Context, e backends.Event) error {
	c.writes = append(c.writes, func(ctx context.Context, tx backends.Tx) error { return tx.AppendEvent(ctx, e) })
	return nil
}

func (c *chunkTx) AddCandidate(_ context.Context, cand backends.Candidate) error {
	c.writes = append(c.writes, func(ctx context.Context, _ backends.Tx) error { return c.base.addCandidate(ctx, cand) })
	return nil
}

func (c *chunkTx) NextFence(context.Context, string, string) (int64, error) {
	return 0, errNotInRange
}

func (c *chunkTx) NextCandidates(context.Context, string, int, time.Time) ([]backends.Candidate, error) {
	return nil, errNotInRange
}

func (c *chunkTx) DropCandidate(context.Context, backends.Candidate) error { return errNotInRange }

// A range's single-chunk operations never claim nor end a claim, so they
// never touch slot records.

func (c *chunkTx) GetSlots(context.Context, []string, bool) ([]*backends.Slots, error) {
	return nil, errNotInRange
}

func (c *chunkTx) PutSlots(context.Context, backends.Slots) error { return errNotInRange }

// GetPartitionValues reads through: a range's chunks read the values of
// dynamic sets but never change them.
func (c *chunkTx) GetPartitionValues(ctx context.Context, dataset, dimension string, ids []string) ([]*backends.PartitionValue, error) {
	return c.base.GetPartitionValues(ctx, dataset, dimension, ids)
}

func (c *chunkTx) PutPartitionValue(context.Context, backends.PartitionValue) error {
	return errNotInRange
}

func (c *chunkTx) DeletePartitionValue(context.Context, string, string, string) error {
	return errNotInRange
}
