package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/postgres/internal/sqldb"
	"github.com/jackc/pgx/v5/pgtype"
)

// rowCursor is the position of a row in listing order: dataset, sort key,
// role, job and read-for dataid separated by NUL bytes (none of them can
// contain one).
func rowCursor(k backends.RowKey) string {
	return k.Dataset + "\x00" + backends.SortKey(k.DataID) + "\x00" + string(k.Role) + "\x00" + k.Job + "\x00" + k.ReadFor
}

// textOrNull maps an empty filter to NULL ("do not filter").
func textOrNull(s string) pgtype.Text {
	return pgtype.Text{String: s, Valid: s != ""}
}

// ListRows pages through status rows in (dataset, shortlex dataid, role,
// job) order, seeking past the cursor on an index.
func (b *Backend) ListRows(ctx context.Context, f backends.ChunkFilter) (backends.ChunkPage, error) {
	if err := b.usable(ctx); err != nil {
		return backends.ChunkPage{}, err
	}
	first := backends.PageSize(f.First)
	p := sqldb.ListRowsParams{
		Dataset: textOrNull(f.Dataset), Job: textOrNull(f.Job), Role: textOrNull(string(f.Role)),
		Status: textOrNull(string(f.Status)), MaxRows: int32(first + 1),
		// Only RUNNING OUTPUT rows hold a lease: saying so lets a listing of
		// live claims read the lease index (status_rows_expiry).
		Leased: f.Role == backends.RoleOutput && f.Status == backends.StatusRunning,
	}
	if f.From != "" {
		p.FromKey = textOrNull(backends.SortKey(f.From))
	}
	if f.To != "" {
		p.ToKey = textOrNull(backends.SortKey(f.To))
	}
	if f.After != "" {
		parts := strings.Split(f.After, "\x00")
		if len(parts) == 4 { // a cursor made before rows had a read-for dataid
			parts = append(parts, "")
		}
		if len(parts) != 5 {
			return backends.ChunkPage{}, backends.InvalidArgument("cursor %q is not valid: pass a cursor returned by a previous page", f.After)
		}
		p.HasAfter = true
		p.AfterDataset, p.AfterSortkey, p.AfterRole, p.AfterJob, p.AfterReadFor = parts[0], parts[1], parts[2], parts[3], parts[4]
	}
	rows, err := b.listQ.ListRows(ctx, p)
	if err != nil {
		return backends.ChunkPage{}, mapErr(err, "listing status rows")
	}
	var page backends.ChunkPage
	if len(rows) > first {
		rows, page.HasNextPage = rows[:first], true
	}
	for _, r := range rows {
		sr := rowFromDB(r)
		page.Rows = append(page.Rows, sr)
		page.Cursors = append(page.Cursors, rowCursor(sr.RowKey))
	}
	return page, nil
}

// ExpiredClaims returns up to limit OUTPUT rows in RUNNING whose lease
// ended at or before now, oldest lease first (a partial index keeps this
// independent of the size of the history).
func (b *Backend) ExpiredClaims(ctx context.Context, now time.Time, limit int) ([]backends.RowKey, error) {
	if err := b.usable(ctx); err != nil {
		return nil, err
	}
	rows, err := b.q.ExpiredClaims(ctx, sqldb.ExpiredClaimsParams{Now: pgtype.Timestamptz{Time: now, Valid: true}, MaxRows: int32(limit)})
	if err != nil {
		return nil, mapErr(err, "finding expired claims")
	}
	out := make([]backends.RowKey, len(rows))
	for i, r := range rows {
		out[i] = backends.RowKey{Dataset: r.Dataset, DataID: r.Dataid, Job: r.Job, Role: backends.Role(r.Role)}
	}
	return out, nil
}

// listEvents reads up to limit events matching f with f.After < seq < before.
func (b *Backend) listEvents(ctx context.Context, f backends.EventFilter, before int64, limit int) ([]backends.Event, error) {
	rows, err := b.listQ.ListEvents(ctx, sqldb.ListEventsParams{
		After: f.After, Before: before, Dataset: textOrNull(f.Dataset), Job: textOrNull(f.Job), Dataid: textOrNull(f.DataID),
		MaxRows: int32(limit),
	})
	if err != nil {
		return nil, mapErr(err, "reading events")
	}
	out := make([]backends.Event, len(rows))
	for i, r := range rows {
		out[i] = backends.Event{
			Seq: r.Seq, Time: r.Time.UTC(), Actor: r.Actor, Job: r.Job, Dataset: r.Dataset, DataID: r.Dataid,
			Role: backends.Role(r.Role), From: backends.Status(r.FromStatus), To: backends.Status(r.ToStatus),
			Attempt: int(r.Attempt), Executor: r.Executor, Reason: r.Reason, ReadFor: r.ReadFor,
		}
	}
	return out, nil
}

// CountCandidates counts job's candidates (Backend.CountCandidates).
func (b *Backend) CountCandidates(ctx context.Context, job string) (int, error) {
	if err := b.usable(ctx); err != nil {
		return 0, err
	}
	n, err := b.q.CountCandidates(ctx, job)
	if err != nil {
		return 0, mapErr(err, "counting candidates")
	}
	return int(n), nil
}
