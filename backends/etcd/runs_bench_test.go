package etcd

import (
	"context"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
	"github.com/chunklock/chunklock/backends/engine"
)

// BenchmarkRuns: PartitionRuns over ten years of an HOURLY dataset, mostly
// READY (backendtest.BenchRuns; rows seeded with bulk Txn puts), on an
// embedded member of its own.
//
//	go test ./backends/etcd/ -run '^$' -bench Runs -benchtime 20x
func BenchmarkRuns(b *testing.B) {
	ctx := context.Background()
	_, be := privateBackend(b)
	s := engine.New(be, engine.WithClock(backends.NewFakeClock(backendtest.RunsBenchClock)))
	defer s.Close()
	t0 := time.Now()
	n, err := backendtest.SeedRunsBench(ctx, s, be.bulkRows)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d status rows in %s", n, time.Since(t0).Round(time.Millisecond))
	b.ResetTimer()
	backendtest.BenchRuns(b, s)
}
