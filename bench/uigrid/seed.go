package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/etcd"
	"github.com/chunklock/chunklock/backends/etcd/embedded"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/backends/postgres"
)

// seedDaily makes n/2 source datasets, published over the last days (the
// last i days of the i-th source left missing, and late), and n/2 datasets
// each produced by a job from one source, with 30 chunks claimed: most
// completed, some failed, the last one left running. Through the API.
func seedDaily(base string, n, days int) error {
	start := time.Now().UTC().AddDate(0, 0, -days)
	from, to := start.Format(time.DateOnly), start.AddDate(0, 0, days-1).Format(time.DateOnly)
	t0 := time.Now()
	sources := n / 2
	for i := 0; i < n; i++ {
		if _, err := gql(base, `mutation($id: String!, $start: String!) { upsertDataset(input: {id: $id, partitions: {kind: DAILY, start: $start, deadlineSeconds: 7200}}) { id } }`,
			map[string]any{"id": fmt.Sprintf("ds%03d", i), "start": from}); err != nil {
			return err
		}
	}
	for i := 0; i < sources; i++ {
		last := start.AddDate(0, 0, days-1-i%20).Format(time.DateOnly)
		if _, err := gql(base, `mutation($d: String!, $f: String!, $t: String!) { publishRange(dataset: $d, from: $f, to: $t) { changed } }`,
			map[string]any{"d": fmt.Sprintf("ds%03d", i), "f": from, "t": last}); err != nil {
			return err
		}
	}
	for i := sources; i < n; i++ {
		if err := runDailyJob(base, i, i-sources); err != nil {
			return err
		}
	}
	fmt.Printf("seeded %d daily datasets x %d days (%s .. %s) through the API in %s\n", n, days, from, to, time.Since(t0).Round(time.Millisecond))
	return nil
}

// runDailyJob declares the job of dataset i reading source src and plays
// 30 of its claims.
func runDailyJob(base string, i, src int) error {
	job, out, in := fmt.Sprintf("job%03d", i), fmt.Sprintf("ds%03d", i), fmt.Sprintf("ds%03d", src)
	if _, err := gql(base, `mutation($j: String!, $in: String!, $out: String!) { upsertJob(input: {id: $j, inputs: [$in], output: $out, maxAttempts: 1}) { job { id } } }`,
		map[string]any{"j": job, "in": in, "out": out}); err != nil {
		return err
	}
	for k := 0; k < 30; k++ {
		d, err := gql(base, `mutation($j: String!) { findNext(job: $j, executor: "bench") { token } }`, map[string]any{"j": job})
		if err != nil {
			return err
		}
		var c struct {
			FindNext *struct{ Token string } `json:"findNext"`
		}
		if err := json.Unmarshal(d, &c); err != nil || c.FindNext == nil {
			return nil
		}
		op := `mutation($t: String!) { complete(token: $t) }`
		switch {
		case k == 29:
			continue // left running
		case k%10 == 7:
			op = `mutation($t: String!) { fail(token: $t, reason: "bench failure") }`
		}
		if _, err := gql(base, op, map[string]any{"t": c.FindNext.Token}); err != nil {
			return err
		}
	}
	return nil
}

// hourly is the hourly scenario's history: every hour from start to last
// (the last one due now).
type hourly struct {
	n     int
	start time.Time
	last  time.Time
	hours int
}

func newHourly(n, years int) hourly {
	last := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour)
	start := last.AddDate(-years, 0, 0).Truncate(24 * time.Hour)
	return hourly{n: n, start: start, last: last, hours: int(last.Sub(start)/time.Hour) + 1}
}

// status is the status of hour i of dataset k: mostly READY; 30 hours in
// 5,000 missing, one in 997 FAILED, one in 1,499 on HOLD, and the newest
// k%4 hours missing (late, the deadline being two hours). StatusNone: no row.
func (h hourly) status(i, k int) backends.Status {
	switch {
	case i >= h.hours-k%4:
		return backends.StatusNone
	case (i+97*k)%5000 >= 4970:
		return backends.StatusNone
	case (i+37*k)%997 == 500:
		return backends.StatusFailed
	case (i+11*k)%1499 == 700:
		return backends.StatusHold
	}
	return backends.StatusReady
}

// catalog declares the datasets (even ones sources, odd ones produced by a
// job from the one before) on s.
func (h hourly) catalog(ctx context.Context, s backends.Store) error {
	deadline := 2 * time.Hour
	def := partition.Def{Kind: partition.Hourly, Start: h.start.Format("2006-01-02T15"), Deadline: &deadline}
	for k := 0; k < h.n; k++ {
		if _, err := s.UpsertDataset(ctx, backends.Dataset{ID: h.dataset(k), Location: "/lake/" + h.dataset(k) + "/{dataid}", Partitions: &def}); err != nil {
			return err
		}
	}
	for k := 1; k < h.n; k += 2 {
		if _, err := s.UpsertJob(ctx, backends.Job{ID: h.job(k), Inputs: []string{h.dataset(k - 1)}, Output: h.dataset(k)}); err != nil {
			return err
		}
	}
	return nil
}

func (h hourly) dataset(k int) string { return fmt.Sprintf("h%02d", k) }

// job is the producer of dataset k ("" for a source).
func (h hourly) job(k int) string {
	if k%2 == 0 {
		return ""
	}
	return fmt.Sprintf("load-h%02d", k)
}

// rows calls put with the OUTPUT rows of dataset k, a thousand at a time.
func (h hourly) rows(k int, put func([]backends.StatusRow) error) (int, error) {
	batch := make([]backends.StatusRow, 0, 1000)
	written := 0
	now := time.Now().UTC()
	for i := 0; i < h.hours; i++ {
		st := h.status(i, k)
		if st == backends.StatusNone {
			continue
		}
		r := backends.StatusRow{RowKey: backends.RowKey{Dataset: h.dataset(k), DataID: h.start.Add(time.Duration(i) * time.Hour).Format("2006-01-02T15"),
			Job: h.job(k), Role: backends.RoleOutput}, Status: st, Attempt: 1, Executor: "bench", UpdatedAt: now}
		if st != backends.StatusReady {
			r.Reason = "bench: " + strings.ToLower(string(st))
		}
		if batch = append(batch, r); len(batch) == cap(batch) {
			if err := put(batch); err != nil {
				return written, err
			}
			written, batch = written+len(batch), batch[:0]
		}
	}
	if len(batch) > 0 {
		written += len(batch)
		return written, put(batch)
	}
	return written, nil
}

// seedHourly writes the hourly scenario in bulk and returns the store URL
// for the server ("" for the embedded store in dataDir) and what drops it.
func seedHourly(ctx context.Context, c config, dataDir string) (string, func(), error) {
	h := newHourly(c.datasets, c.years)
	t0 := time.Now()
	var url string
	var drop func()
	var n int
	var err error
	switch c.store {
	case "postgres":
		url, drop, n, err = seedHourlyPostgres(ctx, c.dsn, h)
	case "embedded":
		drop = func() {}
		n, err = seedHourlyEmbedded(ctx, dataDir, h)
	default:
		err = fmt.Errorf("-store %q: want embedded or postgres", c.store)
	}
	if err != nil {
		return "", nil, err
	}
	fmt.Printf("seeded %d hourly datasets x %d hours (%s .. %s): %d rows in bulk into %s in %s\n",
		h.n, h.hours, h.start.Format("2006-01-02T15"), h.last.Format("2006-01-02T15"), n, c.store, time.Since(t0).Round(time.Second))
	return url, drop, nil
}

// seedHourlyPostgres declares the catalog through the store in a schema of
// its own, then COPYs the rows straight into its status_rows table.
func seedHourlyPostgres(ctx context.Context, dsn string, h hourly) (string, func(), int, error) {
	if dsn == "" {
		return "", nil, 0, fmt.Errorf("-store postgres needs -dsn or CHUNKLOCK_TEST_POSTGRES")
	}
	schema := fmt.Sprintf("chunklock_uigrid_%d", time.Now().Unix())
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return "", nil, 0, err
	}
	drop := func() {
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
		pool.Close()
	}
	be, err := postgres.Open(ctx, postgres.Config{DSN: dsn, Schema: schema})
	if err == nil {
		st := engine.New(be)
		err = h.catalog(ctx, st)
		st.Close()
	}
	if err != nil {
		drop()
		return "", nil, 0, err
	}
	cols := []string{"dataset", "dataid", "job", "role", "sortkey", "status", "attempt", "executor", "token", "fence", "updated_at", "reason", "prev_status"}
	total := 0
	for k := 0; k < h.n; k++ {
		n, err := h.rows(k, func(rows []backends.StatusRow) error {
			_, err := pool.CopyFrom(ctx, pgx.Identifier{schema, "status_rows"}, cols, pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
				r := rows[i]
				return []any{r.Dataset, r.DataID, r.Job, string(r.Role), backends.SortKey(r.DataID), string(r.Status), r.Attempt, r.Executor, "", int64(0), r.UpdatedAt, r.Reason, ""}, nil
			}))
			return err
		})
		if total += n; err != nil {
			drop()
			return "", nil, total, err
		}
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE "+schema+".status_rows"); err != nil {
		drop()
		return "", nil, total, err
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "schema=" + schema, drop, total, nil
}

// seedHourlyEmbedded runs the embedded store on dataDir, declares the
// catalog through it and writes the rows with its backend's own
// transactions, a thousand rows each; then stops it for the server.
func seedHourlyEmbedded(ctx context.Context, dataDir string, h hourly) (int, error) {
	srv, err := embedded.Start(ctx, embedded.Config{Dir: dataDir})
	if err != nil {
		return 0, err
	}
	defer srv.Close()
	cli, err := srv.Client()
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	be, err := etcd.OpenClient(ctx, cli, etcd.Config{MaxTxnOps: srv.MaxTxnOps()})
	if err != nil {
		return 0, err
	}
	st := engine.New(be)
	defer st.Close()
	if err := h.catalog(ctx, st); err != nil {
		return 0, err
	}
	total := 0
	for k := 0; k < h.n; k++ {
		n, err := h.rows(k, func(rows []backends.StatusRow) error {
			return be.Update(ctx, func(tx backends.Tx) error {
				for _, r := range rows {
					if err := tx.PutRow(ctx, r); err != nil {
						return err
					}
				}
				return nil
			})
		})
		if total += n; err != nil {
			return total, err
		}
	}
	return total, nil
}
