package etcd

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
)

// factory opens each test's backend under a fresh prefix of the shared
// embedded member; the suite closes it. When the test ends, its out/ keys
// must be its OUTPUT rows', one each (outputs.go).
func factory(t *testing.T) backends.Backend {
	cfg := freshConfig()
	b, err := OpenClient(t.Context(), testClient, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			want, have := outIndexOf(t, cfg.Prefix)
			require.Equal(t, want, have, "out/ keys against the OUTPUT rows")
		}
	})
	return b
}

// TestConformance runs the conformance suite. Under -race the in-process
// etcd server makes a model sequence about 28 s (PostgreSQL's takes 4), so
// the race build runs three of the model's sequences; scripts/test.sh runs
// all ten again without the race detector (CHUNKLOCK_MODEL_SEQUENCES still
// sets the count in either build).
func TestConformance(t *testing.T) {
	var opts []backendtest.Option
	if raceEnabled {
		opts = append(opts, backendtest.WithModelSequences(3))
	}
	backendtest.Run(t, factory, opts...)
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
