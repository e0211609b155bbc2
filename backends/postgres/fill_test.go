package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// TestLoadedRowsFillTheirPages: status rows a store copy loads fill their
// pages (they are history, seldom written again), where rows written by
// traffic leave the room of the table's fill factor for their updates
// (migration 21); the fill factor is the same after the load.
func TestLoadedRowsFillTheirPages(t *testing.T) {
	ctx := context.Background()
	b, err := Open(ctx, Config{DSN: testDSN(t), Schema: freshSchema(t)})
	require.NoError(t, err)
	defer b.Close()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	items := make([]backends.DumpItem, 4000)
	for i := range items {
		items[i].Row = &backends.StatusRow{
			RowKey: backends.RowKey{Dataset: "d", DataID: fmt.Sprint(i), Job: "", Role: backends.RoleOutput},
			Status: backends.StatusReady, UpdatedAt: now, PrevStatus: backends.StatusNone,
		}
	}
	require.NoError(t, b.Load(ctx, backends.DumpRows, items))

	fill := func() string {
		var ff string
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT coalesce((SELECT option_value FROM pg_options_to_table(reloptions) WHERE option_name = 'fillfactor'), '100')
FROM pg_class WHERE oid = 'status_rows'::regclass`).Scan(&ff))
		return ff
	}
	require.Equal(t, "50", fill(), "the table's fill factor is kept")
	// The same rows written as traffic writes them, into a table of the
	// same fill factor.
	_, err = b.pool.Exec(ctx, `CREATE TABLE traffic (LIKE status_rows) WITH (fillfactor = 50);
INSERT INTO traffic SELECT * FROM status_rows`)
	require.NoError(t, err)
	var loaded, written int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT pg_relation_size('status_rows'), pg_relation_size('traffic')`).Scan(&loaded, &written))
	require.Less(t, float64(loaded), 0.7*float64(written), "loaded %d bytes, written %d", loaded, written)
}
