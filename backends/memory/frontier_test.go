package memory

import (
	"testing"

	"github.com/chunklock/chunklock/backends/backendtest"
)

func TestFrontierStoredWithCatalog(t *testing.T) {
	backendtest.FrontierStoredWithCatalog(t, New())
}
