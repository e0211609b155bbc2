package engine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
	"github.com/chunklock/chunklock/backends/partition"
)

// A definition that goes A -> B -> A while a backfill of A runs, or while
// an apply of A that changes nothing is under way (another apply, then the
// first one again), leaves A stored as before; but inputs that became READY
// while B was stored were never backfilled for A, and the upsert that
// stored A again stopped half way. The backfill of A that comes last must
// not mark the record done over that upsert's mark (finishBackfill swaps
// only on the version of the mark it answers).

// publishRaw publishes the days of "raw" from first, n of them.
func publishRaw(t *testing.T, s backends.Store, first, n int) {
	t.Helper()
	day := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := first; i < first+n; i++ {
		_, err := s.Publish(context.Background(), "raw", day.AddDate(0, 0, i).Format(time.DateOnly))
		require.NoError(t, err)
	}
}

// storeAgainAndStop is the A -> B -> A interlude, on other servers: job
// roll is stored as B (rollOther) and backfilled, raw's days [from,
// from+n) are published while B is stored (roll does not read raw then),
// and a. is stored again by a server that stops at the first transaction
// of its backfill.
func storeAgainAndStop(t *testing.T, b *stopping, clock *backends.FakeClock, a backends.Job, from, n int) {
	t.Helper()
	ctx := context.Background()
	_, err := engine.New(b, engine.WithClock(clock)).UpsertJob(ctx, rollOther)
	require.NoError(t, err)
	publishRaw(t, engine.New(b, engine.WithClock(clock)), from, n)
	s3 := &server{stopping: b}
	s3.failAt.Store(1)
	_, err = engine.New(s3, engine.WithClock(clock)).UpsertJob(ctx, a)
	require.Error(t, err)
	require.Contains(t, err.Error(), "job roll is stored")
}

// TestUnchangedUpsertMarksDoneAfterABA: rollJob (A) is stored and fully
// backfilled (done:A). Server 1 applies A again: it marks, reading the
// record done:A. Before its catalog change, A -> B -> A happens on other
// servers, ten days of raw being published while B is stored, and the
// server that stored A again stops at its backfill (the record is pending,
// its own mark). Server 1's change finds A stored, so needs no backfill by
// the inputs, and the record it read before its mark says done:A, so it
// runs none; it must leave the other server's mark, or no server start
// and no apply ever queues the outputs of those ten days.
func TestUnchangedUpsertMarksDoneAfterABA(t *testing.T) {
	ctx := context.Background()
	_, _, control := newBackfillStore(t)
	publishRaw(t, control, backfillDays, 10)
	_, err := control.UpsertJob(ctx, rollJob)
	require.NoError(t, err)
	want := drain(t, control, "roll")

	b, clock := newRaceStore(t)
	_, err = engine.New(b, engine.WithClock(clock)).UpsertJob(ctx, rollJob)
	require.NoError(t, err)
	s1 := &server{stopping: b}
	s1.beforePutJob = func() { storeAgainAndStop(t, b, clock, rollJob, backfillDays, 10) }
	_, err = engine.New(s1, engine.WithClock(clock)).UpsertJob(ctx, rollJob)
	require.NoError(t, err)
	afterwards(t, b, clock, rollJob, want)
}

// hookedUpdate runs after once its first Update has returned.
type hookedUpdate struct {
	*stopping
	after func()
	once  sync.Once
}

func (h *hookedUpdate) Update(ctx context.Context, fn func(backends.Tx) error) error {
	err := h.stopping.Update(ctx, fn)
	if h.after != nil {
		h.once.Do(h.after)
	}
	return err
}

// rollDay reads raw day for day (TIME_WINDOW without offsets): output d is
// queued by raw's chunk d alone.
var rollDay = backends.Job{ID: "roll", Output: "roll7", Inputs: []string{"raw"},
	InputMappings: []backends.InputMapping{{Dataset: "raw", Mapping: partition.Mapping{Kind: partition.TimeWindow}}}}

// gapDay is a day of raw published late: after a backfill of rollDay has
// gone past it.
const gapDay = 5

// newGapStore is newBackfillStore without raw's day gapDay, and with the
// daily dataset "other" that rollOther reads.
func newGapStore(t *testing.T) (*stopping, *backends.FakeClock) {
	t.Helper()
	ctx := context.Background()
	b := &stopping{versioned: &versioned{Backend: memory.New()}}
	clock := backends.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s := engine.New(b, engine.WithClock(clock))
	daily := partition.Def{Kind: partition.Daily, Start: "2025-01-01"}
	for _, d := range []string{"raw", "roll7", "other"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: d, Partitions: &daily})
		require.NoError(t, err)
	}
	publishRaw(t, s, 0, gapDay)
	publishRaw(t, s, gapDay+1, backfillDays-gapDay-1)
	_, err := s.Publish(ctx, "other", "2025-01-01")
	require.NoError(t, err)
	return b, clock
}

// TestBackfillAcrossABAMarkedDone: a backfill of rollDay (A), by an upsert
// creating the job or by a server start resuming it, commits its first
// transaction (past raw's day gapDay, missing then); A -> B -> A happens on
// other servers, gapDay being published while B is stored, and the server
// storing A again stops at its backfill. The first backfill goes on past
// gapDay and finds A stored at its end; it must leave the other server's
// mark, or output gapDay is never queued.
func TestBackfillAcrossABAMarkedDone(t *testing.T) {
	ctx := context.Background()
	b0, clock0 := newGapStore(t)
	control := engine.New(b0, engine.WithClock(clock0))
	publishRaw(t, control, gapDay, 1)
	_, err := control.UpsertJob(ctx, rollDay)
	require.NoError(t, err)
	want := drain(t, control, "roll")
	require.Greater(t, want, 1000)

	for _, how := range []string{"upsert", "resume"} {
		t.Run(how, func(t *testing.T) {
			b, clock := newGapStore(t)
			h := &hookedUpdate{stopping: b, after: func() { storeAgainAndStop(t, b, clock, rollDay, gapDay, 1) }}
			switch how {
			case "upsert":
				_, err := engine.New(h, engine.WithClock(clock)).UpsertJob(ctx, rollDay)
				require.NoError(t, err)
			case "resume":
				// A server stopped at the first transaction of the job's
				// backfill; the next one resumes it.
				b.stopAt.Store(b.updates.Load() + 1)
				_, err := engine.New(b, engine.WithClock(clock)).UpsertJob(ctx, rollDay)
				require.Error(t, err)
				b.stopAt.Store(0)
				n, err := engine.New(h, engine.WithClock(clock)).ResumeBackfills(ctx)
				require.NoError(t, err)
				require.Equal(t, 1, n)
			}
			afterwards(t, b, clock, rollDay, want)
		})
	}
}

// TestLegacyPartialBackfillMarkedDone: a job stored before backfill records
// existed (its record empty) whose backfill stopped half way has candidates
// queued. The first apply after the upgrade runs no backfill (the queue is
// not empty) and must not mark the record done: the empty-queue rule runs
// the backfill at an apply once the queue has emptied.
func TestLegacyPartialBackfillMarkedDone(t *testing.T) {
	ctx := context.Background()
	want := wantRoll(t)

	b, _, s := newBackfillStore(t)
	require.Error(t, upsertStoppingHalfWay(b, s))
	// As stored by a version without records.
	r, err := s.Record(ctx, "backfill/roll")
	require.NoError(t, err)
	_, ok, err := s.SwapRecord(ctx, "backfill/roll", nil, r.Version)
	require.NoError(t, err)
	require.True(t, ok)

	_, err = s.UpsertJob(ctx, rollJob) // the queue is not empty: no backfill
	require.NoError(t, err)
	got := drain(t, s, "roll")
	require.Less(t, got, want)
	// The queue is empty now: the next apply, or a server start, runs it.
	n, err := s.ResumeBackfills(ctx)
	require.NoError(t, err)
	_, err = s.UpsertJob(ctx, rollJob)
	require.NoError(t, err)
	r, err = s.Record(ctx, "backfill/roll")
	require.NoError(t, err)
	require.Equal(t, want, got+drain(t, s, "roll"), "resumed %d; record %q", n, r.Value)
}
