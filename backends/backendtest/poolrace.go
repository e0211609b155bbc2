package backendtest

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// The concurrency-limit races: 32 runners race findNext on a job with
// maxConcurrent 3, and on two jobs sharing a pool of 2 slots, ending their
// claims every way (complete, fail, release, abandoned until the lease
// passes and the reaper fails it). The limit is never exceeded: checked by
// counting, in the racers, the claims they hold whose lease has not
// passed, and by sampling the store's live claims; and every chunk is
// completed in the end, so every slot came back. They run on one store
// (RunConcurrency) and on two stores sharing one backend, as two servers
// (RunSharedCatalog).

func init() {
	concurrencyTests = append(concurrencyTests,
		testCase{"MaxConcurrentRace", func(s *suite, t *testing.T) { b := s.setup(t); maxConcurrentRace(t, b.clock, b.s) }},
		testCase{"PoolRace", func(s *suite, t *testing.T) { b := s.setup(t); poolRace(t, b.clock, b.s) }},
	)
}

// raceChunks is how many chunks each job of a limit race works through.
const raceChunks = 150

// limitRace is one limit race: jobs sharing a limit, and what the racers
// saw.
type limitRace struct {
	t      *testing.T
	clock  *backends.FakeClock
	stores []backends.Store
	jobs   []string
	limit  int
	batch  int // the racers' claimNext max; 0: they call findNext

	mu        sync.Mutex
	held      map[string]time.Time // token -> lease, of the claims racers hold
	abandoned int                  // claims left to expire
	done      map[string]int       // completions by job
	ended     map[string]bool      // job/dataid -> ended once in a special way
	failures  []string
	finished  atomic.Bool
}

func (r *limitRace) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func setupLimitRace(t *testing.T, clock *backends.FakeClock, stores []backends.Store, limit int, pool string, jobs ...string) *limitRace {
	ctx := context.Background()
	st := stores[0]
	if pool != "" {
		_, err := st.UpsertPool(ctx, backends.Pool{ID: pool, Slots: limit})
		require.NoError(t, err)
	}
	for _, d := range append([]string{"src"}, jobs...) {
		_, err := st.UpsertDataset(ctx, backends.Dataset{ID: "out-" + d})
		require.NoError(t, err)
	}
	for _, j := range jobs {
		job := backends.Job{ID: j, Output: "out-" + j, Inputs: []string{"out-src"}, MaxAttempts: 1000, Pool: pool}
		if pool == "" {
			job.MaxConcurrent = limit
		}
		_, err := st.UpsertJob(ctx, job)
		require.NoError(t, err)
	}
	for i := 1; i <= raceChunks; i++ {
		_, err := st.Publish(ctx, "out-src", strconv.Itoa(i))
		require.NoError(t, err)
	}
	return &limitRace{t: t, clock: clock, stores: stores, jobs: jobs, limit: limit,
		held: map[string]time.Time{}, done: map[string]int{}, ended: map[string]bool{}}
}

func maxConcurrentRace(t *testing.T, clock *backends.FakeClock, stores ...backends.Store) {
	setupLimitRace(t, clock, stores, 3, "", "ja").run(32)
}

func poolRace(t *testing.T, clock *backends.FakeClock, stores ...backends.Store) {
	setupLimitRace(t, clock, stores, 2, "wh", "ja", "jx").run(32)
}

// run races workers racers, spread over the jobs and stores, with a
// sampler of live claims and a reaper that moves the clock past the
// leases of abandoned claims.
func (r *limitRace) run(workers int) {
	var wg sync.WaitGroup
	for w := range workers {
		job, st := r.jobs[w%len(r.jobs)], r.stores[w%len(r.stores)]
		wg.Go(func() { r.work(st, job, fmt.Sprintf("racer-%d", w)) })
	}
	var bg sync.WaitGroup
	bg.Go(r.sample)
	bg.Go(r.reap)
	wg.Wait()
	r.finished.Store(true)
	bg.Wait()
	require.Empty(r.t, r.failures)
	for _, j := range r.jobs {
		require.Equal(r.t, raceChunks, r.done[j], "%s completed every chunk", j)
	}
	cs, err := r.stores[0].Claims(context.Background(), "")
	require.NoError(r.t, err)
	require.Empty(r.t, cs)
}

// hold records a claim the racer got and checks the limit: the claims
// held with a lease to come, this one included, are at most the limit.
func (r *limitRace) hold(c *backends.Claim) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held[c.Token] = c.LeaseExpiresAt
	now, live := r.clock.Now(), 0
	for _, lease := range r.held {
		if now.Before(lease) {
			live++
		}
	}
	if live > r.limit {
		r.failures = append(r.failures, fmt.Sprintf("%d claims live at once, limit %d", live, r.limit))
		return false
	}
	return true
}

// ending picks how a racer ends its claim on dataid: each chunk is
// released, failed and abandoned at most once, by its number.
func (r *limitRace) ending(job, dataid string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, _ := strconv.Atoi(dataid)
	key := job + "/" + dataid
	if r.ended[key] {
		return "complete"
	}
	r.ended[key] = true
	switch {
	case n%7 == 0:
		return "release"
	case n%11 == 0:
		return "fail"
	case n%13 == 0:
		r.abandoned++
		return "abandon"
	}
	return "complete"
}

func (r *limitRace) work(st backends.Store, job, exec string) {
	ctx := context.Background()
	var batch []*backends.Claim // claims of the last claimNext not yet ended
	for !r.failed() {
		var c *backends.Claim
		var err error
		switch {
		case len(batch) > 0:
			c, batch = batch[0], batch[1:]
		case r.batch > 0:
			batch, err = st.ClaimNext(ctx, job, exec, r.batch)
			for _, b := range batch {
				if err == nil && !r.hold(b) {
					return
				}
			}
			if len(batch) > 0 {
				c, batch = batch[0], batch[1:]
			}
		default:
			c, err = st.FindNext(ctx, job, exec)
			if c != nil && !r.hold(c) {
				return
			}
		}
		if err != nil {
			r.fail("%s: findNext: %v", exec, err)
			return
		}
		if c == nil {
			r.mu.Lock()
			finished := r.done[job] == raceChunks
			r.mu.Unlock()
			if finished {
				return
			}
			time.Sleep(time.Millisecond) // wait for a slot or a chunk
			continue
		}
		how := r.ending(job, c.DataID)
		r.mu.Lock()
		if how != "abandon" {
			delete(r.held, c.Token) // before the ending: once it commits, the slot is another's
		}
		r.mu.Unlock()
		switch how {
		case "release":
			err = st.Release(ctx, c.Token)
		case "fail":
			err = st.Fail(ctx, c.Token, "racer failed it")
		case "complete":
			err = st.Complete(ctx, c.Token)
		}
		if backends.CodeOf(err) == backends.CodeStaleClaim {
			continue // the reaper moved the clock past its lease: the chunk comes back
		}
		if err != nil {
			r.fail("%s: %s %s: %v", exec, how, c.DataID, err)
			return
		}
		if how == "complete" {
			r.mu.Lock()
			r.done[job]++
			r.mu.Unlock()
		}
	}
}

func (r *limitRace) failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.failures) > 0
}

// sample reads the live claims of all jobs at once (one snapshot) and
// checks the limit on them.
func (r *limitRace) sample() {
	for i := 0; !r.finished.Load(); i++ {
		cs, err := r.stores[i%len(r.stores)].Claims(context.Background(), "")
		if err != nil {
			r.fail("claims: %v", err)
			return
		}
		// The store judged the leases at its own time, which the reaper
		// may have moved since: count the claims live now, all of which
		// were live together when the store read them.
		now, live := r.clock.Now(), 0
		for _, c := range cs {
			if now.Before(c.LeaseExpiresAt) {
				live++
			}
		}
		if live > r.limit {
			r.fail("the store lists %d live claims, limit %d", live, r.limit)
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// reap moves the clock past every lease when claims were abandoned, and
// runs the reaper every time, so that their chunks come back (and those of
// claims that the clock overtook before their ending).
func (r *limitRace) reap() {
	for !r.finished.Load() {
		time.Sleep(20 * time.Millisecond)
		r.mu.Lock()
		if r.abandoned > 0 {
			r.clock.Advance(backends.DefaultLeaseSeconds * time.Second)
		}
		r.abandoned = 0
		r.mu.Unlock()
		if _, err := r.stores[0].ExpireLeases(context.Background()); err != nil {
			r.fail("expire leases: %v", err)
			return
		}
	}
}
