package engine

import (
	"context"
	"strings"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// An operator's operations on one chunk: publish, resubmit (with its
// cascade, cascade.go) and hold. Each is a function of a transaction that
// holds the chunk's locks already (publishChunk, resubmitChunk, holdChunk),
// so that the range operations (rangeops.go) apply the very same rules to
// every chunk of a range.

func (e *engine) Publish(ctx context.Context, dataset, dataid string) (backends.StatusRow, error) {
	if err := backends.ValidateDataID(dataid); err != nil {
		return backends.StatusRow{}, err
	}
	var row backends.StatusRow
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		if err := checkPublishable(cat.Catalog, dataset, dataid); err != nil {
			return err
		}
		return withReplans(func([]backends.Read) error {
			return e.update(ctx, cat, func(tx backends.Tx) error {
				ctx := withWindowRuns(ctx)
				if err := lockReady(ctx, tx, cat.Catalog, dataset, dataid); err != nil {
					return err
				}
				if err := checkValue(ctx, tx, cat.Catalog, dataset, dataid); err != nil {
					return err
				}
				var err error
				row, err = publishChunk(ctx, tx, cat.Catalog, dataset, dataid, e.clock.Now())
				return err
			})
		})
	})
	return row, err
}

// expects tells whether the definition of dataset ds expects dataid: any
// valid one-dimensional dataid when it has none; a DYNAMIC set's values
// are checked in the store (checkValue).
func expects(ds backends.Dataset, dataid string) bool {
	if ds.Partitions == nil {
		return !strings.Contains(dataid, "|")
	}
	return ds.Partitions.Contains(dataid)
}

// checkPublishable refuses to publish into a dataset that is unknown or
// has a producing job, and, unless dataid is empty (a range, whose dataids
// come from the definition), a dataid its partition definition does not
// expect.
func checkPublishable(cat *backends.Catalog, dataset, dataid string) error {
	ds, err := cat.Dataset(dataset)
	if err != nil {
		return err
	}
	if dataid != "" && ds.Partitions == nil && !expects(ds, dataid) {
		return backends.InvalidArgument("dataid %q has values joined by |, and dataset %q has no dimensions: publish one-dimensional dataids", dataid, dataset)
	}
	if dataid != "" && !expects(ds, dataid) {
		return backends.InvalidArgument("dataid %q is not an expected dataid of dataset %q (partitions %s); publish only dataids of its definition", dataid, dataset, ds.Partitions.Describe())
	}
	if p := cat.Producer(dataset); p != "" {
		return backends.InvalidArgument("dataset %q is produced by job %q; only source datasets are published", dataset, p)
	}
	return nil
}

// publishChunk publishes chunk dataset/dataid, whose lock tx holds: a
// READY chunk stays as it is, a chunk on HOLD is LOCKED.
func publishChunk(ctx context.Context, tx backends.Tx, cat *backends.Catalog, dataset, dataid string, now time.Time) (backends.StatusRow, error) {
	key := chunkOutputKey(cat, dataset, dataid)
	rows, err := tx.GetRows(ctx, []backends.RowKey{key})
	if err != nil {
		return backends.StatusRow{}, err
	}
	old := rows[0]
	if old != nil && old.Status == backends.StatusReady {
		return *old, nil
	}
	if old != nil && old.Status == backends.StatusHold {
		return backends.StatusRow{}, backends.Locked([]backends.Blocker{{Dataset: dataset, DataID: dataid, Kind: backends.BlockerOutputLocked, Status: backends.StatusHold}},
			"chunk %s/%s is on HOLD; resubmit it before publishing", dataset, dataid)
	}
	row := backends.StatusRow{RowKey: key, Status: backends.StatusReady, UpdatedAt: now}
	if old != nil {
		row.Attempt = old.Attempt
	}
	if err := put(ctx, tx, backends.ActorFrom(ctx), old, row); err != nil {
		return backends.StatusRow{}, err
	}
	return row, enqueueConsumers(ctx, tx, cat, dataset, dataid, now)
}

func (e *engine) Resubmit(ctx context.Context, dataset, dataid string, cascade bool) ([]backends.StatusRow, error) {
	if err := backends.ValidateDataID(dataid); err != nil {
		return nil, err
	}
	var changed []backends.StatusRow
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		if _, err := cat.Dataset(dataset); err != nil {
			return err
		}
		return withReplans(func(hint []backends.Read) error {
			return e.update(ctx, cat, func(tx backends.Tx) error {
				var err error
				if cascade {
					err = lockCascade(ctx, tx, cat.Catalog, dataset, dataid, lockPlan{}, hint)
				} else {
					err = tx.LockChunks(ctx, dataid, []string{dataset}, nil)
				}
				if err != nil {
					return err
				}
				changed, err = resubmitChunk(ctx, tx, cat.Catalog, dataset, dataid, cascade, false, e.clock.Now())
				return err
			})
		})
	})
	if err != nil {
		return nil, err
	}
	return changed, nil
}

// resubmitLocks are the datasets whose chunks a resubmit locks.
func resubmitLocks(cat *backends.Catalog, dataset string, cascade bool) []string {
	if cascade {
		return cat.Downstream(dataset)
	}
	return []string{dataset}
}

// resubmitChunk resubmits chunk dataset/dataid (and, with cascade, what
// was computed from it), whose locks (resubmitLocks) tx holds, and returns
// the OUTPUT rows it changed. With keep, a chunk already RESUBMIT is not
// written again (its cascade still runs): a range run again over the same
// chunks changes nothing more.
func resubmitChunk(ctx context.Context, tx backends.Tx, cat *backends.Catalog, dataset, dataid string, cascade, keep bool, now time.Time) ([]backends.StatusRow, error) {
	rows, err := tx.GetRows(ctx, []backends.RowKey{chunkOutputKey(cat, dataset, dataid)})
	if err != nil {
		return nil, err
	}
	root := rows[0]
	if root == nil {
		if def := cat.DefOf(dataset); !def.IsZero() && !def.Contains(dataid) {
			return nil, backends.NotFound("chunk %s/%s has no status, and %q is not an expected dataid of %s (partitions %s); nothing to resubmit",
				dataset, dataid, dataid, dataset, def.Describe())
		}
		return nil, backends.NotFound("chunk %s/%s has no status yet; nothing to resubmit", dataset, dataid)
	}
	if !backends.ResubmitFrom(root.Status) {
		return nil, backends.Locked([]backends.Blocker{{Dataset: dataset, DataID: dataid, Job: root.Job, Kind: backends.BlockerOutputLocked, Status: root.Status}},
			"chunk %s/%s is %s; resubmit it once the claim ends", dataset, dataid, root.Status)
	}
	var changed []backends.StatusRow
	if !keep || root.Status != backends.StatusResubmit {
		r, err := resubmitRow(ctx, tx, cat, *root, "resubmitted", now)
		if err != nil {
			return nil, err
		}
		changed = append(changed, r)
	}
	if !cascade {
		return changed, nil
	}
	more, err := invalidateDownstream(ctx, tx, cat, dataset, dataid, "upstream "+dataset+"/"+dataid+" resubmitted", now)
	return append(changed, more...), err
}

func (e *engine) Hold(ctx context.Context, dataset, dataid, reason string) (backends.StatusRow, error) {
	if err := backends.ValidateDataID(dataid); err != nil {
		return backends.StatusRow{}, err
	}
	reason = backends.CutReason(reason)
	var row backends.StatusRow
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		ds, err := cat.Dataset(dataset)
		if err != nil {
			return err
		}
		// A hold creates the chunk's row: only of a dataid the definition
		// expects, as a publish (a DYNAMIC set is not checked: a value may
		// be held before it is added).
		if !expects(ds, dataid) {
			return backends.InvalidArgument("dataid %q is not an expected dataid of dataset %q (partitions %s); hold only dataids of its definition", dataid, dataset, ds.Partitions.Describe())
		}
		return e.update(ctx, cat, func(tx backends.Tx) error {
			if err := tx.LockChunks(ctx, dataid, []string{dataset}, nil); err != nil {
				return err
			}
			var err error
			row, err = holdChunk(ctx, tx, cat.Catalog, dataset, dataid, reason, false, e.clock.Now())
			return err
		})
	})
	return row, err
}

// holdChunk puts chunk dataset/dataid, whose lock tx holds, on HOLD,
// creating its row if it has none; LOCKED while RUNNING. With keep, a
// chunk an operator put on HOLD for the same reason is not written again
// (one whose claim ended in HOLD is: the hold forgets that ending).
func holdChunk(ctx context.Context, tx backends.Tx, cat *backends.Catalog, dataset, dataid, reason string, keep bool, now time.Time) (backends.StatusRow, error) {
	key := chunkOutputKey(cat, dataset, dataid)
	rows, err := tx.GetRows(ctx, []backends.RowKey{key})
	if err != nil {
		return backends.StatusRow{}, err
	}
	old := rows[0]
	if old != nil && old.Status == backends.StatusRunning {
		return backends.StatusRow{}, backends.Locked([]backends.Blocker{{Dataset: dataset, DataID: dataid, Job: old.Job, Kind: backends.BlockerOutputLocked, Status: backends.StatusRunning}},
			"chunk %s/%s is RUNNING; hold it once the claim ends", dataset, dataid)
	}
	if keep && old != nil && old.Status == backends.StatusHold && old.Reason == reason && old.Ended == "" {
		return *old, nil
	}
	row := backends.StatusRow{RowKey: key}
	if old != nil {
		row = *old
	}
	row.Status, row.Reason, row.UpdatedAt, row.LeaseExpiresAt, row.PrevStatus, row.Ended = backends.StatusHold, reason, now, time.Time{}, backends.StatusNone, ""
	row.RetryAt = time.Time{}
	return row, putByOperator(ctx, tx, old, row)
}
