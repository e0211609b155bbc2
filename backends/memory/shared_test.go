package memory

import (
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
	"github.com/chunklock/chunklock/backends/engine"
)

// TestSharedCatalog: two engines, as two servers, on one backend race
// catalog changes.
func TestSharedCatalog(t *testing.T) {
	backendtest.RunSharedCatalog(t, func(_ *testing.T, clock backends.Clock) (backends.Store, backends.Store) {
		b := New()
		return engine.New(b, clock), engine.New(b, clock)
	})
}
