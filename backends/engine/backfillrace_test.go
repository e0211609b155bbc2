package engine_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/partition"
)

// server is one server's view of a shared backend (a *stopping): its own
// hooks, and its own transactions failing from its failAt-th Update on.
type server struct {
	*stopping
	updates      atomic.Int64
	failAt       atomic.Int64
	beforePutJob func()                // once
	afterPutJob  func(err error) error // once
	beforeFinish func()                // once, before a record is written "done"
	once         [3]sync.Once
}

func (s *server) Update(ctx context.Context, fn func(backends.Tx) error) error {
	n := s.updates.Add(1)
	if at := s.failAt.Load(); at > 0 && n >= at {
		return backends.Unavailable(nil, "the server stopped")
	}
	return s.stopping.Update(ctx, fn)
}

func (s *server) PutJob(ctx context.Context, j backends.Job, enqueue bool, frontier *backends.Candidate, version int64) (backends.Job, int64, error) {
	if s.beforePutJob != nil {
		s.once[0].Do(s.beforePutJob)
	}
	stored, v, err := s.stopping.PutJob(ctx, j, enqueue, frontier, version)
	if s.afterPutJob != nil && err == nil {
		s.once[1].Do(func() { err = s.afterPutJob(err) })
	}
	return stored, v, err
}

func (s *server) SwapRecord(ctx context.Context, key string, value []byte, version int64) (backends.Record, bool, error) {
	if s.beforeFinish != nil && strings.HasPrefix(string(value), "done") {
		s.once[2].Do(s.beforeFinish)
	}
	return s.stopping.SwapRecord(ctx, key, value, version)
}

// newRaceStore is newBackfillStore with a daily dataset "other" besides,
// with its first three days published, and job "roll" reading it (rollOther)
// stored and backfilled: the job has candidates queued.
func newRaceStore(t *testing.T) (*stopping, *backends.FakeClock) {
	t.Helper()
	ctx := context.Background()
	b, clock, s := newBackfillStore(t)
	daily := partition.Def{Kind: partition.Daily, Start: "2025-01-01"}
	_, err := s.UpsertDataset(ctx, backends.Dataset{ID: "other", Partitions: &daily})
	require.NoError(t, err)
	for _, d := range []string{"2025-01-01", "2025-01-02", "2025-01-03"} {
		_, err := s.Publish(ctx, "other", d)
		require.NoError(t, err)
	}
	_, err = s.UpsertJob(ctx, rollOther)
	require.NoError(t, err)
	n, err := s.QueueLength(ctx, "roll")
	require.NoError(t, err)
	require.Positive(t, n)
	return b, clock
}

// rollOther is job roll reading "other" instead of "raw".
var rollOther = backends.Job{ID: "roll", Output: "roll7", Inputs: []string{"other"},
	InputMappings: []backends.InputMapping{{Dataset: "other", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -1}}}}

// afterwards checks that, whatever a server start (ResumeBackfills) and
// the next `chunklock apply` of job do, every output of job is offered.
func afterwards(t *testing.T, b *stopping, clock *backends.FakeClock, job backends.Job, want int) {
	t.Helper()
	ctx := context.Background()
	r, err := engine.New(b, engine.WithClock(clock)).Record(ctx, "backfill/"+job.ID)
	require.NoError(t, err)
	next := engine.New(b, engine.WithClock(clock))
	_, err = next.ResumeBackfills(ctx)
	require.NoError(t, err)
	_, err = next.UpsertJob(ctx, job)
	require.NoError(t, err)
	require.Equal(t, want, drain(t, next, job.ID),
		"every output of the stored job is offered after a server start and an apply (record was %q after the race)", r.Value)
}

// TestConcurrentUpsertsCommitInOtherOrder: upserts A (rollJob) and B
// (rollOther) of the same job on two servers. A marks first, B second; B
// commits first, A last, so A's definition is stored. A's server stops
// half way through A's backfill; B's backfill (of a definition no longer
// stored) finishes and marks the record done for B's definition. A
// server start or the next apply must still run A's.
func TestConcurrentUpsertsCommitInOtherOrder(t *testing.T) {
	ctx := context.Background()
	want := wantRoll(t)
	b, clock := newRaceStore(t)
	sa, sb := &server{stopping: b}, &server{stopping: b}
	a, bb := engine.New(sa, engine.WithClock(clock)), engine.New(sb, engine.WithClock(clock))
	inFinish, release, bDone := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	sb.beforeFinish = func() { close(inFinish); <-release }
	sa.beforePutJob = func() {
		// A has marked; B marks, commits, runs its backfill, and waits
		// to mark done.
		go func() {
			_, err := bb.UpsertJob(ctx, backends.Job{ID: "roll", Output: "roll7", Inputs: []string{"other"},
				InputMappings: []backends.InputMapping{{Dataset: "other", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -2}}}})
			bDone <- err
		}()
		<-inFinish
		sa.failAt.Store(sa.updates.Load() + 2) // A's backfill: the first transaction commits, the second fails
	}
	_, err := a.UpsertJob(ctx, rollJob)
	require.Error(t, err)
	require.Contains(t, err.Error(), "job roll is stored")
	close(release)
	require.NoError(t, <-bDone)
	stored, err := a.Job(ctx, "roll")
	require.NoError(t, err)
	require.Equal(t, rollJob.Inputs, stored.Inputs, "A committed last")
	afterwards(t, b, clock, rollJob, want)
}

// TestUnavailableAfterCommitDuringResume: a server starting while an
// upsert is under way resumes the backfill that upsert marked, with the
// definition before it, and marks it done before the upsert's catalog
// change; the change commits but its answer is lost (UNAVAILABLE), so the
// upsert never marks its own backfill done. The job's queue is not empty:
// only the record can tell a server start or the next apply to backfill.
func TestUnavailableAfterCommitDuringResume(t *testing.T) {
	ctx := context.Background()
	want := wantRoll(t)
	b, clock := newRaceStore(t)
	sa := &server{stopping: b}
	a := engine.New(sa, engine.WithClock(clock))
	sa.beforePutJob = func() {
		n, err := engine.New(b, engine.WithClock(clock)).ResumeBackfills(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
	}
	sa.afterPutJob = func(error) error { return backends.Unavailable(nil, "connection lost after the commit") }
	_, err := a.UpsertJob(ctx, rollJob)
	require.Equal(t, backends.CodeUnavailable, backends.CodeOf(err), "%v", err)
	afterwards(t, b, clock, rollJob, want)
}
