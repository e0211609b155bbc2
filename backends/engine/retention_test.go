package engine_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
)

// TestPruneSweepSkipsWhatItKeepsForEver: a sweep that stops starts again
// past the events it pruned or keeps for ever (a dataset with retention
// 0), not at the oldest event; a dataset's retention changed, it starts
// at the oldest again and prunes what it kept.
func TestPruneSweepSkipsWhatItKeepsForEver(t *testing.T) {
	ctx := context.Background()
	clock := backends.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := engine.New(memory.New(), engine.WithClock(clock))
	defer s.Close()
	keep := backends.Dataset{ID: "keep", Retention: &backends.Retention{EventsSeconds: 0}}
	for _, d := range []backends.Dataset{keep, {ID: "drop"}} {
		_, err := s.UpsertDataset(ctx, d)
		require.NoError(t, err)
	}
	for i := range 300 {
		_, err := s.Publish(ctx, "keep", strconv.Itoa(i))
		require.NoError(t, err)
	}
	for i := range 10 {
		_, err := s.Publish(ctx, "drop", strconv.Itoa(i))
		require.NoError(t, err)
	}
	clock.Advance(2 * time.Hour)
	sweep := func() backends.PruneResult {
		t.Helper()
		var all backends.PruneResult
		p := backends.PrunePolicy{Events: time.Hour}
		for {
			res, err := s.PruneEvents(ctx, p)
			require.NoError(t, err)
			all.Pruned, all.Scanned = all.Pruned+res.Pruned, all.Scanned+res.Scanned
			if res.Next == 0 {
				return all
			}
			p.After = res.Next
		}
	}
	first := sweep()
	require.Equal(t, 10, first.Pruned)
	require.GreaterOrEqual(t, first.Scanned, 310)
	require.Equal(t, backends.PruneResult{}, sweep(), "nothing before the floor is read again")

	keep.Retention.EventsSeconds = 3600
	_, err := s.UpsertDataset(ctx, keep)
	require.NoError(t, err)
	again := sweep()
	require.Equal(t, 300, again.Pruned, "a retention changed: swept from the oldest")
}

// leaveOne deletes every event asked but the first, once (as etcd may
// leave one its mover is moving).
type leaveOne struct {
	*memory.Backend
	left bool
}

func (l *leaveOne) DeleteEvents(ctx context.Context, evs []backends.Event) (int, error) {
	if !l.left && len(evs) > 0 {
		l.left = true
		evs = evs[1:]
	}
	return l.Backend.DeleteEvents(ctx, evs)
}

// TestPruneSweepComesBackForWhatWasLeft: an event the store did not
// delete when asked is pruned by the next sweep: the floor does not pass
// it.
func TestPruneSweepComesBackForWhatWasLeft(t *testing.T) {
	ctx := context.Background()
	clock := backends.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	be := &leaveOne{Backend: memory.New()}
	s := engine.New(be, engine.WithClock(clock))
	defer s.Close()
	_, err := s.UpsertDataset(ctx, backends.Dataset{ID: "drop"})
	require.NoError(t, err)
	for i := range 10 {
		_, err := s.Publish(ctx, "drop", strconv.Itoa(i))
		require.NoError(t, err)
	}
	clock.Advance(2 * time.Hour)
	p := backends.PrunePolicy{Events: time.Hour}
	first, err := s.PruneEvents(ctx, p)
	require.NoError(t, err)
	require.Equal(t, 9, first.Pruned)
	second, err := s.PruneEvents(ctx, p)
	require.NoError(t, err)
	require.Equal(t, 1, second.Pruned, "the event left is pruned by the next sweep")
	page, err := s.Events(ctx, backends.EventFilter{Dataset: "drop"})
	require.NoError(t, err)
	require.Empty(t, page.Events)
}
