package backends

import (
	"context"
	"time"
)

// An operator's operations on one chunk: publish, resubmit (with its
// cascade, cascade.go) and hold.

func (e *engine) Publish(ctx context.Context, dataset, dataid string) (StatusRow, error) {
	if err := ValidateDataID(dataid); err != nil {
		return StatusRow{}, err
	}
	var row StatusRow
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		return e.publish(ctx, cat, dataset, dataid, &row)
	})
	return row, err
}

func (e *engine) publish(ctx context.Context, cat *opCatalog, dataset, dataid string, out *StatusRow) error {
	ds, err := cat.Dataset(dataset)
	if err != nil {
		return err
	}
	if def := ds.Partitions; def != nil && !def.Contains(dataid) {
		return InvalidArgument("dataid %q is not an expected dataid of dataset %q (partitions %s); publish only dataids of its definition", dataid, dataset, describeDef(*def))
	}
	if p := cat.Producer(dataset); p != "" {
		return InvalidArgument("dataset %q is produced by job %q; only source datasets are published", dataset, p)
	}
	return e.update(ctx, cat, func(tx Tx) error {
		key, old, err := lockOutput(ctx, tx, cat.Catalog, dataset, dataid)
		if err != nil {
			return err
		}
		if old != nil && old.Status == StatusReady {
			*out = *old
			return nil
		}
		if old != nil && old.Status == StatusHold {
			return Locked([]Blocker{{Dataset: dataset, DataID: dataid, Kind: BlockerOutputLocked, Status: StatusHold}},
				"chunk %s/%s is on HOLD; resubmit it before publishing", dataset, dataid)
		}
		row := StatusRow{RowKey: key, Status: StatusReady, UpdatedAt: e.clock.Now()}
		if old != nil {
			row.Attempt = old.Attempt
		}
		if err := put(ctx, tx, old, row); err != nil {
			return err
		}
		*out = row
		return enqueueConsumers(ctx, tx, cat.Catalog, dataset, dataid)
	})
}

func (e *engine) Resubmit(ctx context.Context, dataset, dataid string, cascade bool) ([]StatusRow, error) {
	if err := ValidateDataID(dataid); err != nil {
		return nil, err
	}
	var changed []StatusRow
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		if _, err := cat.Dataset(dataset); err != nil {
			return err
		}
		affected := []string{dataset}
		if cascade {
			affected = cat.Downstream(dataset)
		}
		return e.update(ctx, cat, func(tx Tx) error {
			changed = nil
			if err := tx.LockChunks(ctx, dataid, affected, nil); err != nil {
				return err
			}
			now := e.clock.Now()
			rows, err := tx.GetRows(ctx, []RowKey{chunkOutputKey(cat.Catalog, dataset, dataid)})
			if err != nil {
				return err
			}
			root := rows[0]
			if root == nil {
				return NotFound("chunk %s/%s has no status yet; nothing to resubmit", dataset, dataid)
			}
			if !ResubmitFrom(root.Status) {
				return Locked([]Blocker{{Dataset: dataset, DataID: dataid, Job: root.Job, Kind: BlockerOutputLocked, Status: root.Status}},
					"chunk %s/%s is %s; resubmit it once the claim ends", dataset, dataid, root.Status)
			}
			r, err := resubmitRow(ctx, tx, *root, "resubmitted", now)
			if err != nil {
				return err
			}
			changed = append(changed, r)
			if !cascade {
				return nil
			}
			more, err := invalidateDownstream(ctx, tx, cat.Catalog, dataset, dataid, "upstream "+dataset+"/"+dataid+" resubmitted", now)
			changed = append(changed, more...)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return changed, nil
}

func (e *engine) Hold(ctx context.Context, dataset, dataid, reason string) (StatusRow, error) {
	if err := ValidateDataID(dataid); err != nil {
		return StatusRow{}, err
	}
	reason = validReason(reason)
	var row StatusRow
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		if _, err := cat.Dataset(dataset); err != nil {
			return err
		}
		return e.update(ctx, cat, func(tx Tx) error {
			key, old, err := lockOutput(ctx, tx, cat.Catalog, dataset, dataid)
			if err != nil {
				return err
			}
			if old != nil && old.Status == StatusRunning {
				return Locked([]Blocker{{Dataset: dataset, DataID: dataid, Job: old.Job, Kind: BlockerOutputLocked, Status: StatusRunning}},
					"chunk %s/%s is RUNNING; hold it once the claim ends", dataset, dataid)
			}
			row = StatusRow{RowKey: key}
			if old != nil {
				row = *old
			}
			row.Status, row.Reason, row.UpdatedAt, row.LeaseExpiresAt, row.PrevStatus, row.Ended = StatusHold, reason, e.clock.Now(), time.Time{}, StatusNone, ""
			return put(ctx, tx, old, row)
		})
	})
	return row, err
}

// lockOutput locks chunk dataset/dataid alone and reads its OUTPUT row
// (nil when it has none).
func lockOutput(ctx context.Context, tx Tx, cat *Catalog, dataset, dataid string) (RowKey, *StatusRow, error) {
	if err := tx.LockChunks(ctx, dataid, []string{dataset}, nil); err != nil {
		return RowKey{}, nil, err
	}
	key := chunkOutputKey(cat, dataset, dataid)
	rows, err := tx.GetRows(ctx, []RowKey{key})
	if err != nil {
		return RowKey{}, nil, err
	}
	return key, rows[0], nil
}
