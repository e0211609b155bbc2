package etcd

import (
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
)

// BenchmarkDimensions measures ten years of dates × 1,000 customers on the
// embedded member (see backendtest.BenchDimensions):
//
//	go test ./backends/etcd/ -run '^$' -bench Dimensions -benchtime 1000x
func BenchmarkDimensions(b *testing.B) {
	backendtest.BenchDimensions(b, func(b *testing.B) backends.Store { return newStore(b, nil) })
}
