package memory

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
)

func TestCopy(t *testing.T) {
	backendtest.RunCopy(t, func(*testing.T) backends.Backend { return New() }, func(*testing.T) backends.Backend { return New() })
}

// TestDumpCoversEveryTable fails while Backend has a field (a table)
// that DumpCovers does not name: a store copy would leave it behind.
func TestDumpCoversEveryTable(t *testing.T) {
	covers := New().DumpCovers()
	typ := reflect.TypeOf(Backend{})
	for i := 0; i < typ.NumField(); i++ {
		require.Contains(t, covers, typ.Field(i).Name, "Backend.%s is in no dump kind (DumpCovers, dump.go)", typ.Field(i).Name)
	}
}
