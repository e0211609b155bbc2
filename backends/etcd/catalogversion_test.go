package etcd

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// TestPublishRacingNewConsumer: chunks published on one server while
// another creates their consumer job are all claimable by the job through
// findNext: either the publish saw the job and added its candidate, or it
// committed first and the job's backfill found the chunk READY.
func TestPublishRacingNewConsumer(t *testing.T) {
	ctx := context.Background()
	const iterations, chunks = 40, 3
	for i := range iterations {
		cfg := freshConfig()
		a, b := openCfg(t, cfg, nil), openCfg(t, cfg, nil)
		for _, d := range []string{"src", "out"} {
			_, err := a.UpsertDataset(ctx, backends.Dataset{ID: d})
			require.NoError(t, err)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			for c := 1; c <= chunks; c++ {
				_, err := a.Publish(ctx, "src", fmt.Sprint(c))
				require.NoError(t, err)
			}
		})
		wg.Go(func() {
			_, err := b.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"src"}, Output: "out"})
			require.NoError(t, err)
		})
		wg.Wait()
		require.Equal(t, seq(chunks), claimAll(t, a, "j"), "iteration %d", i)
		require.NoError(t, a.Close())
		require.NoError(t, b.Close())
	}
}

// TestCatalogVersionGuardsCommits: every dataset or job change makes a new
// catalog version, read with the catalog at one revision; a transaction
// that read the version cannot commit after a catalog change, and runs
// again on the new version.
func TestCatalogVersionGuardsCommits(t *testing.T) {
	ctx := context.Background()
	b, err := OpenClient(ctx, testClient, freshConfig())
	require.NoError(t, err)
	defer b.Close()
	other, err := OpenClient(ctx, testClient, b.cfg)
	require.NoError(t, err)
	defer other.Close()

	_, _, v0, err := b.VersionedCatalog(ctx)
	require.NoError(t, err)
	_, put, err := other.PutDataset(ctx, backends.Dataset{ID: "src"}, nil, v0)
	require.NoError(t, err)
	ds, _, v1, err := b.VersionedCatalog(ctx)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.Greater(t, v1, v0)
	require.Equal(t, v1, put, "PutDataset returns the new version")
	_, _, err = other.PutDataset(ctx, backends.Dataset{ID: "out"}, nil, v0)
	require.ErrorIs(t, err, backends.ErrCatalogChanged, "a change validated against an older catalog is refused")
	_, v1, err = other.PutDataset(ctx, backends.Dataset{ID: "out"}, nil, v1)
	require.NoError(t, err)
	_, _, err = other.PutJob(ctx, backends.Job{ID: "j", Inputs: []string{"src"}, Output: "out"}, true, nil, v0)
	require.ErrorIs(t, err, backends.ErrCatalogChanged)
	_, put, err = other.PutJob(ctx, backends.Job{ID: "j", Inputs: []string{"src"}, Output: "out"}, true, nil, v1)
	require.NoError(t, err)
	_, js, v2, err := b.VersionedCatalog(ctx)
	require.NoError(t, err)
	require.Len(t, js, 1)
	require.Greater(t, v2, v1)
	require.Equal(t, v2, put)

	var seen []int64
	err = b.Update(ctx, func(tx backends.Tx) error {
		v, err := tx.CatalogVersion(ctx)
		if err != nil {
			return err
		}
		seen = append(seen, v)
		if len(seen) == 1 {
			// Another server changes the catalog before this one commits.
			if _, _, err := other.PutDataset(ctx, backends.Dataset{ID: "src", Location: "/new/{dataid}"}, nil, v2); err != nil {
				return err
			}
		}
		return tx.PutRow(ctx, backends.StatusRow{RowKey: backends.RowKey{Dataset: "src", DataID: "1", Role: backends.RoleOutput}, Status: backends.StatusReady})
	})
	require.NoError(t, err)
	_, _, v3, err := b.VersionedCatalog(ctx)
	require.NoError(t, err)
	require.Equal(t, []int64{v2, v3}, seen, "the first commit failed and the second attempt saw the new version")
}
