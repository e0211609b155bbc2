package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// seedStats is what a seed wrote.
type seedStats struct {
	chunks, rows, events, candidates int
	took                             time.Duration
}

func (s seedStats) String() string {
	return fmt.Sprintf("%d chunks (%d status rows, %d events, %d queued candidates) in %s (%.0f chunks/s)",
		s.chunks, s.rows, s.events, s.candidates, s.took.Round(time.Second), float64(s.chunks)/s.took.Seconds())
}

// pgStore is a PostgreSQL schema the benchmark owns.
type pgStore struct {
	dsn, schema string
	pool        *pgxpool.Pool
}

func openPG(ctx context.Context, dsn, schema string) (*pgStore, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("-dsn: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("PostgreSQL at -dsn does not answer: %w", err)
	}
	return &pgStore{dsn: dsn, schema: schema, pool: pool}, nil
}

// storeURL is the --store of a server on the schema.
func (p *pgStore) storeURL() string { return withParam(p.dsn, "schema", p.schema) }

// seed writes l's history straight into the store's tables, in
// transactions of about 100,000 rows (COPY), then sets the fence sequence
// past the fences it used and vacuums and analyzes the tables, as
// autovacuum would have over the years. The server must have created the
// schema and the catalog must be l's (declared through the API); the
// store must hold no chunk, event or candidate yet.
func (p *pgStore) seed(ctx context.Context, l layout, progress io.Writer) (seedStats, error) {
	t0 := time.Now()
	if err := p.checkSeedable(ctx, l); err != nil {
		return seedStats{}, err
	}
	// The seeded rows are history, as a store copy loads them (backends/
	// postgres/load.go): they fill their pages, where the table's fill
	// factor leaves room for the updates of traffic. Set back after.
	var ff string
	if err := p.pool.QueryRow(ctx, `SELECT coalesce((SELECT option_value FROM pg_options_to_table(reloptions) WHERE option_name = 'fillfactor'), '100')
FROM pg_class WHERE oid = 'status_rows'::regclass`).Scan(&ff); err != nil {
		return seedStats{}, fmt.Errorf("reading the fill factor of status_rows: %w", err)
	}
	if _, err := strconv.Atoi(ff); err != nil {
		return seedStats{}, fmt.Errorf("the fill factor of status_rows is %q", ff)
	}
	if _, err := p.pool.Exec(ctx, "ALTER TABLE status_rows SET (fillfactor = 100)"); err != nil {
		return seedStats{}, err
	}
	defer func() {
		if _, err := p.pool.Exec(context.WithoutCancel(ctx), "ALTER TABLE status_rows SET (fillfactor = "+ff+")"); err != nil {
			fmt.Fprintf(progress, "postgres: setting the fill factor of status_rows back to %s: %v\n", ff, err)
		}
	}()
	g := newHistory(l, true, uint64(t0.UnixNano()))
	st := seedStats{chunks: l.chunks()}
	step := max(1, 100000/(3*l.pairs))
	for h0 := 0; h0 < l.hours; h0 += step {
		var rows []row
		var events []event
		for h := h0; h < min(h0+step, l.hours); h++ {
			rows, events = g.hour(h, rows, events)
		}
		if err := p.copyHours(ctx, rows, events); err != nil {
			return st, err
		}
		st.rows += len(rows)
		st.events += len(events)
		reportProgress(progress, "postgres", min(h0+step, l.hours), l.hours, t0)
	}
	cands := l.candidates()
	if _, err := p.pool.CopyFrom(ctx, pgx.Identifier{"candidates"}, []string{"job", "resubmit", "sortkey", "dataid", "frontier"},
		pgx.CopyFromSlice(len(cands), func(i int) ([]any, error) {
			return []any{cands[i].job, false, sortKey(cands[i].dataid), cands[i].dataid, false}, nil
		})); err != nil {
		return st, fmt.Errorf("seeding candidates: %w", err)
	}
	st.candidates = len(cands)
	if g.fence > 0 {
		if _, err := p.pool.Exec(ctx, "SELECT setval('fences', $1)", g.fence); err != nil {
			return st, fmt.Errorf("setting the fence sequence: %w", err)
		}
	}
	fmt.Fprintln(progress, "postgres: vacuum analyze...")
	if _, err := p.pool.Exec(ctx, "VACUUM (ANALYZE) status_rows, events, candidates"); err != nil {
		return st, fmt.Errorf("vacuum analyze: %w", err)
	}
	st.took = time.Since(t0)
	return st, nil
}

// checkSeedable refuses a schema whose catalog is not l's or that holds
// history already.
func (p *pgStore) checkSeedable(ctx context.Context, l layout) error {
	var datasets, jobs, history int
	err := p.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM datasets), (SELECT count(*) FROM jobs),
		(SELECT count(*) FROM (SELECT 1 FROM status_rows UNION ALL SELECT 1 FROM events UNION ALL SELECT 1 FROM candidates LIMIT 1) x)`).
		Scan(&datasets, &jobs, &history)
	if err != nil {
		return fmt.Errorf("reading schema %s (has a server created it?): %w", p.schema, err)
	}
	if datasets != 2*l.pairs || jobs != l.pairs {
		return fmt.Errorf("schema %s has %d datasets and %d jobs, the layout %d and %d: declare the catalog through the API first",
			p.schema, datasets, jobs, 2*l.pairs, l.pairs)
	}
	if history > 0 {
		return fmt.Errorf("schema %s already holds status rows, events or candidates: seed an empty store only", p.schema)
	}
	return nil
}

// copyHours writes one batch of rows and events, each with a COPY of its
// own, side by side.
func (p *pgStore) copyHours(ctx context.Context, rows []row, events []event) error {
	errs := make(chan error, 1)
	go func() {
		_, err := p.pool.CopyFrom(ctx, pgx.Identifier{"events"},
			[]string{"seq", "time", "actor", "job", "dataset", "dataid", "role", "from_status", "to_status", "attempt", "executor", "reason", "read_for"},
			pgx.CopyFromSlice(len(events), func(i int) ([]any, error) {
				e := events[i]
				return []any{e.seq, e.at, e.actor, e.job, e.dataset, e.dataid, e.role, e.from, e.to, int32(e.attempt), e.executor, "", ""}, nil
			}))
		errs <- err
	}()
	_, err := p.pool.CopyFrom(ctx, pgx.Identifier{"status_rows"},
		[]string{"dataset", "dataid", "job", "role", "sortkey", "status", "attempt", "executor", "token", "fence",
			"updated_at", "reason", "prev_status", "ended", "read_for"},
		pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
			r := rows[i]
			role := "OUTPUT"
			if r.input {
				role = "INPUT"
			}
			return []any{r.dataset, r.dataid, r.job, role, sortKey(r.dataid), r.status, int32(r.attempt), r.executor, r.token, r.fence,
				r.updated, "", "", r.ended, ""}, nil
		}))
	if eerr := <-errs; err == nil && eerr != nil {
		err = fmt.Errorf("seeding events: %w", eerr)
	} else if err != nil {
		err = fmt.Errorf("seeding status rows: %w", err)
	}
	return err
}

// size is the schema's tables' total size (pg_total_relation_size: heap,
// indexes, TOAST), and each table's.
func (p *pgStore) size(ctx context.Context) (int64, map[string]int64, error) {
	rows, err := p.pool.Query(ctx, `SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`, p.schema)
	if err != nil {
		return 0, nil, err
	}
	byTable := map[string]int64{}
	var total int64
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return 0, nil, err
		}
		byTable[name] = n
		total += n
	}
	return total, byTable, rows.Err()
}

// drop removes the schema and closes the pool.
func (p *pgStore) drop(ctx context.Context) error {
	defer p.pool.Close()
	_, err := p.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{p.schema}.Sanitize()+" CASCADE")
	return err
}

// reportProgress prints how far a seed is.
func reportProgress(w io.Writer, what string, done, total int, t0 time.Time) {
	el := time.Since(t0)
	fmt.Fprintf(w, "%s: %d/%d hours seeded, %s elapsed, about %s left\n", what, done, total, el.Round(time.Second),
		(time.Duration(float64(el) / float64(done) * float64(total-done))).Round(time.Second))
}
