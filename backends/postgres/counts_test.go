package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
)

// TestCountsFoldAndRecount: folding the deltas leaves every count as it
// was and the delta table empty; a store whose counts are lost (made
// before migration 0013) gets them back from its rows with the
// migration's recount.
func TestCountsFoldAndRecount(t *testing.T) {
	ctx := context.Background()
	b, err := Open(ctx, Config{DSN: testDSN(t), Schema: freshSchema(t)})
	require.NoError(t, err)
	s := engine.New(b)
	t.Cleanup(func() { _ = s.Close() })
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "src", Location: "/src/{dataid}"})
	require.NoError(t, err)
	for i := range 30 {
		_, err := s.Publish(ctx, "src", fmt.Sprint(i))
		require.NoError(t, err)
	}
	for i := range 5 {
		_, err := s.Hold(ctx, "src", fmt.Sprint(i), "frozen")
		require.NoError(t, err)
	}
	want := backends.ChunkCount{Dataset: "src", Total: 30, Ready: 25, Hold: 5}
	got, err := s.ChunkCounts(ctx, "src")
	require.NoError(t, err)
	require.Equal(t, want, got)

	require.NoError(t, b.CompactCounts(ctx))
	var deltas int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM chunk_count_deltas").Scan(&deltas))
	require.Zero(t, deltas, "every delta folded")
	got, err = s.ChunkCounts(ctx, "src")
	require.NoError(t, err)
	require.Equal(t, want, got, "the same counts after the fold")

	_, err = b.pool.Exec(ctx, "TRUNCATE chunk_counts, chunk_count_deltas")
	require.NoError(t, err)
	got, err = s.ChunkCounts(ctx, "src")
	require.NoError(t, err)
	require.Equal(t, backends.ChunkCount{Dataset: "src"}, got, "counts lost")
	_, err = b.pool.Exec(ctx, recountSQL(t))
	require.NoError(t, err)
	got, err = s.ChunkCounts(ctx, "src")
	require.NoError(t, err)
	require.Equal(t, want, got, "recounted from the rows")
}

// recountSQL is the recount of migration 0013: its last statement.
func recountSQL(t *testing.T) string {
	all, err := migrations()
	require.NoError(t, err)
	for _, m := range all {
		if i := strings.LastIndex(m.sql, "INSERT INTO chunk_counts "); m.version == 13 && i >= 0 {
			return m.sql[i:]
		}
	}
	t.Fatal("migration 13 has no recount")
	return ""
}
