package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// TestConcurrentProducersOfOneDataset: two servers define two jobs with one
// output at once; exactly one of them is stored, the other is refused with
// ALREADY_EXISTS, whatever the interleaving.
func TestConcurrentProducersOfOneDataset(t *testing.T) {
	ctx := context.Background()
	for i := range 25 {
		cfg := freshConfig()
		a, b := openCfg(t, cfg, nil), openCfg(t, cfg, nil)
		for _, d := range []string{"src", "out"} {
			_, err := a.UpsertDataset(ctx, backends.Dataset{ID: d})
			require.NoError(t, err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for k, s := range []backends.Store{a, b} {
			wg.Go(func() {
				_, errs[k] = s.UpsertJob(ctx, backends.Job{ID: fmt.Sprint("j", k), Inputs: []string{"src"}, Output: "out"})
			})
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else {
				require.ErrorIs(t, err, backends.ErrAlreadyExists, "iteration %d", i)
			}
		}
		require.Equal(t, 1, ok, "iteration %d: %v", i, errs)
		jobs, err := a.Jobs(ctx)
		require.NoError(t, err)
		require.Len(t, jobs, 1, "iteration %d", i)
	}
}

// TestProducerMovesWithOutput: a job that changes its output frees the old
// dataset for another producer and holds the new one.
func TestProducerMovesWithOutput(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	for _, d := range []string{"src", "x", "y"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: d})
		require.NoError(t, err)
	}
	_, err := s.UpsertJob(ctx, backends.Job{ID: "j1", Inputs: []string{"src"}, Output: "x"})
	require.NoError(t, err)
	_, err = s.UpsertJob(ctx, backends.Job{ID: "j1", Inputs: []string{"src"}, Output: "y"})
	require.NoError(t, err)
	_, err = s.UpsertJob(ctx, backends.Job{ID: "j2", Inputs: []string{"src"}, Output: "x"})
	require.NoError(t, err, "x has no producer any more")
	_, err = s.UpsertJob(ctx, backends.Job{ID: "j2", Inputs: []string{"src"}, Output: "y"})
	require.ErrorIs(t, err, backends.ErrAlreadyExists)
}

// TestProducersOfAnOlderStore: a store written before producers entries
// existed gets them when a backend opens it, so that the single-producer
// guard covers its jobs too.
func TestProducersOfAnOlderStore(t *testing.T) {
	ctx := context.Background()
	cfg := freshConfig()
	for _, j := range []backends.Job{
		{ID: "j1", Inputs: []string{"src"}, Output: "x"},
		{ID: "j2", Inputs: []string{"x"}, Output: "y"},
	} {
		v, err := json.Marshal(j)
		require.NoError(t, err)
		_, err = testClient.Put(ctx, cfg.Prefix+"jobs/"+j.ID, string(v))
		require.NoError(t, err)
	}
	b, err := OpenClient(ctx, testClient, cfg)
	require.NoError(t, err)
	defer b.Close()
	for ds, job := range map[string]string{"x": "j1", "y": "j2"} {
		r, err := testClient.Get(ctx, b.producerKey(ds))
		require.NoError(t, err)
		require.Len(t, r.Kvs, 1, "producer of %s", ds)
		require.Equal(t, job, string(r.Kvs[0].Value))
	}
	_, _, version, err := b.VersionedCatalog(ctx)
	require.NoError(t, err)
	_, _, err = b.PutJob(ctx, backends.Job{ID: "j3", Inputs: []string{"src"}, Output: "x"}, false, nil, version)
	require.ErrorIs(t, err, backends.ErrAlreadyExists)
}
