package etcd

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
)

// TestSharedCatalog: two stores, as two servers, under one prefix race
// catalog changes.
func TestSharedCatalog(t *testing.T) {
	backendtest.RunSharedCatalog(t, func(t *testing.T) (backends.Backend, backends.Backend) {
		cfg := freshConfig()
		one, err := OpenClient(context.Background(), testClient, cfg)
		require.NoError(t, err)
		two, err := OpenClient(context.Background(), testClient, cfg)
		require.NoError(t, err)
		return one, two
	})
}
