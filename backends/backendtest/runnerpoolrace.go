package backendtest

import (
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// The runner-pool races: pools (one goroutine each, as one runner process
// with many slots) race claimNext on one job and end their claims in
// batches. No chunk is ever held by two live claims (SPEC §4 guarantee
// 1), each is completed exactly once, and the limit races of poolrace.go
// run again with batch claims.

func init() {
	concurrencyTests = append(concurrencyTests,
		testCase{"ClaimNextRace", (*suite).testClaimNextRace},
		testCase{"MaxConcurrentRaceBatched", func(s *suite, t *testing.T) {
			b := s.setup(t)
			r := setupLimitRace(t, b.clock, []backends.Store{b.s}, 3, "", "ja")
			r.batch = 4
			r.run(8)
		}},
		testCase{"PoolRaceBatched", func(s *suite, t *testing.T) {
			b := s.setup(t)
			r := setupLimitRace(t, b.clock, []backends.Store{b.s}, 2, "wh", "ja", "jx")
			r.batch = 3
			r.run(8)
		}},
	)
}

// testClaimNextRace: pools race claimNext (max 1 to 8) on one job over
// many chunks, each completing its claims in one completeMany, failing
// some in one failMany (the job retries at once), heartbeating all first.
func (s *suite) testClaimNextRace(t *testing.T) {
	b := s.setup(t)
	b.datasets("src", "a")
	b.upsertJob(backends.Job{ID: "ja", Output: "a", Inputs: []string{"src"}, MaxAttempts: 100})
	n := s.cfg.chunks / 2
	for i := 1; i <= n; i++ {
		b.publish("src", strconv.Itoa(i))
	}
	r := &claimNextRace{live: map[string]string{}, completes: map[string]int{}, failed: map[string]bool{}}
	var wg sync.WaitGroup
	pools := max(2, s.cfg.workers/4)
	for p := range pools {
		wg.Go(func() { r.work(b, fmt.Sprintf("pool-%d", p), 1+p%8) })
	}
	wg.Wait()
	require.Empty(t, r.failures)
	require.Empty(t, r.live)
	require.Len(t, r.completes, n, "every chunk was completed")
	for d, k := range r.completes {
		require.Equal(t, 1, k, "chunk %s completed once", d)
	}
	_, d := b.next("ja")
	require.Empty(t, d)
}

type claimNextRace struct {
	mu        sync.Mutex
	live      map[string]string // dataid -> pool holding it
	completes map[string]int
	failed    map[string]bool
	failures  []string
}

func (r *claimNextRace) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

// work claims up to max at a time until claimNext answers none, fails
// every chunk ending in 7 once, and completes the rest.
func (r *claimNextRace) work(b *bundle, pool string, max int) {
	for {
		cs, err := b.s.ClaimNext(b.ctx, "ja", pool, max)
		if err != nil {
			r.fail("%s: claimNext: %v", pool, err)
			return
		}
		if len(cs) == 0 {
			return
		}
		if len(cs) > max {
			r.fail("%s: %d claims for max %d", pool, len(cs), max)
			return
		}
		var tokens []string
		var fails []backends.FailItem
		r.mu.Lock()
		for _, c := range cs {
			if holder, ok := r.live[c.DataID]; ok {
				r.failures = append(r.failures, fmt.Sprintf("%s got %s while %s's claim on it is live", pool, c.DataID, holder))
			}
			r.live[c.DataID] = pool
			if c.DataID[len(c.DataID)-1] == '7' && !r.failed[c.DataID] {
				r.failed[c.DataID] = true
				fails = append(fails, backends.FailItem{Token: c.Token, Reason: "racer"})
				delete(r.live, c.DataID) // before the failure: the chunk may be claimed at once after
				continue
			}
			tokens = append(tokens, c.Token)
		}
		r.mu.Unlock()
		all := append(append([]string{}, tokens...), tokensOf(fails)...)
		if !r.allOK(pool, "heartbeatMany", all, func() ([]backends.TokenResult, error) { return b.s.HeartbeatMany(b.ctx, all) }) ||
			!r.allOK(pool, "failMany", tokensOf(fails), func() ([]backends.TokenResult, error) { return b.s.FailMany(b.ctx, fails) }) {
			return
		}
		r.mu.Lock()
		for _, c := range cs {
			if r.live[c.DataID] == pool {
				delete(r.live, c.DataID) // before the completion: READY, nobody may claim it again
				r.completes[c.DataID]++
			}
		}
		r.mu.Unlock()
		if !r.allOK(pool, "completeMany", tokens, func() ([]backends.TokenResult, error) { return b.s.CompleteMany(b.ctx, tokens) }) {
			return
		}
	}
}

func tokensOf(items []backends.FailItem) []string {
	ts := make([]string, len(items))
	for i, it := range items {
		ts[i] = it.Token
	}
	return ts
}

// allOK runs a batch and checks that every token in it took effect, in order.
func (r *claimNextRace) allOK(pool, what string, tokens []string, call func() ([]backends.TokenResult, error)) bool {
	res, err := call()
	if err != nil || len(res) != len(tokens) {
		r.fail("%s: %s: %d results for %d tokens, %v", pool, what, len(res), len(tokens), err)
		return false
	}
	for i, x := range res {
		if !x.OK() || x.Token != tokens[i] {
			r.fail("%s: %s: token %d: %v", pool, what, i, x.Err)
			return false
		}
	}
	return true
}
