package postgres

import (
	"context"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
)

// BenchmarkPublishLookback: publishes under a TIME_WINDOW reaching k hours
// back (k = 1,000, and a year: 8,760), a completion of the job producing
// such an input, and a claim of the lookback job itself, reading k+1 hours
// (backendtest.BenchLookback; the history written with bulk SQL, not
// through the API).
//
//	go test ./backends/postgres/ -run '^$' -bench PublishLookback -benchtime 20x -timeout 30m
func BenchmarkPublishLookback(b *testing.B) {
	backendtest.BenchLookback(b, func(b *testing.B) (backends.Store, backendtest.RowWriter, func()) {
		schema := freshSchema(b)
		s, err := openStore(context.Background(), Config{DSN: testDSN(b), Schema: schema}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s, bulkRows(schema), func() { analyzeRows(b, schema) }
	})
}
