package postgres

import (
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
)

// BenchmarkDimensions measures ten years of dates × 1,000 customers (see
// backendtest.BenchDimensions):
//
//	go test ./backends/postgres/ -run '^$' -bench Dimensions -benchtime 1000x
func BenchmarkDimensions(b *testing.B) {
	backendtest.BenchDimensions(b, func(b *testing.B) backends.Store {
		s := openTest(b, nil)
		b.Cleanup(func() { _ = s.Close() })
		return s
	})
}
