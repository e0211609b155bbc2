package etcd

import (
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
)

// BenchmarkDynamic measures a DYNAMIC dataset of many values on the
// embedded member (see backendtest.BenchDynamic):
//
//	CHUNKLOCK_BENCH_DYNAMIC_VALUES=1000000 go test ./backends/etcd/ -run '^$' -bench Dynamic -benchtime 1000x -timeout 1h
func BenchmarkDynamic(b *testing.B) {
	backendtest.BenchDynamic(b, func(b *testing.B) backends.Store { return newStore(b, nil) })
}
