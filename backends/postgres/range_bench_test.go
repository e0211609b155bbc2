package postgres

import (
	"testing"

	"github.com/chunklock/chunklock/backends/backendtest"
)

// BenchmarkRanges times publishRange, holdRange and resubmitRange over
// 10,000 daily dataids (see backendtest.BenchRanges).
//
//	go test ./backends/postgres/ -run '^$' -bench Ranges -benchtime 3x
func BenchmarkRanges(b *testing.B) {
	s := openTest(b, nil)
	defer s.Close()
	backendtest.BenchRanges(b, s)
}
