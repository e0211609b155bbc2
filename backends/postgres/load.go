package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/chunklock/chunklock/backends"
)

// The bulk of a load (Dumper.Load): status rows, events and candidates
// written with COPY, a batch at a time.

func (b *Backend) copyRows(ctx context.Context, items []backends.DumpItem) error {
	// Rows copied in are history, seldom written again: they fill their
	// pages, where the table's fill factor (migration 21) leaves room for
	// the updates of rows that traffic writes. The setting is back as it
	// was when the transaction commits.
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		var ff string
		if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT option_value FROM pg_options_to_table(reloptions) WHERE option_name = 'fillfactor'), '100')
FROM pg_class WHERE oid = 'status_rows'::regclass`).Scan(&ff); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "ALTER TABLE status_rows SET (fillfactor = 100)"); err != nil {
			return err
		}
		if err := copyRowsIn(ctx, tx, items); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "ALTER TABLE status_rows SET (fillfactor = "+strconv.Itoa(atoiOr(ff, 100))+")")
		return err
	})
	return mapErr(err, "loading status rows")
}

// atoiOr reads a number of PostgreSQL's catalog, or def.
func atoiOr(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return def
}

func copyRowsIn(ctx context.Context, tx pgx.Tx, items []backends.DumpItem) error {
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"status_rows"},
		[]string{"dataset", "dataid", "job", "role", "sortkey", "status", "attempt", "executor", "token", "fence",
			"lease_expires_at", "updated_at", "reason", "prev_status", "ended", "retry_at", "read_for", "reads"},
		pgx.CopyFromSlice(len(items), func(i int) ([]any, error) {
			r := items[i].Row
			var lease, retry pgtype.Timestamptz
			if !r.LeaseExpiresAt.IsZero() {
				lease = pgtype.Timestamptz{Time: r.LeaseExpiresAt, Valid: true}
			}
			if !r.RetryAt.IsZero() {
				retry = pgtype.Timestamptz{Time: r.RetryAt, Valid: true}
			}
			var reads []string
			if r.Reads != nil {
				reads = make([]string, len(r.Reads))
				for j, rd := range r.Reads {
					reads[j] = rd.Dataset + "/" + rd.DataID
				}
			}
			return []any{r.Dataset, r.DataID, r.Job, string(r.Role), backends.SortKey(r.DataID), string(r.Status), int32(r.Attempt),
				r.Executor, r.Token, r.Fence, lease, r.UpdatedAt, r.Reason, string(r.PrevStatus), string(r.Ended), retry, r.ReadFor, reads}, nil
		}))
	return err
}

// copyEvents numbers the events from the last one loaded, in the order
// given: below every seq the store gives later ((transaction id) << 20),
// which it checks.
func (b *Backend) copyEvents(ctx context.Context, items []backends.DumpItem) error {
	var last, horizon int64
	err := b.pool.QueryRow(ctx, `SELECT coalesce(max(seq), 0), pg_current_xact_id()::text::bigint << 20 FROM events`).Scan(&last, &horizon)
	if err != nil {
		return mapErr(err, "loading events")
	}
	if last+int64(len(items)) >= horizon {
		return fmt.Errorf("postgres: %d events do not fit below the seqs the database gives next (%d)", last+int64(len(items)), horizon)
	}
	_, err = b.pool.CopyFrom(ctx, pgx.Identifier{"events"},
		[]string{"seq", "time", "actor", "job", "dataset", "dataid", "role", "from_status", "to_status", "attempt", "executor", "reason", "read_for"},
		pgx.CopyFromSlice(len(items), func(i int) ([]any, error) {
			e := items[i].Event
			return []any{last + int64(i) + 1, e.Time, e.Actor, e.Job, e.Dataset, e.DataID, string(e.Role), string(e.From), string(e.To),
				int32(e.Attempt), e.Executor, e.Reason, e.ReadFor}, nil
		}))
	return mapErr(err, "loading events")
}

func (b *Backend) copyCandidates(ctx context.Context, items []backends.DumpItem) error {
	_, err := b.pool.CopyFrom(ctx, pgx.Identifier{"candidates"},
		[]string{"job", "resubmit", "sortkey", "dataid", "not_before", "frontier"},
		pgx.CopyFromSlice(len(items), func(i int) ([]any, error) {
			c := items[i].Candidate
			var nb pgtype.Timestamptz
			if !c.NotBefore.IsZero() {
				nb = pgtype.Timestamptz{Time: c.NotBefore, Valid: true}
			}
			return []any{c.Job, c.Resubmit, backends.SortKey(c.DataID), c.DataID, nb, c.Frontier}, nil
		}))
	return mapErr(err, "loading candidates")
}
