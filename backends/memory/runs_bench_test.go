package memory_test

import (
	"context"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
)

// BenchmarkRuns: PartitionRuns over ten years of an HOURLY dataset, mostly
// READY (backendtest.BenchRuns).
//
//	go test ./backends/memory/ -run '^$' -bench Runs -benchtime 20x
func BenchmarkRuns(b *testing.B) {
	be := memory.New()
	s := engine.New(be, engine.WithClock(backends.NewFakeClock(backendtest.RunsBenchClock)))
	defer s.Close()
	if _, err := backendtest.SeedRunsBench(context.Background(), s, backendtest.TxRows(be)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	backendtest.BenchRuns(b, s)
}
