package postgres

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
)

// TestSharedCatalog: two stores, as two servers, on one schema race
// catalog changes.
func TestSharedCatalog(t *testing.T) {
	backendtest.RunSharedCatalog(t, func(t *testing.T) (backends.Backend, backends.Backend) {
		cfg := Config{DSN: testDSN(t), Schema: freshSchema(t)}
		one, err := Open(context.Background(), cfg)
		require.NoError(t, err)
		two, err := Open(context.Background(), cfg)
		require.NoError(t, err)
		return one, two
	})
}
