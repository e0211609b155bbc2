package etcd

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends/backendtest"
	"github.com/chunklock/chunklock/backends/engine"
)

// BenchmarkFindNextMapped: findNext of a 7-day lookback job and of a
// weekly roll-up against that of a job reading one to one, over 100,000
// consumed days (backendtest.BenchFindNextMapped; rows seeded with bulk
// Txn puts, not through the API), on an embedded member of its own.
//
//	go test ./backends/etcd/ -run '^$' -bench FindNextMapped -benchtime 2000x -timeout 30m
func BenchmarkFindNextMapped(b *testing.B) {
	ctx := context.Background()
	_, be := privateBackend(b)
	s := engine.New(be)
	defer s.Close()
	t0 := time.Now()
	n, next, err := backendtest.SeedMappingBench(ctx, s, backendtest.MappingBenchHistory, be.bulkRows)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d status rows in %s", n, time.Since(t0).Round(time.Millisecond))
	b.Run("history=100000", func(b *testing.B) { backendtest.BenchFindNextMapped(b, s, &next) })
}

// BenchmarkLatestSnapshot: a first LATEST snapshot arriving after 3,000
// READY days of the job's other input, drained by one runner, then by
// eight (backendtest.BenchLatestSnapshot),
// on an embedded member of its own.
//
//	go test ./backends/etcd/ -run '^$' -bench LatestSnapshot -benchtime 1x
func BenchmarkLatestSnapshot(b *testing.B) {
	_, be := privateBackend(b)
	s := engine.New(be)
	defer s.Close()
	for _, r := range []int{1, 8} {
		b.Run(fmt.Sprintf("runners=%d", r), func(b *testing.B) { backendtest.BenchLatestSnapshot(b, s, 3000, r) })
	}
}
