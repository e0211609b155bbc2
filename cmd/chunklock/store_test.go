package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEmbeddedStoreStaysOnLoopback(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"127.0.0.1:2379", "127.0.0.1:0", "localhost:1", "[::1]:2379"} {
		require.NoError(t, loopbackAddr(ok), ok)
	}
	for _, bad := range []string{"0.0.0.0:2379", ":2379", "10.1.2.3:2379", "etcd.internal:2379", "127.0.0.1"} {
		require.Error(t, loopbackAddr(bad), bad)
	}
}
