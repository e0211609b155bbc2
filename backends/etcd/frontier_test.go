package etcd

import (
	"context"
	"testing"

	"github.com/chunklock/chunklock/backends/backendtest"
	"github.com/stretchr/testify/require"
)

func TestFrontierStoredWithCatalog(t *testing.T) {
	b, err := OpenClient(context.Background(), testClient, freshConfig())
	require.NoError(t, err)
	defer b.Close()
	backendtest.FrontierStoredWithCatalog(t, b)
}
