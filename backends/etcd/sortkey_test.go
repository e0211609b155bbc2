package etcd

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// TestDataIDOfSortKey: the dataid a deleteJob blocker names is the row's,
// a multi-dimensional one's values joined again (its key holds each
// value's length).
func TestDataIDOfSortKey(t *testing.T) {
	for _, id := range []string{"7", "2026-11-08", "2026-11-08|eu", "2026-11-08|eu|10|x"} {
		require.Equal(t, id, dataIDOfSortKey(backends.SortKey(id)))
	}
}
