package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
	"github.com/stretchr/testify/require"
)

// versioned counts the catalog reads of a memory backend.
type versioned struct {
	*memory.Backend
	loads atomic.Int64 // VersionedCatalog calls
}

func (v *versioned) VersionedCatalog(ctx context.Context) ([]backends.Dataset, []backends.Job, int64, error) {
	v.loads.Add(1)
	return v.Backend.VersionedCatalog(ctx)
}

// TestCachedCatalogConformance runs the conformance suite on an engine
// that keeps the catalog in memory.
func TestCachedCatalogConformance(t *testing.T) {
	backendtest.Run(t, func(*testing.T) backends.Backend {
		return &versioned{Backend: memory.New()}
	})
}

// TestCachedCatalogAcrossEngines: two engines (servers) share one backend.
// A change made through one governs the next operation of the other, and
// operations that do not change the catalog do not read it again.
func TestCachedCatalogAcrossEngines(t *testing.T) {
	ctx := context.Background()
	b := &versioned{Backend: memory.New()}
	clock := backends.NewFakeClock(time.Time{})
	one, two := engine.New(b, engine.WithClock(clock)), engine.New(b, engine.WithClock(clock))
	for _, d := range []string{"src", "out"} {
		_, err := one.UpsertDataset(ctx, backends.Dataset{ID: d})
		require.NoError(t, err)
	}
	job := backends.Job{ID: "j", Inputs: []string{"src"}, Output: "out"}
	_, err := one.UpsertJob(ctx, job)
	require.NoError(t, err)
	for _, id := range []string{"1", "2", "3", "4", "5"} {
		_, err := one.Publish(ctx, "src", id)
		require.NoError(t, err)
	}

	loads := b.loads.Load()
	for range 2 {
		c, err := two.FindNext(ctx, "j", "two")
		require.NoError(t, err)
		require.NoError(t, two.Complete(ctx, c.Token))
	}
	require.Equal(t, loads+1, b.loads.Load(), "server two read the catalog once for four operations")

	job.Paused = true
	_, err = one.UpsertJob(ctx, job)
	require.NoError(t, err)
	c, err := two.FindNext(ctx, "j", "two")
	require.NoError(t, err)
	require.Nil(t, c, "a job paused through another server claims nothing")

	job.Paused = false
	_, err = one.UpsertJob(ctx, job)
	require.NoError(t, err)
	c, err = two.FindNext(ctx, "j", "two")
	require.NoError(t, err)
	require.NotNil(t, c, "unpaused through another server: server two claims again")
	require.Equal(t, "3", c.DataID)

	// A token of a job whose output changed meanwhile is stale on both.
	_, err = one.UpsertDataset(ctx, backends.Dataset{ID: "other"})
	require.NoError(t, err)
	job.Output = "other"
	_, err = one.UpsertJob(ctx, job)
	require.NoError(t, err)
	err = two.Complete(ctx, c.Token)
	require.Equal(t, backends.CodeStaleClaim, backends.CodeOf(err), "%v", err)
}
