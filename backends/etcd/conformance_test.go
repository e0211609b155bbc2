package etcd

import (
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
)

// factory opens each test's backend under a fresh prefix of the shared
// embedded member; the suite closes it.
func factory(t *testing.T) backends.Backend {
	b, err := OpenClient(t.Context(), testClient, freshConfig())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConformance(t *testing.T) {
	backendtest.Run(t, factory)
}

// TestConformanceConcurrency runs the contention tests at the suite's
// sizes (32 workers, 2,000 chunks), or 1,000 chunks under -race.
func TestConformanceConcurrency(t *testing.T) {
	var opts []backendtest.Option
	if raceEnabled {
		opts = append(opts, backendtest.WithChunks(1000))
	}
	backendtest.RunConcurrency(t, factory, opts...)
}
