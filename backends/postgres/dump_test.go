package postgres

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
	"github.com/chunklock/chunklock/backends/memory"
)

// TestCopy: memory -> PostgreSQL -> memory, PostgreSQL -> PostgreSQL ->
// PostgreSQL, and PostgreSQL -> memory -> PostgreSQL (a global fence
// counter laid on every chunk, then taken back as the largest).
func TestCopy(t *testing.T) {
	testDSN(t)
	mem := func(*testing.T) backends.Backend { return memory.New() }
	t.Run("memory", func(t *testing.T) { backendtest.RunCopy(t, mem, factory) })
	t.Run("postgres", func(t *testing.T) { backendtest.RunCopy(t, factory, factory) })
	t.Run("to memory", func(t *testing.T) { backendtest.RunCopy(t, factory, mem) })
	t.Run("fence floor to memory", func(t *testing.T) { backendtest.RunCopyFenceFloor(t, factory, mem) })
}

// TestDumpCoversEveryTable fails while the migrations create a table or
// a sequence that DumpCovers does not name: a store copy would leave it
// behind. When it fails, add the table to a dump kind (dump.go) or, for
// one of no use in a copy, name it with kind "".
func TestDumpCoversEveryTable(t *testing.T) {
	testDSN(t)
	b := factory(t).(*Backend)
	defer b.Close()
	objs, err := b.schemaObjects(context.Background())
	require.NoError(t, err)
	require.Contains(t, objs, "status_rows", "the schema's tables are listed")
	covers := b.DumpCovers()
	for _, o := range objs {
		require.Contains(t, covers, o, "table or sequence %s is in no dump kind (DumpCovers, dump.go)", o)
	}
}
