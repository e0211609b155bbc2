package etcd

import (
	"testing"

	"github.com/chunklock/chunklock/backends/backendtest"
)

// BenchmarkRanges times publishRange, holdRange and resubmitRange over
// 10,000 daily dataids (see backendtest.BenchRanges).
//
//	go test ./backends/etcd/ -run '^$' -bench Ranges -benchtime 3x
func BenchmarkRanges(b *testing.B) {
	backendtest.BenchRanges(b, newStore(b, nil))
}
