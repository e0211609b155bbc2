package backends_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
	"github.com/chunklock/chunklock/backends/memory"
	"github.com/stretchr/testify/require"
)

// versioned numbers the catalog of a memory backend, so that the engine
// caches it (catalogcache.go). The memory backend runs one transaction at
// a time, so the version a transaction reads is exact.
type versioned struct {
	*memory.Backend
	version atomic.Int64
	loads   atomic.Int64 // VersionedCatalog calls
}

func (v *versioned) PutDataset(ctx context.Context, d backends.Dataset) (backends.Dataset, error) {
	d, err := v.Backend.PutDataset(ctx, d)
	if err == nil {
		v.version.Add(1)
	}
	return d, err
}

func (v *versioned) PutJob(ctx context.Context, j backends.Job, enqueue bool) (backends.Job, error) {
	j, err := v.Backend.PutJob(ctx, j, enqueue)
	if err == nil {
		v.version.Add(1)
	}
	return j, err
}

// VersionedCatalog reads the version before the catalog: a change in
// between pairs a newer catalog with an older version, which the next
// transaction finds stale, never the reverse.
func (v *versioned) VersionedCatalog(ctx context.Context) ([]backends.Dataset, []backends.Job, int64, error) {
	v.loads.Add(1)
	version := v.version.Load()
	ds, js, err := v.Backend.Catalog(ctx)
	return ds, js, version, err
}

func (v *versioned) Update(ctx context.Context, fn func(backends.Tx) error) error {
	return v.Backend.Update(ctx, func(tx backends.Tx) error { return fn(versionedTx{tx, v}) })
}

type versionedTx struct {
	backends.Tx
	v *versioned
}

func (t versionedTx) CatalogVersion(context.Context) (int64, error) { return t.v.version.Load(), nil }

var (
	_ backends.CatalogVersioner = (*versioned)(nil)
	_ backends.CatalogVersionTx = versionedTx{}
)

// TestCachedCatalogConformance runs the conformance suite on an engine
// that keeps the catalog in memory.
func TestCachedCatalogConformance(t *testing.T) {
	backendtest.Run(t, func(_ *testing.T, clock backends.Clock) backends.Store {
		return backends.New(&versioned{Backend: memory.New()}, clock)
	})
}

// TestCachedCatalogAcrossEngines: two engines (servers) share one backend.
// A change made through one governs the next operation of the other, and
// operations that do not change the catalog do not read it again.
func TestCachedCatalogAcrossEngines(t *testing.T) {
	ctx := context.Background()
	b := &versioned{Backend: memory.New()}
	clock := backends.NewFakeClock(time.Time{})
	one, two := backends.New(b, clock), backends.New(b, clock)
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
