// Command retention measures event retention (issue 28, BENCHMARKS.md
// "Event retention"): a year of hourly traffic (each hour, every source
// publishes its chunk and its job claims and completes it) on a fresh
// store, on a simulated clock, with or without a pruner sweeping the
// event log in the background. It prints the p50 and p99 of findNext and
// complete, and the store's size and event count after two months and
// at the end.
//
// The pruner is built in with -tags retention (prune_on.go); without the
// tag the program builds on commits that predate retention too, so that
// alternating runs compare a build of the commit before (no retention)
// with one of this commit (pruning):
//
//	go run ./bench/retention -store 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//	go run -tags retention ./bench/retention -store '...' -retain 720h
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/open"
)

func main() {
	var (
		storeURL   = flag.String("store", "", "store URL: postgres://... (a fresh schema is made and dropped), or empty for the embedded store in a temporary directory")
		pairs      = flag.Int("pairs", 2, "hourly sources, each with a job reading it")
		months     = flag.Int("months", 12, "months of hourly traffic (730 hours each)")
		retain     = flag.Duration("retain", 30*24*time.Hour, "retention of events (with -tags retention)")
		pruneEvery = flag.Duration("prune-every", 200*time.Millisecond, "how often, in real time, the pruner sweeps (with -tags retention)")
		vacuum     = flag.Int("vacuum-every", 168, "PostgreSQL: VACUUM the benchmark's database every this many simulated hours, standing in for the autovacuum a real year leaves time for (0: autovacuum only)")
	)
	flag.Parse()
	vacuumEvery = *vacuum
	if err := run(*storeURL, *pairs, *months, *retain, *pruneEvery); err != nil {
		fmt.Fprintln(os.Stderr, "retention:", err)
		os.Exit(1)
	}
}

var vacuumEvery int

func run(storeURL string, pairs, months int, retain, pruneEvery time.Duration) error {
	ctx := context.Background()
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := backends.NewFakeClock(start)
	opts := open.Options{Clock: clock}
	var size func() (int64, int64, error)
	vacuum := func() error { return nil }
	if strings.HasPrefix(storeURL, "postgres") {
		dsn, _, err := open.ParsePostgresURL(storeURL)
		if err != nil {
			return err
		}
		// A database of its own: VACUUM then removes what no snapshot of
		// this benchmark sees, whatever runs in the other databases.
		admin, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer admin.Close(ctx)
		db := fmt.Sprintf("bench_retention_%d", rand.Uint32())
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
			return err
		}
		defer admin.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)") //nolint:errcheck
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			return err
		}
		cfg.Database = db
		storeURL = strings.Replace(storeURL, "/"+admin.Config().Database+"?", "/"+db+"?", 1)
		schema := "bench"
		opts.PostgresSchema = schema
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		vacuum = func() error {
			_, err := conn.Exec(ctx, "VACUUM")
			return err
		}
		size = func() (int64, int64, error) {
			var bytes, events int64
			err := conn.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
				FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
				WHERE n.nspname = $1 AND c.relkind = 'r'`, schema).Scan(&bytes)
			if err == nil {
				err = conn.QueryRow(ctx, "SELECT count(*) FROM "+schema+".events").Scan(&events)
			}
			if err == nil {
				var eb int64
				err = conn.QueryRow(ctx, "SELECT pg_total_relation_size('"+schema+".events')").Scan(&eb)
				fmt.Fprintf(os.Stderr, "events table (heap, indexes): %.1f MiB of %.1f MiB\n", mib(eb), mib(bytes))
			}
			if err == nil && os.Getenv("RETENTION_TABLES") != "" {
				rows, qerr := conn.Query(ctx, `SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c
					JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r' ORDER BY 2 DESC LIMIT 8`, schema)
				if qerr != nil {
					return 0, 0, qerr
				}
				for rows.Next() {
					var name string
					var n int64
					if err := rows.Scan(&name, &n); err != nil {
						return 0, 0, err
					}
					fmt.Fprintf(os.Stderr, "  %s %.1f MiB\n", name, mib(n))
				}
				rows.Close()
			}
			return bytes, events, err
		}
	} else {
		dir, err := os.MkdirTemp("", "chunklock-retention-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		opts.DataDir = dir
		size = func() (int64, int64, error) {
			var total int64
			err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() && strings.HasSuffix(fi.Name(), ".db") {
					total += fi.Size()
				}
				return err
			})
			return total, -1, err
		}
	}
	store, err := open.Open(ctx, storeURL, opts)
	if err != nil {
		return err
	}
	defer store.Close()

	for i := range pairs {
		def := "s3://lake/s%d/hour={dataid}/"
		if _, err := store.UpsertDataset(ctx, backends.Dataset{ID: fmt.Sprintf("s%d", i), Location: fmt.Sprintf(def, i)}); err != nil {
			return err
		}
		if _, err := store.UpsertDataset(ctx, backends.Dataset{ID: fmt.Sprintf("p%d", i), Location: fmt.Sprintf("dw.p%d WHERE hour = '{dataid}'", i)}); err != nil {
			return err
		}
		if _, err := store.UpsertJob(ctx, backends.Job{ID: fmt.Sprintf("j%d", i), Inputs: []string{fmt.Sprintf("s%d", i)}, Output: fmt.Sprintf("p%d", i)}); err != nil {
			return err
		}
	}

	pctx, stopPruner := context.WithCancel(ctx)
	defer stopPruner()
	var pwg sync.WaitGroup
	pwg.Add(1)
	var pruned int64
	go func() {
		defer pwg.Done()
		pruned = runPruner(pctx, store, retain, pruneEvery)
	}()

	hours := months * 730
	var finds, completes []time.Duration
	var size2, events2 int64
	began := time.Now()
	for h := range hours {
		dataid := clock.Now().Format("2006-01-02T15")
		for i := range pairs {
			if _, err := store.Publish(ctx, fmt.Sprintf("s%d", i), dataid); err != nil {
				return err
			}
		}
		for i := range pairs {
			t0 := time.Now()
			c, err := store.FindNext(ctx, fmt.Sprintf("j%d", i), "bench")
			finds = append(finds, time.Since(t0))
			if err != nil {
				return err
			}
			if c == nil || c.DataID != dataid {
				return fmt.Errorf("hour %d: j%d claimed %v, want %s", h, i, c, dataid)
			}
			t0 = time.Now()
			if err := store.Complete(ctx, c.Token); err != nil {
				return err
			}
			completes = append(completes, time.Since(t0))
		}
		clock.Advance(time.Hour)
		if vacuumEvery > 0 && (h+1)%vacuumEvery == 0 {
			if err := vacuum(); err != nil {
				return err
			}
		}
		if h+1 == 2*730 {
			if size2, events2, err = size(); err != nil {
				return err
			}
		}
	}
	took := time.Since(began)
	stopPruner()
	pwg.Wait()
	size12, events12, err := size()
	if err != nil {
		return err
	}
	fmt.Printf("%s pairs=%d hours=%d findNext p50=%.3fms p99=%.3fms complete p50=%.3fms p99=%.3fms size@2mo=%.1fMiB events@2mo=%d size@%dmo=%.1fMiB events@%dmo=%d ratio=%.2f pruned=%d took=%s\n",
		arm(retain), pairs, hours, ms(pct(finds, 50)), ms(pct(finds, 99)), ms(pct(completes, 50)), ms(pct(completes, 99)),
		mib(size2), events2, months, mib(size12), months, events12, float64(size12)/float64(max(size2, 1)), pruned, took.Round(time.Second))
	return nil
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
func mib(n int64) float64        { return float64(n) / (1 << 20) }
