package memory

import (
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
)

// TestSharedCatalog: two engines, as two servers, on one backend race
// catalog changes.
func TestSharedCatalog(t *testing.T) {
	backendtest.RunSharedCatalog(t, func(*testing.T) (backends.Backend, backends.Backend) {
		b := New()
		return b, b
	})
}
