// Command river-bench measures River's fetch → complete loop on the same
// PostgreSQL as chunklock's benchmark, for a side-by-side figure: N no-op
// jobs inserted up front, R workers, jobs completed per second.
//
// It is a module of its own so that chunklock never depends on River.
//
//	go run . -dsn postgres://postgres@127.0.0.1:5432/test -workers 16 -jobs 20000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

type noopArgs struct{}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct{ river.WorkerDefaults[noopArgs] }

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

func main() {
	dsn := flag.String("dsn", envOr("CHUNKLOCK_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "PostgreSQL DSN")
	workers := flag.Int("workers", 16, "River MaxWorkers")
	jobs := flag.Int("jobs", 20000, "jobs to insert and work")
	flag.Parse()
	if err := run(*dsn, *workers, *jobs); err != nil {
		fmt.Fprintln(os.Stderr, "river-bench:", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func run(dsn string, workers, jobs int) error {
	ctx := context.Background()
	schema := fmt.Sprintf("river_bench_%d", time.Now().UnixNano())
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return err
	}
	cfg.MaxConns = int32(workers + 4)
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return err
	}
	defer pool.Exec(context.WithoutCancel(ctx), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")

	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema})
	if err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrating: %w", err)
	}
	ws := river.NewWorkers()
	river.AddWorker(ws, &noopWorker{})
	client, err := river.NewClient(driver, &river.Config{
		Schema:            schema,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers:           ws,
		FetchCooldown:     time.Millisecond,
		FetchPollInterval: 10 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	params := make([]river.InsertManyParams, jobs)
	for i := range params {
		params[i] = river.InsertManyParams{Args: noopArgs{}}
	}
	for i := 0; i < jobs; i += 5000 {
		end := min(i+5000, jobs)
		if _, err := client.InsertManyFast(ctx, params[i:end]); err != nil {
			return fmt.Errorf("inserting: %w", err)
		}
	}
	completed, cancel := client.Subscribe(river.EventKindJobCompleted)
	defer cancel()
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return err
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	done := 0
	for done < jobs {
		select {
		case <-completed:
			done++
		case <-tick.C:
			fmt.Fprintf(os.Stderr, "  river workers=%d %d/%d jobs\n", workers, done, jobs)
		case <-time.After(60 * time.Second):
			return fmt.Errorf("no job completed for 60s (%d/%d done)", done, jobs)
		}
	}
	elapsed := time.Since(start)
	stopCtx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	_ = client.Stop(stopCtx)
	fmt.Printf("river workers=%d jobs=%d elapsed=%s jobs/s=%.0f\n", workers, jobs, elapsed.Round(time.Millisecond), float64(jobs)/elapsed.Seconds())
	return nil
}
