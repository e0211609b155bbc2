package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/postgres/internal/sqldb"
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

// TestLiveClaimsReadTheLeaseIndex: the queries that find live or expired
// claims can read status_rows_expiry, whose predicate names the lease
// only (migration 21): the listing of live claims (ListRows for RUNNING
// OUTPUT rows), the reaper's ExpiredClaims and the live-claim count of a
// slot check, on a table of 20,000 ended rows and 3 live claims.
func TestLiveClaimsReadTheLeaseIndex(t *testing.T) {
	ctx := context.Background()
	b, err := Open(ctx, Config{DSN: testDSN(t), Schema: freshSchema(t)})
	require.NoError(t, err)
	defer b.Close()
	now := time.Now().UTC()
	items := make([]backends.DumpItem, 20003)
	for i := range items {
		r := &backends.StatusRow{RowKey: backends.RowKey{Dataset: "d", DataID: fmt.Sprint(i), Job: "j", Role: backends.RoleOutput},
			Status: backends.StatusReady, UpdatedAt: now, PrevStatus: backends.StatusNone}
		if i >= 20000 {
			r.Status, r.LeaseExpiresAt, r.Token = backends.StatusRunning, now.Add(time.Hour), fmt.Sprint("t", i)
		}
		items[i].Row = r
	}
	require.NoError(t, b.Load(ctx, backends.DumpRows, items))
	_, err = b.pool.Exec(ctx, "ANALYZE status_rows")
	require.NoError(t, err)
	conn, err := b.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	plan := func(sql string, args ...any) string {
		t.Helper()
		rows, err := conn.Query(ctx, "EXPLAIN "+sql, append([]any{pgx.QueryExecModeExec}, args...)...)
		require.NoError(t, err)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return strings.Join(lines, "\n")
	}
	listing := func(leased bool) string {
		return plan(sqldb.ListRows, nil, nil, "OUTPUT", "RUNNING", nil, nil, false, "", "", "", "", "", leased, 1001)
	}
	require.Contains(t, listing(true), "status_rows_expiry")
	require.NotContains(t, listing(false), "status_rows_expiry", "the index needs the lease named")
	require.Contains(t, plan(sqldb.ExpiredClaims, time.Now(), 100), "status_rows_expiry")
	require.Contains(t, plan(countLiveSQL, []string{"j"}, time.Now()), "status_rows_expiry")

	page, err := b.ListRows(ctx, backends.ChunkFilter{Role: backends.RoleOutput, Status: backends.StatusRunning})
	require.NoError(t, err)
	require.Len(t, page.Rows, 3, "every live claim listed")
}
