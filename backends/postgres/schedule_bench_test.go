package postgres

import (
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
)

// BenchmarkFindNextSchedule compares findNext on an hourly job without
// inputs whose schedule started ten years ago with findNext on a
// one-input job (see backendtest.BenchFindNextSchedule):
//
//	go test ./backends/postgres/ -run '^$' -bench FindNextSchedule -benchtime 2000x
func BenchmarkFindNextSchedule(b *testing.B) {
	backendtest.BenchFindNextSchedule(b, func(b *testing.B) backends.Store {
		s := openTest(b, nil)
		b.Cleanup(func() { _ = s.Close() })
		return s
	})
}
