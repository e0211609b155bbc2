package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
	"github.com/chunklock/chunklock/backends/engine"
)

// BenchmarkRuns: PartitionRuns over ten years of an HOURLY dataset, mostly
// READY (backendtest.BenchRuns; rows seeded with bulk SQL).
//
//	go test ./backends/postgres/ -run '^$' -bench Runs -benchtime 20x
func BenchmarkRuns(b *testing.B) {
	ctx := context.Background()
	schema := freshSchema(b)
	be, err := Open(ctx, Config{DSN: testDSN(b), Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	s := engine.New(be, engine.WithClock(backends.NewFakeClock(backendtest.RunsBenchClock)))
	defer s.Close()
	t0 := time.Now()
	n, err := backendtest.SeedRunsBench(ctx, s, bulkRows(schema))
	if err != nil {
		b.Fatal(err)
	}
	analyzeRows(b, schema)
	b.Logf("seeded %d status rows in %s", n, time.Since(t0).Round(time.Millisecond))
	b.ResetTimer()
	backendtest.BenchRuns(b, s)
}
