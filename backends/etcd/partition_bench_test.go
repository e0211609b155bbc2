package etcd

import (
	"context"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
	"github.com/chunklock/chunklock/backends/engine"
)

// BenchmarkPartitions: pages of 500 partitions of a DAILY dataset with ten
// years expected in a store of 100,000 chunks (backendtest.BenchPartitions;
// rows seeded with bulk Txn puts, not through the API), on an embedded
// member of its own.
//
//	go test ./backends/etcd/ -run '^$' -bench Partitions -benchtime 500x
func BenchmarkPartitions(b *testing.B) {
	ctx := context.Background()
	_, be := privateBackend(b)
	s := engine.New(be, engine.WithClock(backends.NewFakeClock(backendtest.PartitionBenchClock)))
	defer s.Close()
	t0 := time.Now()
	n, err := backendtest.SeedPartitionBench(ctx, s, be.bulkRows)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d status rows in %s", n, time.Since(t0).Round(time.Millisecond))
	b.ResetTimer()
	backendtest.BenchPartitions(b, s)
}
