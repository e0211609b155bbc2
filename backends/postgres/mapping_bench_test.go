package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends/backendtest"
)

// BenchmarkFindNextMapped: findNext of a 7-day lookback job and of a
// weekly roll-up against that of a job reading one to one, over 100,000
// consumed days (backendtest.BenchFindNextMapped; rows seeded with bulk
// SQL, not through the API).
//
//	go test ./backends/postgres/ -run '^$' -bench FindNextMapped -benchtime 2000x -timeout 30m
func BenchmarkFindNextMapped(b *testing.B) {
	ctx := context.Background()
	schema := freshSchema(b)
	s, err := openStore(ctx, Config{DSN: testDSN(b), Schema: schema}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	t0 := time.Now()
	n, next, err := backendtest.SeedMappingBench(ctx, s, backendtest.MappingBenchHistory, bulkRows(schema))
	if err != nil {
		b.Fatal(err)
	}
	analyzeRows(b, schema)
	b.Logf("seeded %d status rows in %s", n, time.Since(t0).Round(time.Millisecond))
	b.Run("history=100000", func(b *testing.B) { backendtest.BenchFindNextMapped(b, s, &next) })
}

// BenchmarkLatestSnapshot: a first LATEST snapshot arriving after 3,000
// READY days of the job's other input, drained by one runner, then by
// eight (backendtest.BenchLatestSnapshot).
//
//	go test ./backends/postgres/ -run '^$' -bench LatestSnapshot -benchtime 1x
func BenchmarkLatestSnapshot(b *testing.B) {
	ctx := context.Background()
	s, err := openStore(ctx, Config{DSN: testDSN(b), Schema: freshSchema(b)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, r := range []int{1, 8} {
		b.Run(fmt.Sprintf("runners=%d", r), func(b *testing.B) { backendtest.BenchLatestSnapshot(b, s, 3000, r) })
	}
}
