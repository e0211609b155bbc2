package backendtest

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

// mappingRace is what the runners of testMappingRace saw.
type mappingRace struct {
	mu        sync.Mutex
	live      map[string]string // job/dataid -> executor holding it
	completes map[string]int    // job/dataid -> completions
	failures  []string
}

func (r *mappingRace) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

// run claims and completes, for jobs roll and jrep in turn, until stop is
// set and neither has anything to claim in two rounds begun after it was
// (a round begun before may have missed what the last publish queued).
func (r *mappingRace) run(b *bundle, exec string, stop *atomic.Bool) {
	for idle := 0; idle < 2; {
		stopped := stop.Load()
		got := false
		for _, job := range []string{"roll", "jrep"} {
			c, err := b.s.FindNext(b.ctx, job, exec)
			if err != nil {
				r.fail("%s: findNext %s: %v", exec, job, err)
				return
			}
			if c == nil {
				continue
			}
			got = true
			key := job + "/" + c.DataID
			r.mu.Lock()
			if holder, ok := r.live[key]; ok {
				r.failures = append(r.failures, fmt.Sprintf("%s got %s while %s's claim on it is live", exec, key, holder))
			}
			r.live[key] = exec
			r.mu.Unlock()
			err = b.s.Complete(b.ctx, c.Token)
			r.mu.Lock()
			delete(r.live, key)
			if err == nil {
				r.completes[key]++
			}
			r.mu.Unlock()
			if err != nil {
				r.fail("%s: complete %s: %v", exec, key, err)
				return
			}
		}
		if got || !stopped {
			idle = 0
		} else {
			idle++
		}
	}
}

// testMappingRace: 32 runners race findNext over a 7-day lookback job and
// a job reading its output one to one, while the days of the source arrive
// in random order: every output chunk is produced exactly once. Then, with
// the runners still racing, days are resubmitted with cascade and
// published again: right after each cascade, no output whose window holds
// the day is READY (guarantee 8), and once the dust settles everything is
// READY again, each rolling output over DONE reads of its whole window.
func (s *suite) testMappingRace(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.definedDataset("rep", dailyDef)
	b.lookbackJob()
	b.job("jrep", "rep", "roll7")
	all := dayRange("2025-01-01", "2025-02-19")
	rng := rand.New(rand.NewPCG(uint64(len(all)), 7))
	order := rng.Perm(len(all))

	r := &mappingRace{live: map[string]string{}, completes: map[string]int{}}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range s.cfg.workers {
		wg.Go(func() { r.run(b, fmt.Sprintf("runner-%d", w), &stop) })
	}
	// Eight publishers at once: two days of one window arriving together
	// must not both leave the window's output unqueued.
	var pub sync.WaitGroup
	next := atomic.Int64{}
	for range 8 {
		pub.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(order)); i = next.Add(1) - 1 {
				if _, err := b.s.Publish(b.ctx, "raw", all[order[i]]); err != nil {
					r.fail("publish %s: %v", all[order[i]], err)
				}
			}
		})
	}
	pub.Wait()
	stop.Store(true)
	wg.Wait()
	require.Empty(t, r.failures)
	for _, job := range []string{"roll", "jrep"} {
		require.Empty(t, b.drain(job), "runners left %s work", job)
	}
	for _, d := range all {
		require.Equal(t, 1, r.completes["roll/"+d], "roll at %s produced exactly once", d)
		require.Equal(t, 1, r.completes["jrep/"+d], "jrep at %s produced exactly once", d)
	}

	// Cascades while the runners race.
	stop.Store(false)
	for w := range s.cfg.workers {
		wg.Go(func() { r.run(b, fmt.Sprintf("runner-%d", w), &stop) })
	}
	cascades := 0
	for range 30 {
		x := all[rng.IntN(len(all))]
		_, err := b.s.Resubmit(b.ctx, "raw", x, true)
		if backends.CodeOf(err) == backends.CodeLocked {
			continue // a runner reads it or writes what was computed from it right now
		}
		require.NoError(t, err)
		cascades++
		window := dayRange(x, all[min(len(all)-1, indexOf(all, x)+6)])
		for _, d := range window {
			for _, ds := range []string{"roll7", "rep"} {
				require.NotEqual(t, backends.StatusReady, b.status(ds, d), "%s/%s READY while raw/%s, in its window, is resubmitted", ds, d, x)
			}
		}
		b.publish("raw", x)
	}
	stop.Store(true)
	wg.Wait()
	require.Empty(t, r.failures)
	require.NotZero(t, cascades, "some cascade went through")
	for _, job := range []string{"roll", "jrep"} {
		b.drain(job)
	}
	for i, d := range all {
		require.Equal(t, backends.StatusReady, b.status("roll7", d), d)
		require.Equal(t, backends.StatusReady, b.status("rep", d), d)
		for _, in := range all[max(0, i-6) : i+1] {
			require.Equal(t, backends.StatusDone, b.readStatus("raw", in, "roll", d), "raw/%s read for roll7/%s", in, d)
		}
	}
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}
