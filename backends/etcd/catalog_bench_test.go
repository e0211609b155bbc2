package etcd

import (
	"testing"

	"github.com/chunklock/chunklock/backends/backendtest"
)

// BenchmarkCatalogWrites creates 10,000 jobs, two datasets each, from 8
// writers under a fresh prefix of the test member and reports the cost per
// job of the first and of the last thousand (see
// backendtest.BenchCatalogWrites).
//
//	go test ./backends/etcd/ -run '^$' -bench CatalogWrites -benchtime 1x -timeout 1h
func BenchmarkCatalogWrites(b *testing.B) {
	backendtest.BenchCatalogWrites(b, newStore(b, nil), backendtest.CatalogBenchJobs(b))
}
