package etcd

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
)

// TestLimitedClaimRoundAsksNoMore: a findNext round of a job with a
// maxConcurrent sends etcd as many requests as one of a job without: its
// slot records come with the round's rows, and the catalog version it
// reads twice (for its slot records, then for the engine's catalog check)
// is asked once.
func TestLimitedClaimRoundAsksNoMore(t *testing.T) {
	ctx := context.Background()
	b, err := OpenClient(ctx, testClient, freshConfig())
	require.NoError(t, err)
	s := engine.New(b)
	t.Cleanup(func() { s.Close() })
	for _, d := range []string{"src", "free-out", "limited-out"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: d})
		require.NoError(t, err)
	}
	_, err = s.UpsertJob(ctx, backends.Job{ID: "free", Output: "free-out", Inputs: []string{"src"}})
	require.NoError(t, err)
	_, err = s.UpsertJob(ctx, backends.Job{ID: "limited", Output: "limited-out", Inputs: []string{"src"}, MaxConcurrent: 32})
	require.NoError(t, err)
	for i := range 32 {
		_, err := s.Publish(ctx, "src", fmt.Sprint(i+1))
		require.NoError(t, err)
	}
	// The backend's own background work (the event mover and the counts'
	// folds, kicked by each commit) is counted apart (bgRequests); a
	// round's count is the fewest over ten rounds, as a commit that
	// conflicts with that work is run again.
	round := func(job string) int64 {
		fewest := int64(-1)
		for range 10 {
			before := b.requests.Load()
			c, err := s.FindNext(ctx, job, "e")
			require.NoError(t, err)
			require.NotNil(t, c)
			if n := b.requests.Load() - before; fewest < 0 || n < fewest {
				fewest = n
			}
		}
		return fewest
	}
	round("limited") // the first round seeds the job's record
	free, limited := round("free"), round("limited")
	t.Logf("one round: without a limit %d requests, with %d", free, limited)
	require.LessOrEqual(t, limited, free, "requests of one findNext round: without a limit %d, with %d", free, limited)
}
