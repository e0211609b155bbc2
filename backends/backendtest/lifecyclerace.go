package backendtest

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

// testPauseRace: the workers (32 by default) claim, heartbeat and complete
// the chunks of one job while it is paused. A findNext that starts after
// PauseJob has answered must grant nothing, on whatever store; the claims
// live at the pause run to their end (heartbeat and complete succeed), and
// then the job holds no live claim.
func (s *suite) testPauseRace(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	n := min(s.cfg.chunks, 40*s.cfg.workers)
	for i := 1; i <= n; i++ {
		b.publish("src", strconv.Itoa(i))
	}
	b.job("ja", "a", "src")

	r := &lifecycleRace{b: b, job: "ja"}
	var wg sync.WaitGroup
	for w := range s.cfg.workers {
		wg.Go(func() { r.work(fmt.Sprintf("worker-%d", w)) })
	}
	r.waitCompleted(int64(s.cfg.workers))
	_, err := b.s.PauseJob(b.ctx, "ja")
	require.NoError(t, err)
	r.paused.Store(true)
	wg.Wait()

	require.Empty(t, r.failures)
	require.Less(t, r.completed.Load(), int64(n), "the pause stopped the job before it ran out of chunks")
	running := listRows(t, b, backends.ChunkFilter{Dataset: "a", Status: backends.StatusRunning, First: backends.MaxPageSize})
	require.Empty(t, running, "every claim live at the pause ran to its end")
	done := listRows(t, b, backends.ChunkFilter{Dataset: "a", Status: ready, First: backends.MaxPageSize})
	require.Len(t, done, int(r.completed.Load()))
}

// lifecycleRace is what the workers of a lifecycle race saw.
type lifecycleRace struct {
	b         *bundle
	job       string
	paused    atomic.Bool // PauseJob has answered
	completed atomic.Int64
	mu        sync.Mutex
	failures  []string
}

func (r *lifecycleRace) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

// waitCompleted waits until the workers have completed n claims.
func (r *lifecycleRace) waitCompleted(n int64) {
	for r.completed.Load() < n && !r.failed() {
		runtime.Gosched()
	}
}

func (r *lifecycleRace) failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.failures) > 0
}

// work claims, heartbeats and completes chunks until findNext, asked
// after the pause, grants nothing.
func (r *lifecycleRace) work(executor string) {
	b := r.b
	for {
		after := r.paused.Load()
		c, err := b.s.FindNext(b.ctx, r.job, executor)
		if err != nil {
			r.fail("findNext: %v", err)
			return
		}
		if c == nil {
			if after {
				return
			}
			continue
		}
		if after {
			r.fail("%s was granted a claim on %s after the pause committed", executor, c.DataID)
		}
		if _, err := b.s.Heartbeat(b.ctx, c.Token); err != nil {
			r.fail("heartbeat of %s: %v", c.DataID, err)
		}
		if err := b.s.Complete(b.ctx, c.Token); err != nil {
			r.fail("complete of %s: %v", c.DataID, err)
			continue
		}
		r.completed.Add(1)
	}
}

// testDeleteDatasetRace: publishers race a deletion without deleteChunks
// of the dataset they publish to, round after round. A publish commits
// either before the deletion, which then finds a chunk and is refused, or
// after it, and finds no dataset: a deletion that succeeds leaves no
// publish that succeeded.
func (s *suite) testDeleteDatasetRace(t *testing.T) {
	b := s.setup(t)
	workers := max(2, s.cfg.workers/4)
	for round := range 20 {
		id := fmt.Sprintf("d%d", round)
		b.datasets(id)
		var published atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range workers {
			wg.Go(func() {
				<-start
				for i := range 5 {
					_, err := b.s.Publish(b.ctx, id, strconv.Itoa(w*10+i))
					switch backends.CodeOf(err) {
					case "":
						published.Add(1)
					case backends.CodeNotFound:
						return
					default:
						t.Errorf("publish: %v", err)
						return
					}
				}
			})
		}
		close(start)
		err := b.s.DeleteDataset(b.ctx, id, false)
		wg.Wait()
		switch backends.CodeOf(err) {
		case "":
			require.Zero(t, published.Load(), "round %d: the deletion succeeded without deleteChunks, yet %d publishes did", round, published.Load())
		case backends.CodeInvalidArgument:
			require.NotZero(t, published.Load(), "round %d: refused for chunks no publish made", round)
			require.NoError(t, b.s.DeleteDataset(b.ctx, id, true))
		default:
			t.Fatalf("round %d: delete: %v", round, err)
		}
		require.Empty(t, b.allRowsOf(id), "round %d", round)
	}
}

// testDeletePoolRace: jobs are upserted naming a pool while it is deleted,
// round after round: after each round either the pool exists or no job
// names it, and the deletion failed exactly when a job named it.
func (s *suite) testDeletePoolRace(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	jobs := max(2, s.cfg.workers/8)
	for w := range jobs {
		b.datasets(fmt.Sprintf("o%d", w))
	}
	for round := range 10 {
		pool := fmt.Sprintf("p%d", round)
		_, err := b.s.UpsertPool(b.ctx, backends.Pool{ID: pool, Slots: 1})
		require.NoError(t, err)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range jobs {
			wg.Go(func() {
				<-start
				_, err := b.s.UpsertJob(b.ctx, backends.Job{ID: fmt.Sprintf("j%d", w), Inputs: []string{"src"}, Output: fmt.Sprintf("o%d", w), Pool: pool})
				if c := backends.CodeOf(err); err != nil && c != backends.CodeNotFound {
					t.Errorf("upsert: %v", err)
				}
			})
		}
		close(start)
		derr := b.s.DeletePool(b.ctx, pool)
		wg.Wait()
		_, perr := b.s.Pool(b.ctx, pool)
		var naming []string
		js, err := b.s.Jobs(b.ctx)
		require.NoError(t, err)
		for _, j := range js {
			if j.Pool == pool {
				naming = append(naming, j.ID)
			}
		}
		switch backends.CodeOf(derr) {
		case "":
			requireCode(t, perr, backends.CodeNotFound)
			require.Empty(t, naming, "round %d: jobs name the deleted pool", round)
		case backends.CodeLocked:
			require.NoError(t, perr)
			require.NotEmpty(t, naming, "round %d: refused, yet no job names the pool", round)
		default:
			t.Fatalf("round %d: delete: %v", round, derr)
		}
	}
}

// testDeleteRace: the workers claim the chunks of a job while it is
// paused, drained and deleted. No findNext started after the pause
// answered is granted a claim; the deletion is refused (LOCKED, naming
// live claims) until the claims live at the pause have ended, and then
// succeeds; from then on every findNext is NOT_FOUND, never a claim.
func (s *suite) testDeleteRace(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	n := min(s.cfg.chunks, 40*s.cfg.workers)
	for i := 1; i <= n; i++ {
		b.publish("src", strconv.Itoa(i))
	}
	b.job("ja", "a", "src")

	r := &lifecycleRace{b: b, job: "ja"}
	var deleted atomic.Bool
	var wg sync.WaitGroup
	for w := range s.cfg.workers {
		wg.Go(func() { r.workUntilDeleted(fmt.Sprintf("worker-%d", w), &deleted) })
	}
	r.waitCompleted(int64(s.cfg.workers))
	_, err := b.s.PauseJob(b.ctx, "ja")
	require.NoError(t, err)
	r.paused.Store(true)
	for {
		err := b.s.DeleteJob(b.ctx, "ja")
		if err == nil {
			break
		}
		requireCode(t, err, backends.CodeLocked)
		var e *backends.Error
		require.ErrorAs(t, err, &e)
		require.NotEmpty(t, e.Blockers, "a refusal names the live claims")
		runtime.Gosched()
	}
	deleted.Store(true)
	wg.Wait()

	require.Empty(t, r.failures)
	running := listRows(t, b, backends.ChunkFilter{Dataset: "a", Status: backends.StatusRunning, First: backends.MaxPageSize})
	require.Empty(t, running, "the deletion waited for every live claim to end")
	done := listRows(t, b, backends.ChunkFilter{Dataset: "a", Status: ready, First: backends.MaxPageSize})
	require.Len(t, done, int(r.completed.Load()), "what the job produced stays")
}

// workUntilDeleted claims, heartbeats and completes chunks until findNext
// answers that the job does not exist, checking that nothing is granted
// after the pause, nor after the deletion.
func (r *lifecycleRace) workUntilDeleted(executor string, deleted *atomic.Bool) {
	b := r.b
	for {
		afterPause, afterDelete := r.paused.Load(), deleted.Load()
		c, err := b.s.FindNext(b.ctx, r.job, executor)
		switch {
		case backends.CodeOf(err) == backends.CodeNotFound:
			return
		case err != nil:
			r.fail("findNext: %v", err)
			return
		case c == nil:
			runtime.Gosched()
			continue
		case afterDelete:
			r.fail("%s was granted a claim on %s of a deleted job", executor, c.DataID)
		case afterPause:
			r.fail("%s was granted a claim on %s after the pause committed", executor, c.DataID)
		}
		if _, err := b.s.Heartbeat(b.ctx, c.Token); err != nil {
			r.fail("heartbeat of %s: %v", c.DataID, err)
		}
		if err := b.s.Complete(b.ctx, c.Token); err != nil {
			r.fail("complete of %s: %v", c.DataID, err)
			continue
		}
		r.completed.Add(1)
	}
}
