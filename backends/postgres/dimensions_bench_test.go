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

// BenchmarkDynamicDimensions measures ten years of dates × 1,000 customers
// of a DYNAMIC dimension, added by backfills (see
// backendtest.BenchDynamicDimensions):
//
//	go test ./backends/postgres/ -run '^$' -bench DynamicDimensions -benchtime 1000x
func BenchmarkDynamicDimensions(b *testing.B) {
	backendtest.BenchDynamicDimensions(b, func(b *testing.B) backends.Store {
		s := openTest(b, nil)
		b.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// BenchmarkFirstDays measures the chunks reading nothing at 1,000
// customers' first days over ten years (see backendtest.BenchFirstDays):
//
//	go test ./backends/postgres/ -run '^$' -bench FirstDays -benchtime 1x
func BenchmarkFirstDays(b *testing.B) {
	backendtest.BenchFirstDays(b, func(b *testing.B) backends.Store {
		s := openTest(b, nil)
		b.Cleanup(func() { _ = s.Close() })
		return s
	})
}
