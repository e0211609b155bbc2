package backendtest

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

// concurrencyTests are run by RunConcurrency: many goroutines on one store.
var concurrencyTests = []testCase{
	{"FindNextRace", (*suite).testFindNextRace},
	{"ClaimRace", (*suite).testClaimRace},
	{"ForceRace", (*suite).testForceRace},
	{"ExpireLeasesRace", (*suite).testExpireLeasesRace},
	{"MappingRace", (*suite).testMappingRace},
	{"PauseRace", (*suite).testPauseRace},
	{"DeleteDatasetRace", (*suite).testDeleteDatasetRace},
	{"DeletePoolRace", (*suite).testDeletePoolRace},
	{"DeleteRace", (*suite).testDeleteRace},
	{"DynamicRace", (*suite).testDynamicRace},
}

// testFindNextRace: workers race FindNext on one job over many chunks,
// completing most claims and releasing some once. Every chunk is completed
// exactly once, claimed once more per release, and no claim is ever handed
// out on a chunk whose previous claim is still live. A worker stops at its
// first null, which findNext may answer only when every chunk left is
// taken: each other worker accounts for at most one chunk that is neither
// completed nor seen live here (a claim not yet seen, or a release under
// way), so a null with as many chunks left as workers is a claimable chunk
// not handed out.
func (s *suite) testFindNextRace(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	n := s.cfg.chunks
	for i := 1; i <= n; i++ {
		b.publish("src", strconv.Itoa(i))
	}

	r := &findNextRace{n: n, workers: s.cfg.workers, live: map[string]string{}, claims: map[string]int{},
		completes: map[string]int{}, released: map[string]bool{}}
	var wg sync.WaitGroup
	for w := range s.cfg.workers {
		wg.Go(func() { r.work(b, fmt.Sprintf("worker-%d", w)) })
	}
	wg.Wait()
	require.Empty(t, r.failures)
	require.Empty(t, r.live)
	require.Len(t, r.completes, n, "every chunk was completed")
	for i := 1; i <= n; i++ {
		d := strconv.Itoa(i)
		require.Equal(t, 1, r.completes[d], "chunk %s completed once", d)
		want := 1
		if r.released[d] {
			want = 2
		}
		require.Equal(t, want, r.claims[d], "chunk %s claimed once, plus once per release", d)
	}
	_, d := b.next("ja")
	require.Empty(t, d)
	rows := listRows(t, b, backends.ChunkFilter{Dataset: "a", Status: ready, First: backends.MaxPageSize})
	require.Len(t, rows, n)
	for _, r := range rows {
		require.Equal(t, 1, r.Attempt, "%s: a release does not count an attempt", r.DataID)
	}
}

// findNextRace is what the workers of testFindNextRace saw.
type findNextRace struct {
	n, workers int
	mu         sync.Mutex
	live       map[string]string // dataid -> executor holding it
	claims     map[string]int
	completes  map[string]int
	released   map[string]bool
	failures   []string
}

func (r *findNextRace) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

// work claims, and completes or releases, until findNext answers null.
func (r *findNextRace) work(b *bundle, exec string) {
	for {
		c, err := b.s.FindNext(b.ctx, "ja", exec)
		if err != nil {
			r.fail("%s: findNext: %v", exec, err)
			return
		}
		if c == nil {
			r.mu.Lock()
			left := r.n - len(r.completes) - len(r.live)
			r.mu.Unlock()
			if left >= r.workers {
				r.fail("%s: findNext answered null with %d chunks neither completed nor claimed", exec, left)
			}
			return
		}
		release, ok := r.claimed(exec, c.DataID)
		if !ok {
			return
		}
		if release {
			if err := b.s.Release(b.ctx, c.Token); err != nil {
				r.fail("%s: release %s: %v", exec, c.DataID, err)
				return
			}
			continue
		}
		if err := b.s.Complete(b.ctx, c.Token); err != nil {
			r.fail("%s: complete %s: %v", exec, c.DataID, err)
			return
		}
		r.mu.Lock()
		r.completes[c.DataID]++
		delete(r.live, c.DataID) // after Complete: the chunk is READY, nobody may claim it again
		r.mu.Unlock()
	}
}

// claimed records exec's claim on d, false when another claim on d is
// live, and tells whether exec is to release it.
func (r *findNextRace) claimed(exec, d string) (release, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if holder, ok := r.live[d]; ok {
		r.failures = append(r.failures, fmt.Sprintf("%s got %s while %s's claim on it is live", exec, d, holder))
		return false, false
	}
	r.live[d] = exec
	r.claims[d]++
	// Give back every tenth chunk once, so chunks come back into play.
	release = !r.released[d] && d[len(d)-1] == '3'
	r.released[d] = r.released[d] || release
	if release {
		delete(r.live, d) // before Release: once released, another claim is legitimate
	}
	return release, true
}

// testClaimRace: two goroutines claim the same dataid at once; exactly one
// wins, the other is LOCKED by the winner's claim.
func (s *suite) testClaimRace(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	for i := 1; i <= s.cfg.claimRaces; i++ {
		d := strconv.Itoa(i)
		b.publish("src", d)
		start := make(chan struct{})
		var wg sync.WaitGroup
		results := make([]error, 2)
		claims := make([]*backends.Claim, 2)
		for g := range 2 {
			wg.Go(func() {
				<-start
				claims[g], results[g] = b.s.Claim(b.ctx, "ja", d, fmt.Sprintf("racer-%d", g))
			})
		}
		close(start)
		wg.Wait()
		winners := 0
		for g := range 2 {
			if results[g] == nil {
				winners++
				require.Equal(t, d, claims[g].DataID)
				continue
			}
			requireCode(t, results[g], backends.CodeLocked)
			require.True(t, hasBlocker(blockersOf(results[g]), backends.BlockerOutputLocked, "a", running),
				"the loser is blocked by the winner's claim: %v", results[g])
		}
		require.Equal(t, 1, winners, "dataid %s: exactly one claim wins", d)
		require.Equal(t, 1, b.liveClaimsAt("ja", d))
	}
}

// testForceRace: operators force the same chunk at once. Every force
// succeeds, fences are all different, and only the last one (the highest
// fence) is live; every other token is stale.
func (s *suite) testForceRace(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	const forcers = 8
	start := make(chan struct{})
	var wg sync.WaitGroup
	claims := make([]*backends.Claim, forcers)
	errs := make([]error, forcers)
	for g := range forcers {
		wg.Go(func() {
			<-start
			claims[g], errs[g] = b.s.Force(b.ctx, "ja", "1", fmt.Sprintf("operator-%d", g))
		})
	}
	close(start)
	wg.Wait()
	fences := map[int64]bool{}
	var last *backends.Claim
	for g := range forcers {
		require.NoError(t, errs[g])
		require.False(t, fences[claims[g].Fence], "fence %d issued twice", claims[g].Fence)
		fences[claims[g].Fence] = true
		if last == nil || claims[g].Fence > last.Fence {
			last = claims[g]
		}
	}
	live, err := b.s.Claims(b.ctx, "ja")
	require.NoError(t, err)
	require.Len(t, live, 1)
	require.Equal(t, last.Token, live[0].Token, "the live claim is the one with the highest fence")
	require.Equal(t, forcers, live[0].Attempt)
	for _, c := range claims {
		if c != last {
			requireCode(t, b.s.Complete(b.ctx, c.Token), backends.CodeStaleClaim)
		}
	}
	b.complete(last)
}

// testExpireLeasesRace: several reapers run at once; every expired claim
// is failed exactly once.
func (s *suite) testExpireLeasesRace(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	const claims, reapers = 20, 6
	for i := 1; i <= claims; i++ {
		d := strconv.Itoa(i)
		b.publish("src", d)
		b.claim("ja", d)
	}
	seq := b.lastSeq()
	b.clock.Advance(time.Duration(backends.DefaultLeaseSeconds) * time.Second)
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	var errs []error
	for range reapers {
		wg.Go(func() {
			n, err := b.s.ExpireLeases(b.ctx)
			mu.Lock()
			defer mu.Unlock()
			total += n
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	require.Empty(t, errs)
	require.Equal(t, claims, total, "each expired claim is counted by exactly one reaper")
	failedEvents := 0
	for _, e := range b.events(backends.EventFilter{After: seq}) {
		if e.Role == backends.RoleOutput {
			require.Equal(t, running, e.From)
			require.Equal(t, failed, e.To)
			failedEvents++
		}
	}
	require.Equal(t, claims, failedEvents, "each expired claim is failed exactly once")
	rows := listRows(t, b, backends.ChunkFilter{Dataset: "a", First: backends.MaxPageSize})
	require.Len(t, rows, claims)
	for _, r := range rows {
		require.Equal(t, failed, r.Status)
		require.Equal(t, 1, r.Attempt)
	}
}
