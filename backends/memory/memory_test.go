package memory

import (
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
)

func newBackend(*testing.T) backends.Backend { return New() }

func TestConformance(t *testing.T) {
	backendtest.Run(t, newBackend)
}

func TestConcurrency(t *testing.T) {
	backendtest.RunConcurrency(t, newBackend)
}
