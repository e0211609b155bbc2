package memory_test

import (
	"context"
	"testing"

	"github.com/chunklock/chunklock/backends/backendtest"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
)

// BenchmarkFindNextMapped: see backendtest.BenchFindNextMapped.
//
//	go test ./backends/memory/ -run '^$' -bench FindNextMapped -benchtime 2000x
func BenchmarkFindNextMapped(b *testing.B) {
	be := memory.New()
	s := engine.New(be)
	defer s.Close()
	ctx := context.Background()
	n, next, err := backendtest.SeedMappingBench(ctx, s, backendtest.MappingBenchHistory, backendtest.TxRows(be))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d status rows", n)
	b.Run("history=100000", func(b *testing.B) { backendtest.BenchFindNextMapped(b, s, &next) })
}
