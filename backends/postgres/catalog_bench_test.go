package postgres

import (
	"testing"

	"github.com/chunklock/chunklock/backends/backendtest"
)

// BenchmarkCatalogWrites creates 10,000 jobs, two datasets each, from 8
// writers on a fresh schema and reports the cost per job of the first and
// of the last thousand (see backendtest.BenchCatalogWrites).
//
//	go test ./backends/postgres/ -run '^$' -bench CatalogWrites -benchtime 1x -timeout 1h
func BenchmarkCatalogWrites(b *testing.B) {
	s := openTest(b, nil)
	defer s.Close()
	backendtest.BenchCatalogWrites(b, s, backendtest.CatalogBenchJobs(b))
}
