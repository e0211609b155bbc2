package backends

import (
	"context"
)

// The read models: chunks, one chunk, live claims, locks, blockers and
// events.

func validateChunkFilter(f ChunkFilter) error {
	for _, id := range []string{f.From, f.To} {
		if id != "" {
			if err := ValidateDataID(id); err != nil {
				return err
			}
		}
	}
	switch f.Role {
	case "", RoleInput, RoleOutput:
	default:
		return InvalidArgument("role %q is not INPUT or OUTPUT", f.Role)
	}
	switch f.Status {
	case StatusNone, StatusRunning, StatusReady, StatusFailed, StatusResubmit, StatusHold, StatusDone, StatusError:
	default:
		return InvalidArgument("status %q is unknown", f.Status)
	}
	return nil
}

func (e *engine) Chunks(ctx context.Context, f ChunkFilter) (ChunkPage, error) {
	if err := validateChunkFilter(f); err != nil {
		return ChunkPage{}, err
	}
	f.First = PageSize(f.First)
	return e.b.ListRows(ctx, f)
}

func (e *engine) Chunk(ctx context.Context, dataset, dataid string) (ChunkDetail, error) {
	if err := ValidateDataID(dataid); err != nil {
		return ChunkDetail{}, err
	}
	var rows []*StatusRow
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		if _, err := cat.Dataset(dataset); err != nil {
			return err
		}
		keys := []RowKey{chunkOutputKey(cat.Catalog, dataset, dataid)}
		var mapped []string
		for _, j := range cat.Consumers(dataset) {
			keys = append(keys, RowKey{Dataset: dataset, DataID: dataid, Job: j, Role: RoleInput})
			if cat.Jobs.Get(j).Mapped() {
				mapped = append(mapped, j)
			}
		}
		return e.update(ctx, cat, func(tx Tx) error {
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
		return ChunkDetail{}, err
	}
	d := ChunkDetail{Dataset: dataset, DataID: dataid, Output: rows[0]}
	for _, r := range rows {
		if r != nil {
			d.Rows = append(d.Rows, *r)
		}
	}
	d.Locks = DeriveLocks(d.Rows)
	return d, nil
}

// readRows reads the rows of keys in a transaction that confirms cat.
func (e *engine) readRows(ctx context.Context, cat *opCatalog, keys []RowKey) ([]*StatusRow, error) {
	var rows []*StatusRow
	err := e.update(ctx, cat, func(tx Tx) error {
		var err error
		rows, err = tx.GetRows(ctx, keys)
		return err
	})
	return rows, err
}

func (e *engine) Claims(ctx context.Context, job string) ([]Claim, error) {
	cat, err := e.catalog(ctx)
	if err != nil {
		return nil, err
	}
	f := ChunkFilter{Role: RoleOutput, Status: StatusRunning, First: MaxPageSize}
	if job != "" {
		j, err := cat.Job(job)
		if err != nil {
			return nil, err
		}
		f.Job, f.Dataset = j.ID, j.Output
	}
	var claims []Claim
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
			claims = append(claims, liveClaimOf(cat, cat.Jobs.Get(r.Job), r))
		}
		if !page.HasNextPage || len(page.Rows) == 0 {
			return claims, nil
		}
		f.After = page.Cursors[len(page.Cursors)-1]
	}
}

func (e *engine) Locks(ctx context.Context, f LockFilter) ([]Lock, error) {
	page, err := e.b.ListRows(ctx, ChunkFilter{Dataset: f.Dataset, Job: f.Job, First: MaxPageSize})
	if err != nil {
		return nil, err
	}
	locks := DeriveLocks(page.Rows)
	if locks == nil {
		locks = []Lock{}
	}
	return locks, nil
}

func (e *engine) Blockers(ctx context.Context, jobID, dataid string) ([]Blocker, error) {
	if err := ValidateDataID(dataid); err != nil {
		return nil, err
	}
	var bs []Blocker
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		job, err := cat.Job(jobID)
		if err != nil {
			return err
		}
		return e.update(ctx, cat, func(tx Tx) error {
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
			bs = withSchedule(st, cat.Catalog, e.clock.Now()).Blockers(ModeClaim)
			g, err := openGate(ctx, tx, cat.Catalog, job, e.clock.Now(), false)
			bs = append(bs, g.blockers(dataid, StatusOf(st.Output))...)
			return err
		})
	})
	if bs == nil {
		bs = []Blocker{}
	}
	return bs, err
}

func (e *engine) Events(ctx context.Context, f EventFilter) (EventPage, error) {
	if f.DataID != "" {
		if err := ValidateDataID(f.DataID); err != nil {
			return EventPage{}, err
		}
	}
	f.First = PageSize(f.First)
	return e.b.ListEvents(ctx, f)
}

func (e *engine) WatchEvents(ctx context.Context, f EventFilter) (<-chan Event, error) {
	return e.b.WatchEvents(ctx, f)
}
