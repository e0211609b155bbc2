package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
	"github.com/chunklock/chunklock/backends/partition"
)

// rangeStopper is a backend whose transactions fail once ok of them have
// committed, as a store that stops answering half way through a range
// does; with cancel set, the failure ends the request first, as a request
// timeout does (and answers what etcd answers then). It serves one chunk
// per transaction, so that ok counts chunks.
type rangeStopper struct {
	*memory.Backend
	ok     atomic.Int64
	cancel context.CancelFunc
}

func (b *rangeStopper) Limits() backends.Limits { return backends.Limits{} }

func (b *rangeStopper) Update(ctx context.Context, fn func(backends.Tx) error) error {
	if b.ok.Add(-1) < 0 {
		if b.cancel != nil {
			b.cancel()
			return backends.Unavailable(context.Canceled, "etcd did not answer in time (committing a transaction); retry")
		}
		return backends.Unavailable(errors.New("connection refused"), "the store is unreachable; retry")
	}
	return b.Backend.Update(ctx, fn)
}

// TestRangeStoppedSaysHowFar: a range operation whose store stops
// answering after some chunks answers, with the store's code, how far it
// got (in its message and in Error.Range: chunks done of the total, the
// last dataid done, the counts so far), and what it did is kept, so
// calling again finishes it. When the request's time runs out the message
// says so, not the store's "did not answer in time".
func TestRangeStoppedSaysHowFar(t *testing.T) {
	ctx := context.Background()
	be := &rangeStopper{Backend: memory.New()}
	be.ok.Store(1 << 30)
	s := engine.New(be, engine.WithClock(backends.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	defer s.Close()
	for _, id := range []string{"a", "b"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: id, Partitions: &partition.Def{Kind: partition.Daily, Start: "2026-01-01", End: "2026-01-10"}})
		require.NoError(t, err)
	}

	be.ok.Store(4)
	res, err := s.HoldRange(ctx, "a", "2026-01-01", "2026-01-10", "x")
	require.Equal(t, backends.CodeUnavailable, backends.CodeOf(err), "%v", err)
	var de *backends.Error
	require.ErrorAs(t, err, &de)
	require.Equal(t, &backends.RangeProgress{RangeResult: backends.RangeResult{Changed: 4}, Done: 4, Total: 10, LastDataID: "2026-01-04"}, de.Range)
	require.Equal(t, 4, res.Changed)
	require.Contains(t, de.Message, "holdRange stopped after 4 of 10 chunks (4 changed, 0 unchanged, 0 skipped, the last 2026-01-04): the store is unreachable; retry")
	require.Contains(t, de.Message, "call again with the same range to finish it")
	be.ok.Store(1 << 30)
	res, err = s.HoldRange(ctx, "a", "2026-01-01", "2026-01-10", "x")
	require.NoError(t, err)
	require.Equal(t, backends.RangeResult{Changed: 6, Unchanged: 4}, res, "calling again finishes the range")

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	be.ok.Store(3)
	be.cancel = cancel
	_, err = s.HoldRange(rctx, "b", "2026-01-01", "2026-01-10", "x")
	require.Equal(t, backends.CodeUnavailable, backends.CodeOf(err), "%v", err)
	require.ErrorAs(t, err, &de)
	require.Equal(t, 3, de.Range.Done)
	require.Contains(t, de.Message, "holdRange stopped after 3 of 10 chunks")
	require.Contains(t, de.Message, "the request ended before the range did (its time ran out, or its client left)")
	require.NotContains(t, de.Message, "did not answer in time")
}
