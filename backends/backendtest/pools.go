package backendtest

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// Concurrency limits (SPEC §1 Job/Pool, §3 findNext/claim/force, §4
// guarantee 7): a job's maxConcurrent and a pool's slots.

var poolTests = []testCase{
	{"PoolDefinitions", (*suite).testPoolDefinitions},
	{"MaxConcurrent", (*suite).testMaxConcurrent},
	{"MaxConcurrentEndingsReturnSlots", (*suite).testEndingsReturnSlots},
	{"MaxConcurrentHeartbeatKeepsSlot", (*suite).testHeartbeatKeepsSlot},
	{"PoolSlots", (*suite).testPoolSlots},
	{"PoolLoweredBelowLive", (*suite).testPoolLowered},
	{"ConcurrencyLimitChanges", (*suite).testLimitChanges},
}

// concurrent is a bk for a CONCURRENCY blocker of job on its output.
func concurrent(job, output string) bk {
	return bk{kind: backends.BlockerConcurrency, dataset: output, job: job, status: none}
}

// limitedPipeline: src (a source) → ja (maxConcurrent n) → a, with
// chunks 1..chunks of src published.
func (b *bundle) limitedPipeline(n, chunks int) {
	b.t.Helper()
	b.datasets("src", "a")
	b.upsertJob(backends.Job{ID: "ja", Output: "a", Inputs: []string{"src"}, MaxConcurrent: n})
	for i := 1; i <= chunks; i++ {
		b.publish("src", strconv.Itoa(i))
	}
}

// liveCount is how many live claims job holds now (Claims).
func (b *bundle) liveCount(job string) int {
	b.t.Helper()
	cs, err := b.s.Claims(b.ctx, job)
	require.NoError(b.t, err)
	return len(cs)
}

func (s *suite) testPoolDefinitions(t *testing.T) {
	b := s.setup(t)
	for _, bad := range []backends.Pool{{ID: "Warehouse", Slots: 1}, {ID: "", Slots: 1}, {ID: "wh", Slots: 0}, {ID: "wh", Slots: -2},
		{ID: "wh", Slots: 1, Description: "bad\x00text"}} {
		_, err := b.s.UpsertPool(b.ctx, bad)
		requireCode(t, err, backends.CodeInvalidArgument, "pool %+v", bad)
	}
	ps, err := b.s.Pools(b.ctx)
	require.NoError(t, err)
	require.Empty(t, ps)
	_, err = b.s.Pool(b.ctx, "wh")
	requireCode(t, err, backends.CodeNotFound)

	p, err := b.s.UpsertPool(b.ctx, backends.Pool{ID: "wh", Slots: 4, Description: "the warehouse takes four loads"})
	require.NoError(t, err)
	require.Equal(t, 4, p.Slots)
	require.Equal(t, epoch, p.CreatedAt)
	_, err = b.s.UpsertPool(b.ctx, backends.Pool{ID: "api", Slots: 1})
	require.NoError(t, err)
	b.clock.Advance(time.Minute)
	p, err = b.s.UpsertPool(b.ctx, backends.Pool{ID: "wh", Slots: 2})
	require.NoError(t, err)
	require.Equal(t, epoch, p.CreatedAt, "an update keeps the creation time")
	require.Equal(t, epoch.Add(time.Minute), p.UpdatedAt)
	got, err := b.s.Pool(b.ctx, "wh")
	require.NoError(t, err)
	require.Equal(t, p, got)
	ps, err = b.s.Pools(b.ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"api", "wh"}, []string{ps[0].ID, ps[1].ID})

	b.datasets("src", "a")
	_, err = b.s.UpsertJob(b.ctx, backends.Job{ID: "ja", Output: "a", Inputs: []string{"src"}, Pool: "nope"})
	requireCode(t, err, backends.CodeNotFound)
	require.Contains(t, err.Error(), `pool "nope"`)
	_, err = b.s.UpsertJob(b.ctx, backends.Job{ID: "ja", Output: "a", Inputs: []string{"src"}, MaxConcurrent: -1})
	requireCode(t, err, backends.CodeInvalidArgument)
	j := b.upsertJob(backends.Job{ID: "ja", Output: "a", Inputs: []string{"src"}, Pool: "wh", MaxConcurrent: 3})
	require.Equal(t, "wh", j.Pool)
	require.Equal(t, 3, j.MaxConcurrent)
	j, err = b.s.Job(b.ctx, "ja")
	require.NoError(t, err)
	require.Equal(t, "wh", j.Pool)
	require.Equal(t, 3, j.MaxConcurrent)
}

// testMaxConcurrent: findNext answers nil at the limit without losing
// candidates, claim is LOCKED with CONCURRENCY (and blockers say so),
// force ignores the limit but holds a slot.
func (s *suite) testMaxConcurrent(t *testing.T) {
	b := s.setup(t)
	b.limitedPipeline(2, 6)
	c1, d1 := b.next("ja")
	c2, d2 := b.next("ja")
	require.Equal(t, []string{"1", "2"}, []string{d1, d2})
	for range 3 {
		c, _ := b.next("ja")
		require.Nil(t, c, "at maxConcurrent findNext answers nil")
	}
	_, err := b.s.Claim(b.ctx, "ja", "4", executor)
	requireLocked(t, err, "4", concurrent("ja", "a"))
	b.requireBlockers("ja", "4", concurrent("ja", "a"))
	b.requireBlockers("ja", "1", bk{kind: backends.BlockerOutputLocked, dataset: "a", job: "ja", status: running},
		bk{kind: backends.BlockerLocalRead, dataset: "src", job: "ja", status: running},
		bk{kind: backends.BlockerConcurrency, dataset: "a", job: "ja", status: running})

	f := b.force("ja", "5")
	require.Equal(t, 3, b.liveCount("ja"), "force ignores the limit")
	b.complete(c1)
	c, _ := b.next("ja")
	require.Nil(t, c, "the forced claim holds a slot")
	b.complete(f)
	c3, d3 := b.next("ja")
	require.Equal(t, "3", d3, "the candidates passed over at the limit were kept, in order")
	b.complete(c2)
	b.complete(c3)
	_, d4 := b.next("ja")
	_, d6 := b.next("ja")
	require.Equal(t, []string{"4", "6"}, []string{d4, d6})
	c, _ = b.next("ja")
	require.Nil(t, c)
}

// testEndingsReturnSlots: complete, fail, release, a lease passing (before
// and after the reaper) and a superseding force each give the slot back.
func (s *suite) testEndingsReturnSlots(t *testing.T) {
	b := s.setup(t)
	b.limitedPipeline(1, 8)
	c, _ := b.next("ja")
	full := func(what string) {
		t.Helper()
		n, _ := b.next("ja")
		require.Nil(t, n, "the slot is held: %s", what)
		b.requireBlockers("ja", "8", concurrent("ja", "a"))
	}
	full("claimed")
	b.complete(c)
	c, _ = b.next("ja")
	require.NotNil(t, c, "complete returns the slot")
	full("claimed again")
	b.fail(c, "boom")
	c, _ = b.next("ja")
	require.NotNil(t, c, "fail returns the slot")
	b.release(c)
	c, _ = b.next("ja")
	require.NotNil(t, c, "release returns the slot")
	full("after release")

	// Past its lease a claim is not live, even before the reaper runs.
	b.clock.Advance(backends.DefaultLeaseSeconds * time.Second)
	b.requireBlockers("ja", "8")
	c2, _ := b.next("ja")
	require.NotNil(t, c2, "a claim past its lease holds no slot")
	_, err := b.s.Heartbeat(b.ctx, c.Token)
	requireCode(t, err, backends.CodeStaleClaim)
	b.clock.Advance(backends.DefaultLeaseSeconds * time.Second)
	n, err := b.s.ExpireLeases(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	c3 := b.claim("ja", "7")
	full("after the reaper")
	f := b.force("ja", c3.DataID)
	require.Equal(t, 1, b.liveCount("ja"))
	full("a force superseding the claim holds its one slot")
	b.complete(f)
	b.requireBlockers("ja", "8")
}

// testHeartbeatKeepsSlot: a heartbeat extends the claim, and its slot with
// it, past the lease it was claimed with.
func (s *suite) testHeartbeatKeepsSlot(t *testing.T) {
	b := s.setup(t)
	b.limitedPipeline(1, 3)
	c, _ := b.next("ja")
	for range 4 {
		b.clock.Advance(time40s)
		_, err := b.s.Heartbeat(b.ctx, c.Token)
		require.NoError(t, err)
		n, _ := b.next("ja")
		require.Nil(t, n, "the heartbeated claim keeps its slot")
	}
	b.clock.Advance(backends.DefaultLeaseSeconds * time.Second)
	n, _ := b.next("ja")
	require.NotNil(t, n, "once its lease passes the slot comes back")
}

// poolPipeline: src → ja → a and src → jx → x, both in pool wh of slots,
// with chunks 1..chunks of src published.
func (b *bundle) poolPipeline(slots, chunks int) {
	b.t.Helper()
	_, err := b.s.UpsertPool(b.ctx, backends.Pool{ID: "wh", Slots: slots})
	require.NoError(b.t, err)
	b.datasets("src", "a", "x")
	b.upsertJob(backends.Job{ID: "ja", Output: "a", Inputs: []string{"src"}, Pool: "wh"})
	b.upsertJob(backends.Job{ID: "jx", Output: "x", Inputs: []string{"src"}, Pool: "wh"})
	for i := 1; i <= chunks; i++ {
		b.publish("src", strconv.Itoa(i))
	}
}

func (s *suite) testPoolSlots(t *testing.T) {
	b := s.setup(t)
	b.poolPipeline(2, 4)
	ca, _ := b.next("ja")
	cx, _ := b.next("jx")
	require.NotNil(t, ca)
	require.NotNil(t, cx)
	for _, job := range []string{"ja", "jx"} {
		c, _ := b.next(job)
		require.Nil(t, c, "%s: the pool has no free slot", job)
	}
	_, err := b.s.Claim(b.ctx, "ja", "3", executor)
	requireCode(t, err, backends.CodeLocked)
	var e *backends.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, []backends.Blocker{{Dataset: "a", DataID: "3", Job: "ja", Kind: backends.BlockerConcurrency, Pool: "wh"}},
		e.Blockers, "the blocker names the pool")
	bs, err := b.s.Blockers(b.ctx, "jx", "3")
	require.NoError(t, err)
	require.Equal(t, []backends.Blocker{{Dataset: "x", DataID: "3", Job: "jx", Kind: backends.BlockerConcurrency, Pool: "wh"}}, bs)

	b.release(ca)
	c, d := b.next("jx")
	require.Equal(t, "2", d, "a slot given back by one job serves another")
	b.complete(c)
	b.complete(cx)
	ca, _ = b.next("ja")
	cx, _ = b.next("jx")
	require.NotNil(t, ca)
	require.NotNil(t, cx)

	// A job with both a pool and a maxConcurrent obeys both.
	b.upsertJob(backends.Job{ID: "jx", Output: "x", Inputs: []string{"src"}, Pool: "wh", MaxConcurrent: 1})
	_, err = b.s.UpsertPool(b.ctx, backends.Pool{ID: "wh", Slots: 5})
	require.NoError(t, err)
	c, _ = b.next("jx")
	require.Nil(t, c, "jx is at its own maxConcurrent")
	c, _ = b.next("ja")
	require.NotNil(t, c, "the pool has room for ja")
}

// testPoolLowered: lowering slots below the live claims takes nothing
// away; no claim is made until they are fewer than the slots.
func (s *suite) testPoolLowered(t *testing.T) {
	b := s.setup(t)
	b.poolPipeline(3, 6)
	var cs []*backends.Claim
	for _, job := range []string{"ja", "jx", "ja"} {
		c, _ := b.next(job)
		require.NotNil(t, c)
		cs = append(cs, c)
	}
	_, err := b.s.UpsertPool(b.ctx, backends.Pool{ID: "wh", Slots: 1})
	require.NoError(t, err)
	for _, c := range cs {
		_, err := b.s.Heartbeat(b.ctx, c.Token)
		require.NoError(t, err, "live claims stay live")
	}
	b.complete(cs[0])
	c, _ := b.next("jx")
	require.Nil(t, c, "two live claims, one slot")
	b.complete(cs[1])
	c, _ = b.next("jx")
	require.Nil(t, c, "one live claim, one slot")
	b.complete(cs[2])
	c, _ = b.next("jx")
	require.NotNil(t, c, "under the slots again")
	require.Equal(t, 1, b.liveCount(""))
}

// testLimitChanges: a limit set while claims are live counts them; a job
// that leaves a pool no longer holds its slots; a limit removed and set
// again counts only the claims live then.
func (s *suite) testLimitChanges(t *testing.T) {
	b := s.setup(t)
	b.poolPipeline(1, 6)
	ca, _ := b.next("ja")
	require.NotNil(t, ca)
	c, _ := b.next("jx")
	require.Nil(t, c)
	b.upsertJob(backends.Job{ID: "ja", Output: "a", Inputs: []string{"src"}})
	cx, _ := b.next("jx")
	require.NotNil(t, cx, "ja left the pool: its claim holds no slot of it")

	b.upsertJob(backends.Job{ID: "ja", Output: "a", Inputs: []string{"src"}, MaxConcurrent: 1})
	c, _ = b.next("ja")
	require.Nil(t, c, "the claim made before the limit counts against it")
	b.upsertJob(backends.Job{ID: "ja", Output: "a", Inputs: []string{"src"}})
	b.complete(ca) // ended while ja had no limit
	ca, _ = b.next("ja")
	require.NotNil(t, ca)
	b.upsertJob(backends.Job{ID: "ja", Output: "a", Inputs: []string{"src"}, MaxConcurrent: 2})
	c, _ = b.next("ja")
	require.NotNil(t, c, "one claim live, limit 2: the claim ended meanwhile holds nothing")
	c, _ = b.next("ja")
	require.Nil(t, c, "two live, limit 2")
}
