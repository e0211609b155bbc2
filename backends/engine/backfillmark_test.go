package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
	"github.com/chunklock/chunklock/backends/partition"
)

// stopping is a memory backend whose transactions start failing, as if
// its server stopped, from the stopAt-th Update on while stopAt is set.
type stopping struct {
	*versioned
	updates atomic.Int64
	stopAt  atomic.Int64
}

func (s *stopping) Update(ctx context.Context, fn func(backends.Tx) error) error {
	n := s.updates.Add(1)
	if at := s.stopAt.Load(); at > 0 && n >= at {
		return backends.Unavailable(nil, "the server stopped")
	}
	return s.versioned.Update(ctx, fn)
}

// backfillDays is more days than one backfill transaction queues: the
// backfill of a job reading them takes several.
const backfillDays = 1200

func newBackfillStore(t *testing.T) (*stopping, *backends.FakeClock, backends.Store) {
	t.Helper()
	ctx := context.Background()
	b := &stopping{versioned: &versioned{Backend: memory.New()}}
	clock := backends.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s := engine.New(b, engine.WithClock(clock))
	daily := partition.Def{Kind: partition.Daily, Start: "2025-01-01"}
	for _, d := range []string{"raw", "roll7"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: d, Partitions: &daily})
		require.NoError(t, err)
	}
	day := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < backfillDays; i++ {
		_, err := s.Publish(ctx, "raw", day.AddDate(0, 0, i).Format(time.DateOnly))
		require.NoError(t, err)
	}
	return b, clock, s
}

var rollJob = backends.Job{ID: "roll", Output: "roll7", Inputs: []string{"raw"},
	InputMappings: []backends.InputMapping{{Dataset: "raw", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -6}}}}

// upsertStoppingHalfWay upserts rollJob through s on b, whose server stops
// half way through the backfill: its first transaction commits, its second
// fails. It returns the upsert's error.
func upsertStoppingHalfWay(b *stopping, s backends.Store) error {
	b.stopAt.Store(b.updates.Load() + 2)
	defer b.stopAt.Store(0)
	_, err := s.UpsertJob(context.Background(), rollJob)
	return err
}

// wantRoll is how many outputs rollJob is offered once fully backfilled.
func wantRoll(t *testing.T) int {
	t.Helper()
	_, _, control := newBackfillStore(t)
	_, err := control.UpsertJob(context.Background(), rollJob)
	require.NoError(t, err)
	return drain(t, control, "roll")
}

// drain claims and completes everything job is offered, and counts it.
func drain(t *testing.T, s backends.Store, job string) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	for {
		c, err := s.FindNext(ctx, job, "runner")
		require.NoError(t, err)
		if c == nil {
			return n
		}
		require.NoError(t, s.Complete(ctx, c.Token))
		n++
	}
}

// TestMappedBackfillResumedAfterStop: a server that stops half way through
// the backfill of a new job with mappings leaves the rest to the next
// server's ResumeBackfills, or to the next upsert of the job, even though
// the job has candidates queued by then.
func TestMappedBackfillResumedAfterStop(t *testing.T) {
	ctx := context.Background()
	want := wantRoll(t)
	require.Greater(t, want, 1000)

	for _, how := range []string{"restart", "upsert"} {
		t.Run(how, func(t *testing.T) {
			b, clock, s := newBackfillStore(t)
			err := upsertStoppingHalfWay(b, s)
			require.Error(t, err)
			require.Contains(t, err.Error(), "job roll is stored")
			// The outputs queued so far are offered; claim one, so that the
			// queue is not empty when the job is next upserted.
			c, err := s.FindNext(ctx, "roll", "runner")
			require.NoError(t, err)
			require.NotNil(t, c)
			require.NoError(t, s.Complete(ctx, c.Token))
			switch how {
			case "restart":
				next := engine.New(b, engine.WithClock(clock)) // a server starting on the same store
				n, err := next.ResumeBackfills(ctx)
				require.NoError(t, err)
				require.Equal(t, 1, n)
				require.Equal(t, want-1, drain(t, next, "roll"))
				// Done: nothing is left to resume, for any server.
				n, err = engine.New(b, engine.WithClock(clock)).ResumeBackfills(ctx)
				require.NoError(t, err)
				require.Zero(t, n)
			case "upsert":
				_, err := s.UpsertJob(ctx, rollJob)
				require.NoError(t, err)
				require.Equal(t, want-1, drain(t, s, "roll"))
				n, err := s.ResumeBackfills(ctx)
				require.NoError(t, err)
				require.Zero(t, n)
			}
		})
	}
}

// TestRefusedMappedUpsertOwesNoBackfill: an upsert refused before it changed
// anything leaves no backfill to resume.
func TestRefusedMappedUpsertOwesNoBackfill(t *testing.T) {
	ctx := context.Background()
	_, _, s := newBackfillStore(t)
	bad := rollJob
	bad.Output = "missing"
	_, err := s.UpsertJob(ctx, bad)
	require.Equal(t, backends.CodeNotFound, backends.CodeOf(err), "%v", err)
	_, err = s.UpsertJob(ctx, rollJob)
	require.NoError(t, err)
	n, err := s.ResumeBackfills(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
}

// hooked runs beforePutJob before each catalog write of a job.
type hooked struct {
	*stopping
	beforePutJob func()
}

func (h *hooked) PutJob(ctx context.Context, j backends.Job, enqueue bool, frontier *backends.Candidate, version int64) (backends.Job, int64, error) {
	if h.beforePutJob != nil {
		h.beforePutJob()
	}
	return h.stopping.PutJob(ctx, j, enqueue, frontier, version)
}

// TestBackfillResumedDuringUpsert: a server that starts while another
// upserts a job with mappings resumes the backfill that upsert marked, with
// the definition before it, and marks it done for that definition; the
// upsert's own backfill is still owed, so that a stop half way through it
// is resumed too.
func TestBackfillResumedDuringUpsert(t *testing.T) {
	ctx := context.Background()
	b, clock, _ := newBackfillStore(t)
	h := &hooked{stopping: b}
	s := engine.New(h, engine.WithClock(clock))
	old := rollJob
	old.InputMappings = []backends.InputMapping{{Dataset: "raw", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -1}}}
	_, err := s.UpsertJob(ctx, old)
	require.NoError(t, err)
	resumed := 0
	h.beforePutJob = func() {
		h.beforePutJob = nil
		// Another server starts between this upsert's mark and its catalog
		// change, and resumes the marked backfill with the old definition.
		n, err := engine.New(h, engine.WithClock(clock)).ResumeBackfills(ctx)
		require.NoError(t, err)
		resumed = n
		b.stopAt.Store(b.updates.Load() + 2) // then this server stops half way through its own
	}
	_, err = s.UpsertJob(ctx, rollJob)
	require.Error(t, err)
	require.Equal(t, 1, resumed)
	b.stopAt.Store(0)
	r, err := s.Record(ctx, "backfill/roll")
	require.NoError(t, err)
	require.NotEqual(t, "pending", string(r.Value), "the starting server marked done the definition it backfilled")
	n, err := engine.New(h, engine.WithClock(clock)).ResumeBackfills(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the upsert's own backfill is still owed")
	n, err = engine.New(h, engine.WithClock(clock)).ResumeBackfills(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestFailedBackfillResumedInBackground: a server whose own apply of a job
// with mappings failed half way through its backfill (a request timing
// out) finishes it at its next resume, though an earlier resume found
// nothing to do.
func TestFailedBackfillResumedInBackground(t *testing.T) {
	ctx := context.Background()
	want := wantRoll(t)

	b, _, s := newBackfillStore(t)
	n, err := s.ResumeBackfills(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	require.ErrorContains(t, upsertStoppingHalfWay(b, s), "goes on with it in the background")
	n, err = s.ResumeBackfills(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, want, drain(t, s, "roll"))
}
