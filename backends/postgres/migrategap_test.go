package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// TestMigrationBelowNewestApplied: a store whose schema has a migration
// numbered above one it lacks (both made side by side, the higher landing
// first) gets the lower one when a server opens it, instead of skipping
// it as below the schema's version.
func TestMigrationBelowNewestApplied(t *testing.T) {
	ctx := context.Background()
	schema := freshSchema(t)
	all, err := migrations()
	require.NoError(t, err)
	var skipped migration
	for _, m := range all {
		if m.version == 12 {
			skipped = m
		}
	}
	require.NotZero(t, skipped.version, "migration 12 exists")
	conn, err := admin.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "SET search_path TO "+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	_, err = conn.Exec(ctx, createMigrationsTable)
	require.NoError(t, err)
	for _, m := range all {
		if m.version == skipped.version {
			continue
		}
		_, err := conn.Exec(ctx, m.sql)
		require.NoError(t, err, m.name)
		_, err = conn.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name)
		require.NoError(t, err)
	}
	_, err = conn.Exec(ctx, "RESET search_path")
	require.NoError(t, err)

	s, err := openStore(ctx, Config{DSN: testDSN(t), Schema: schema}, nil)
	require.NoError(t, err)
	defer s.Close()
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "d", Location: "/d/{dataid}"})
	require.NoError(t, err, "the store works with migration %s applied at open", skipped.name)
	var n int
	require.NoError(t, admin.pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema}.Sanitize()+".schema_migrations").Scan(&n))
	require.Equal(t, len(all), n, "every migration is recorded")
}
