package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
)

// BenchmarkPartitions: pages of 500 partitions of a DAILY dataset with ten
// years expected in a store of 100,000 chunks (backendtest.BenchPartitions;
// rows seeded with bulk SQL, not through the API).
//
//	go test ./backends/postgres/ -run '^$' -bench Partitions -benchtime 500x
func BenchmarkPartitions(b *testing.B) {
	ctx := context.Background()
	schema := freshSchema(b)
	s, err := openStore(ctx, Config{DSN: testDSN(b), Schema: schema}, backends.NewFakeClock(backendtest.PartitionBenchClock))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	t0 := time.Now()
	n, err := backendtest.SeedPartitionBench(ctx, s, bulkRows(schema))
	if err != nil {
		b.Fatal(err)
	}
	analyzeRows(b, schema)
	b.Logf("seeded %d status rows in %s", n, time.Since(t0).Round(time.Millisecond))
	b.ResetTimer()
	backendtest.BenchPartitions(b, s)
}
