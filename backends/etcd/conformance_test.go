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
