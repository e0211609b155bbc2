package memory

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
)

// TestTakesPostgresPaths: the reference backend takes the engine's paths
// that PostgreSQL takes, so that the conformance suite on memory exercises
// what production runs: its transactions count live claims (LiveCounter)
// rather than list slot holders (HolderTx), and serve operations in
// batches.
func TestTakesPostgresPaths(t *testing.T) {
	b := New()
	require.Greater(t, b.Limits().MaxBatch, 1, "memory serves one operation per transaction")
	require.NoError(t, b.Update(context.Background(), func(tx backends.Tx) error {
		_, counts := tx.(backends.LiveCounter)
		_, holders := tx.(backends.HolderTx)
		require.True(t, counts, "memory's Tx does not count live claims")
		require.False(t, holders, "memory's Tx keeps the holder lists etcd needs")
		return nil
	}))
}

// gated counts the transactions of a memory backend and holds them at a
// gate while it is not nil.
type gated struct {
	*Backend
	updates atomic.Int64
	gate    chan struct{}
}

func (g *gated) Update(ctx context.Context, fn func(backends.Tx) error) error {
	g.updates.Add(1)
	if g.gate != nil {
		<-g.gate
	}
	return g.Backend.Update(ctx, fn)
}

// TestFindNextBatches: findNext calls queued behind a transaction are
// served several per transaction, as on PostgreSQL; each chunk is claimed
// once, within the job's limit of live claims.
func TestFindNextBatches(t *testing.T) {
	ctx := context.Background()
	b := &gated{Backend: New()}
	s := engine.New(b, engine.WithClock(backends.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	for _, d := range []string{"src", "out"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: d})
		require.NoError(t, err)
	}
	const n, limit = 20, 15
	_, err := s.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"src"}, Output: "out", MaxConcurrent: limit})
	require.NoError(t, err)
	for i := range n {
		_, err := s.Publish(ctx, "src", fmt.Sprint(i))
		require.NoError(t, err)
	}

	b.gate = make(chan struct{})
	before := b.updates.Load()
	claims := make([]*backends.Claim, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	wg.Go(func() { claims[0], errs[0] = s.FindNext(ctx, "j", "exec-0") })
	require.Eventually(t, func() bool { return b.updates.Load() == before+1 }, time.Minute, time.Millisecond,
		"the first call waits at the gate, so the next ones queue")
	for i := 1; i < n; i++ {
		wg.Go(func() { claims[i], errs[i] = s.FindNext(ctx, "j", fmt.Sprint("exec-", i)) })
		time.Sleep(5 * time.Millisecond) // queue behind the first
	}
	close(b.gate)
	wg.Wait()
	used := b.updates.Load() - before
	require.Less(t, used, int64(n), "%d findNext calls took %d transactions", n, used)

	seen := map[string]bool{}
	for i, c := range claims {
		require.NoError(t, errs[i])
		if c == nil {
			continue
		}
		require.False(t, seen[c.DataID], "dataid %s claimed twice", c.DataID)
		seen[c.DataID] = true
	}
	require.Len(t, seen, limit, "the job's limit of live claims holds across a batch")
}
