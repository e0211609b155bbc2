package engine

import (
	"context"

	"github.com/chunklock/chunklock/backends"
)

// The read models: chunks, one chunk, live claims, locks, blockers and
// events.

func validateChunkFilter(f backends.ChunkFilter) error {
	for _, id := range []string{f.From, f.To} {
		if id != "" {
			if err := backends.ValidateDataID(id); err != nil {
				return err
			}
		}
	}
	switch f.Role {
	case "", backends.RoleInput, backends.RoleOutput:
	default:
		return backends.InvalidArgument("role %q is not INPUT or OUTPUT", f.Role)
	}
	switch f.Status {
	case backends.StatusNone, backends.StatusRunning, backends.StatusReady, backends.StatusFailed, backends.StatusResubmit, backends.StatusHold, backends.StatusDone, backends.StatusError:
	default:
		return backends.InvalidArgument("status %q is unknown", f.Status)
	}
	return nil
}

func (e *engine) Chunks(ctx context.Context, f backends.ChunkFilter) (backends.ChunkPage, error) {
	if err := validateChunkFilter(f); err != nil {
		return backends.ChunkPage{}, err
	}
	f.First = backends.PageSize(f.First)
	f.To = backends.UpperBound(f.To) // a first value covers its tuples
	return e.b.ListRows(ctx, f)
}

func (e *engine) Chunk(ctx context.Context, dataset, dataid string) (backends.ChunkDetail, error) {
	if err := backends.ValidateDataID(dataid); err != nil {
		return backends.ChunkDetail{}, err
	}
	var rows []*backends.StatusRow
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		if _, err := cat.Dataset(dataset); err != nil {
			return err
		}
		keys := []backends.RowKey{chunkOutputKey(cat.Catalog, dataset, dataid)}
		var mapped []string
		for _, j := range cat.Consumers(dataset) {
			keys = append(keys, backends.RowKey{Dataset: dataset, DataID: dataid, Job: j, Role: backends.RoleInput})
			if cat.Jobs.Get(j).Mapped() {
				mapped = append(mapped, j)
			}
		}
		return e.update(ctx, cat, func(tx backends.Tx) error {
			var err error
			if rows, err = tx.GetRows(ctx, keys); err != nil {
				return err
			}
			// A mapped consumer reads the chunk for other output dataids too.
			for _, j := range mapped {
				reads, err := tx.ListReads(ctx, dataset, dataid, j)
				if err != nil {
					return err
				}
				for i := range reads {
					rows = append(rows, &reads[i])
				}
			}
			return nil
		})
	})
	if err != nil {
		return backends.ChunkDetail{}, err
	}
	d := backends.ChunkDetail{Dataset: dataset, DataID: dataid, Output: rows[0]}
	for _, r := range rows {
		if r != nil {
			d.Rows = append(d.Rows, *r)
		}
	}
	d.Locks = backends.DeriveLocks(d.Rows)
	return d, nil
}

// readRows reads the rows of keys in a transaction that confirms cat.
func (e *engine) readRows(ctx context.Context, cat *opCatalog, keys []backends.RowKey) ([]*backends.StatusRow, error) {
	var rows []*backends.StatusRow
	err := e.update(ctx, cat, func(tx backends.Tx) error {
		var err error
		rows, err = tx.GetRows(ctx, keys)
		return err
	})
	return rows, err
}

func (e *engine) Claims(ctx context.Context, job string) ([]backends.Claim, error) {
	cat, err := e.catalog(ctx)
	if err != nil {
		return nil, err
	}
	f := backends.ChunkFilter{Role: backends.RoleOutput, Status: backends.StatusRunning, First: backends.MaxPageSize}
	if job != "" {
		j, err := cat.Job(job)
		if err != nil {
			return nil, err
		}
		f.Job, f.Dataset = cat.RowJob(j), j.Output
	}
	var claims []backends.Claim
	now := e.clock.Now()
	for {
		page, err := e.b.ListRows(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Rows {
			if !now.Before(r.LeaseExpiresAt) {
				continue // past its lease: not live, even before the reaper fails it
			}
			claims = append(claims, liveClaimOf(cat, rowOwner(cat, r.RowKey), r))
		}
		if !page.HasNextPage || len(page.Rows) == 0 {
			return claims, nil
		}
		f.After = page.Cursors[len(page.Cursors)-1]
	}
}

func (e *engine) Locks(ctx context.Context, f backends.LockFilter) ([]backends.Lock, error) {
	page, err := e.b.ListRows(ctx, backends.ChunkFilter{Dataset: f.Dataset, Job: f.Job, First: backends.MaxPageSize})
	if err != nil {
		return nil, err
	}
	locks := backends.DeriveLocks(page.Rows)
	if locks == nil {
		locks = []backends.Lock{}
	}
	return locks, nil
}

func (e *engine) Blockers(ctx context.Context, jobID, dataid string) ([]backends.Blocker, error) {
	if err := backends.ValidateDataID(dataid); err != nil {
		return nil, err
	}
	var bs []backends.Blocker
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		job, err := cat.Job(jobID)
		if err != nil {
			return err
		}
		return e.update(ctx, cat, func(tx backends.Tx) error {
			if err := checkExpected(cat.Catalog, job, dataid); err != nil {
				return err
			}
			reads, err := claimReads(ctx, tx, cat.Catalog, job, dataid)
			if err != nil {
				return err
			}
			st, err := loadClaimState(ctx, tx, cat.Catalog, job, dataid, reads)
			if err != nil {
				return err
			}
			if st, err = withValue(ctx, tx, withSchedule(st, cat.Catalog, e.clock.Now())); err != nil {
				return err
			}
			bs = st.Blockers(backends.ModeClaim)
			g, err := openGate(ctx, tx, cat.Catalog, job, e.clock.Now(), false)
			bs = append(bs, g.blockers(dataid, backends.StatusOf(st.Output))...)
			return err
		})
	})
	if bs == nil {
		bs = []backends.Blocker{}
	}
	return bs, err
}

func (e *engine) Events(ctx context.Context, f backends.EventFilter) (backends.EventPage, error) {
	if f.DataID != "" {
		if err := backends.ValidateDataID(f.DataID); err != nil {
			return backends.EventPage{}, err
		}
	}
	f.First = backends.PageSize(f.First)
	return e.b.ListEvents(ctx, f)
}

func (e *engine) WatchEvents(ctx context.Context, f backends.EventFilter) (<-chan backends.Event, error) {
	return e.b.WatchEvents(ctx, f)
}
