package memory_test

import (
	"context"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
)

// BenchmarkPartitions: see backendtest.BenchPartitions.
//
//	go test ./backends/memory/ -run '^$' -bench Partitions -benchtime 200x
func BenchmarkPartitions(b *testing.B) {
	be := memory.New()
	s := engine.New(be, engine.WithClock(backends.NewFakeClock(backendtest.PartitionBenchClock)))
	defer s.Close()
	ctx := context.Background()
	_, err := backendtest.SeedPartitionBench(ctx, s, backendtest.TxRows(be))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	backendtest.BenchPartitions(b, s)
}
