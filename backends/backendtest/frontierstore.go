package backendtest

import (
	"context"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

// FrontierStoredWithCatalog checks a Backend's side of schedules: the
// frontier a catalog change carries (PutDataset, PutJob) is stored in
// that change's transaction, so a refused change leaves no frontier
// behind and a stored one is never without it; and two frontiers of a
// job at one dataid merge when one is taken (Tx.DropCandidate). b is a
// fresh backend.
func FrontierStoredWithCatalog(t *testing.T, b backends.Backend) {
	ctx := context.Background()
	due := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)
	frontier := func(id string) *backends.Candidate {
		return &backends.Candidate{Job: "gen", DataID: id, Frontier: true, NotBefore: due}
	}
	count := func() int {
		t.Helper()
		n, err := b.CountCandidates(ctx, "gen")
		require.NoError(t, err)
		return n
	}
	version := func() int64 {
		t.Helper()
		_, _, v, err := b.VersionedCatalog(ctx)
		require.NoError(t, err)
		return v
	}

	v0 := version()
	_, v1, err := b.PutDataset(ctx, backends.Dataset{ID: "h"}, nil, v0)
	require.NoError(t, err)
	// Refused changes store no frontier.
	_, _, err = b.PutJob(ctx, backends.Job{ID: "gen", Output: "h", MaxAttempts: 3}, true, frontier("2026-01-01T00"), v0)
	require.ErrorIs(t, err, backends.ErrCatalogChanged)
	_, _, err = b.PutDataset(ctx, backends.Dataset{ID: "h", Description: "x"}, []backends.Candidate{*frontier("2026-01-01T00")}, v0)
	require.ErrorIs(t, err, backends.ErrCatalogChanged)
	require.Zero(t, count(), "a refused catalog change left a frontier")

	// Stored changes store theirs.
	_, v2, err := b.PutJob(ctx, backends.Job{ID: "gen", Output: "h", MaxAttempts: 3}, true, frontier("2026-01-01T00"), v1)
	require.NoError(t, err)
	require.Equal(t, 1, count())
	_, _, err = b.PutDataset(ctx, backends.Dataset{ID: "h", Description: "x"}, []backends.Candidate{*frontier("2026-01-01T00")}, v2)
	require.NoError(t, err)
	_, _, err = b.PutDataset(ctx, backends.Dataset{ID: "h", Description: "y"}, []backends.Candidate{*frontier("2026-01-01T03")}, version())
	require.NoError(t, err)

	// Hidden until due; then the first taken merges its twin at that dataid.
	var taken []string
	take := func(now time.Time) {
		t.Helper()
		require.NoError(t, b.Update(ctx, func(tx backends.Tx) error {
			cs, err := tx.NextCandidates(ctx, "gen", 1, now)
			if err != nil || len(cs) == 0 {
				return err
			}
			c := cs[0]
			require.True(t, c.Frontier)
			taken = append(taken, c.DataID)
			return tx.DropCandidate(ctx, c)
		}))
	}
	take(due.Add(-time.Second))
	require.Empty(t, taken, "a frontier was taken before its due time")
	take(due)
	require.Equal(t, []string{"2026-01-01T00"}, taken)
	require.Equal(t, 1, count(), "the twin frontier at the taken dataid was not merged")
	take(due)
	require.Equal(t, []string{"2026-01-01T00", "2026-01-01T03"}, taken)
	require.Zero(t, count())

	frontierTwinReserved(t, b, frontier, version, count)
}

// frontierTwinReserved: a twin frontier dropped while the other is
// reserved by the same transaction (a claim round at its job's limit
// keeps the one it could not take) leaves the reserved one: the schedule
// keeps its frontier.
func frontierTwinReserved(t *testing.T, b backends.Backend, frontier func(string) *backends.Candidate, version func() int64, count func() int) {
	ctx := context.Background()
	due := frontier("").NotBefore
	for _, desc := range []string{"a", "b"} {
		_, _, err := b.PutDataset(ctx, backends.Dataset{ID: "h", Description: desc}, []backends.Candidate{*frontier("2026-01-01T05")}, version())
		require.NoError(t, err)
	}
	reservedBoth := false
	require.NoError(t, b.Update(ctx, func(tx backends.Tx) error {
		cs, err := tx.NextCandidates(ctx, "gen", 2, due)
		if err != nil {
			return err
		}
		require.NotEmpty(t, cs)
		if len(cs) < 2 {
			return nil // one frontier per dataid here: nothing to drop
		}
		reservedBoth = true
		return tx.DropCandidate(ctx, cs[1])
	}))
	if reservedBoth {
		require.Equal(t, 1, count(), "dropping a twin took the frontier this transaction kept reserved")
	} else {
		require.GreaterOrEqual(t, count(), 1)
	}
}
