package memory

import (
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
)

func newStore(_ *testing.T, clock backends.Clock) backends.Store { return Open(clock) }

func TestConformance(t *testing.T) {
	backendtest.Run(t, newStore)
}

func TestConcurrency(t *testing.T) {
	backendtest.RunConcurrency(t, newStore)
}
