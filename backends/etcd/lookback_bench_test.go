package etcd

import (
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
	"github.com/chunklock/chunklock/backends/engine"
)

// BenchmarkPublishLookback: publishes under a TIME_WINDOW reaching k hours
// back, a completion of the job producing such an input, and a claim of
// the lookback job itself, reading k+1 hours (backendtest.BenchLookback;
// the history written with bulk Txn puts, not through the API), on an
// embedded member of its own (--max-txn-ops 4096). A year of hours (k =
// 8,760) does not fit one transaction of that member: its upsert is
// refused, and the benchmark says so.
//
//	go test ./backends/etcd/ -run '^$' -bench PublishLookback -benchtime 20x -timeout 30m
func BenchmarkPublishLookback(b *testing.B) {
	backendtest.BenchLookback(b, func(b *testing.B) (backends.Store, backendtest.RowWriter, func()) {
		_, be := privateBackend(b)
		s := engine.New(be)
		b.Cleanup(func() { s.Close() })
		return s, be.bulkRows, nil
	})
}
