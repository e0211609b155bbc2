package etcd

import (
	"context"
	"testing"

	"github.com/chunklock/chunklock/backends/backendtest"
	"github.com/stretchr/testify/require"
)

func TestFrontierStoredWithCatalog(t *testing.T) {
	b, err := NewBackend(context.Background(), testClient, freshConfig(nil))
	require.NoError(t, err)
	defer b.Close()
	backendtest.FrontierStoredWithCatalog(t, b)
}
