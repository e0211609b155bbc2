package backendtest

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// Runner pools (SPEC §6): claimNext makes many claims of a job in one
// call, by findNext's rules and in its order; completeMany, failMany and
// heartbeatMany end or extend many claims, each token on its own (SPEC §3,
// §4 under batches).

var runnerPoolTests = []testCase{
	{"ClaimNextOrderIsFindNexts", (*suite).testClaimNextOrder},
	{"ClaimNextSchedule", (*suite).testClaimNextSchedule},
	{"ClaimNextLimits", (*suite).testClaimNextLimits},
	{"ClaimNextArguments", (*suite).testClaimNextArguments},
	{"EndManyStaleIsolated", (*suite).testEndManyIsolated},
	{"EndManyRetries", (*suite).testEndManyRetries},
	{"HeartbeatMany", (*suite).testHeartbeatMany},
	{"ManyListBounds", (*suite).testManyBounds},
}

// claimNext calls ClaimNext and returns the claims and their dataids.
func (b *bundle) claimNext(job string, max int) ([]*backends.Claim, []string) {
	b.t.Helper()
	cs, err := b.s.ClaimNext(b.ctx, job, executor, max)
	require.NoError(b.t, err, "claimNext %s %d", job, max)
	ids := []string{}
	for _, c := range cs {
		ids = append(ids, c.DataID)
	}
	return cs, ids
}

// orderState builds, on a fresh store, src → jr → r with backoff and
// chunks in every state findNext's order looks at: READY inputs 1..12, 2
// and 9 RESUBMIT (first, lowest first), 4 FAILED in backoff (skipped), 6
// DONE (never again), 7 RUNNING (taken), 11 with its input on HOLD.
func (s *suite) orderState(t *testing.T) *bundle {
	b := s.setup(t)
	b.retryPipeline(60, 600)
	for i := 1; i <= 12; i++ {
		b.publish("src", strconv.Itoa(i))
	}
	for _, d := range []string{"2", "9", "6"} {
		b.run("jr", d)
	}
	for _, d := range []string{"9", "2"} {
		_, err := b.s.Resubmit(b.ctx, "r", d, false)
		require.NoError(t, err)
	}
	b.fail(b.claim("jr", "4"), "boom")
	b.claim("jr", "7")
	_, err := b.s.Hold(b.ctx, "src", "11", "bad feed")
	require.NoError(t, err)
	return b
}

// testClaimNextOrder: claimNext hands out what as many findNext calls in a
// row hand out, on a twin store, in the same order, attempts and leases,
// each with its own token and a fence above every earlier one; a second
// call goes on where the first stopped.
func (s *suite) testClaimNextOrder(t *testing.T) {
	want := []string{"2", "9", "1", "3", "5", "8", "10", "12"}
	twin := s.orderState(t)
	var seq []*backends.Claim
	for {
		c, _ := twin.next("jr")
		if c == nil {
			break
		}
		seq = append(seq, c)
	}
	require.Equal(t, want, dataidsOf(seq), "findNext's order (the twin store)")

	b := s.orderState(t)
	first, ids := b.claimNext("jr", 3)
	require.Equal(t, want[:3], ids)
	rest, ids := b.claimNext("jr", 100)
	require.Equal(t, want[3:], ids, "the next call goes on where the first stopped")
	all := append(first, rest...)
	tokens := map[string]bool{}
	for i, c := range all {
		require.Equal(t, seq[i].Attempt, c.Attempt, "attempt at %s", c.DataID)
		require.Equal(t, seq[i].LeaseExpiresAt.UTC(), c.LeaseExpiresAt.UTC())
		require.Equal(t, "jr", c.Job)
		require.Equal(t, executor, c.Executor)
		require.Len(t, c.Inputs, 1)
		require.False(t, tokens[c.Token], "every claim has its own token")
		tokens[c.Token] = true
		key, fence, err := backends.ParseToken(c.Token)
		require.NoError(t, err)
		require.Equal(t, c.DataID, key.DataID)
		require.Greater(t, fence, int64(0))
		require.Equal(t, running, b.status("r", c.DataID))
		require.Equal(t, running, b.inputStatus("src", c.DataID, "jr"))
	}
	none, ids := b.claimNext("jr", 5)
	require.Empty(t, none)
	require.Empty(t, ids)

	// Past the backoff, the failed chunk comes back, as to findNext.
	b.clock.Advance(61 * time.Second)
	_, ids = b.claimNext("jr", 5)
	require.Equal(t, []string{"4"}, ids)
}

func dataidsOf(cs []*backends.Claim) []string {
	ids := []string{}
	for _, c := range cs {
		ids = append(ids, c.DataID)
	}
	return ids
}

// testClaimNextSchedule: a job with no inputs whose output has an hourly
// definition claims its due hours, lowest first, in one call, and none
// before it is due.
func (s *suite) testClaimNextSchedule(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("h", partition.Def{Kind: partition.Hourly, Start: "2025-12-31T20"})
	b.upsertJob(backends.Job{ID: "jh", Output: "h"})
	_, ids := b.claimNext("jh", 10)
	require.Equal(t, []string{"2025-12-31T20", "2025-12-31T21", "2025-12-31T22", "2025-12-31T23"}, ids,
		"the due hours before the clock's (2026-01-01T00 ends at 01:00)")
	_, ids = b.claimNext("jh", 10)
	require.Empty(t, ids)
	b.clock.Advance(2 * time.Hour)
	_, ids = b.claimNext("jh", 10)
	require.Equal(t, []string{"2026-01-01T00", "2026-01-01T01"}, ids)
}

// testClaimNextLimits: maxConcurrent and a pool's slots are counted over
// the whole batch (SPEC §4 guarantee 7), and a slot given back by a batch
// ending is claimable by the next call.
func (s *suite) testClaimNextLimits(t *testing.T) {
	b := s.setup(t)
	b.limitedPipeline(3, 10)
	cs, ids := b.claimNext("ja", 10)
	require.Equal(t, []string{"1", "2", "3"}, ids, "maxConcurrent 3")
	_, ids = b.claimNext("ja", 10)
	require.Empty(t, ids)
	res, err := b.s.CompleteMany(b.ctx, []string{cs[0].Token, cs[2].Token})
	require.NoError(t, err)
	requireResults(t, res, "", "")
	_, ids = b.claimNext("ja", 10)
	require.Equal(t, []string{"4", "5"}, ids)
	require.Equal(t, 3, b.liveCount("ja"))

	// A pool of 3 slots shared by two jobs: one call takes what is free.
	p := s.setup(t)
	p.datasets("src", "a", "x")
	_, err = p.s.UpsertPool(p.ctx, backends.Pool{ID: "wh", Slots: 3})
	require.NoError(t, err)
	p.upsertJob(backends.Job{ID: "ja", Output: "a", Inputs: []string{"src"}, Pool: "wh"})
	p.upsertJob(backends.Job{ID: "jx", Output: "x", Inputs: []string{"src"}, Pool: "wh", MaxConcurrent: 2})
	for i := 1; i <= 6; i++ {
		p.publish("src", strconv.Itoa(i))
	}
	_, ids = p.claimNext("jx", 5)
	require.Equal(t, []string{"1", "2"}, ids, "jx's own limit first")
	as, ids := p.claimNext("ja", 5)
	require.Equal(t, []string{"1"}, ids, "one slot of the pool left")
	_, ids = p.claimNext("ja", 5)
	require.Empty(t, ids)
	res, err = p.s.FailMany(p.ctx, []backends.FailItem{{Token: as[0].Token, Reason: "no"}})
	require.NoError(t, err)
	requireResults(t, res, "")
	_, ids = p.claimNext("ja", 5)
	require.Equal(t, []string{"1"}, ids, "the failed chunk is claimable again (no backoff), in the slot it gave back")
}

// testClaimNextArguments: bad arguments are refused, an unknown job is
// NOT_FOUND, a paused job claims nothing.
func (s *suite) testClaimNextArguments(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1")
	for _, max := range []int{0, -1, backends.MaxClaimNext + 1} {
		_, err := b.s.ClaimNext(b.ctx, "ja", executor, max)
		requireCode(t, err, backends.CodeInvalidArgument, "max %d", max)
	}
	_, err := b.s.ClaimNext(b.ctx, "ja", "bad\x00executor", 1)
	requireCode(t, err, backends.CodeInvalidArgument)
	_, err = b.s.ClaimNext(b.ctx, "nope", executor, 1)
	requireCode(t, err, backends.CodeNotFound)
	b.upsertJob(backends.Job{ID: "ja", Output: "a", Inputs: []string{"src"}, Paused: true})
	_, ids := b.claimNext("ja", 5)
	require.Empty(t, ids, "a paused job claims nothing")
	b.upsertJob(backends.Job{ID: "ja", Output: "a", Inputs: []string{"src"}})
	_, ids = b.claimNext("ja", backends.MaxClaimNext)
	require.Equal(t, []string{"1"}, ids)
}

// requireResults checks the codes of a batch's results, in order ("": ok).
func requireResults(t *testing.T, res []backends.TokenResult, codes ...backends.Code) {
	t.Helper()
	require.Len(t, res, len(codes))
	for i, want := range codes {
		require.Equal(t, want, res[i].Code(), "result %d (%v)", i, res[i].Err)
		require.Equal(t, want == "", res[i].OK())
	}
}

// testEndManyIsolated: in one completeMany, a stale token (failed), a
// token of a claim superseded by a force, and a malformed one fail alone
// and change nothing; the others complete, answered in the order given.
func (s *suite) testEndManyIsolated(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2", "3", "4", "5")
	cs, ids := b.claimNext("ja", 5)
	require.Equal(t, []string{"1", "2", "3", "4", "5"}, ids)
	b.fail(cs[1], "boom")
	forced := b.force("ja", "4")
	before := *b.row("a", "2", "ja", backends.RoleOutput)
	tokens := []string{cs[0].Token, cs[1].Token, "ct1.garbage", cs[3].Token, cs[2].Token}
	res, err := b.s.CompleteMany(b.ctx, tokens)
	require.NoError(t, err)
	requireResults(t, res, "", backends.CodeStaleClaim, backends.CodeStaleClaim, backends.CodeStaleClaim, "")
	for i, r := range res {
		require.Equal(t, tokens[i], r.Token, "answered in the order given")
	}
	require.Equal(t, ready, b.status("a", "1"))
	require.Equal(t, ready, b.status("a", "3"))
	require.Equal(t, failed, b.status("a", "2"), "a stale token changes nothing")
	require.Equal(t, before, *b.row("a", "2", "ja", backends.RoleOutput))
	require.Equal(t, running, b.status("a", "4"))
	require.Equal(t, forced.Token, b.row("a", "4", "ja", backends.RoleOutput).Token, "the force's claim stands")
	require.Equal(t, running, b.status("a", "5"))

	res, err = b.s.FailMany(b.ctx, []backends.FailItem{{Token: cs[4].Token, Reason: "bad input"}, {Token: cs[0].Token, Reason: "late"}})
	require.NoError(t, err)
	requireResults(t, res, "", backends.CodeStaleClaim)
	require.Equal(t, failed, b.status("a", "5"))
	require.Equal(t, "bad input", b.row("a", "5", "ja", backends.RoleOutput).Reason)
	require.Equal(t, errored, b.inputStatus("src", "5", "ja"))
	require.Equal(t, ready, b.status("a", "1"), "a completed claim cannot be failed")
}

// testEndManyRetries: a batch repeated after a lost answer answers as the
// first did and changes nothing (SPEC §3), token by token; a heartbeat or
// another ending of an ended claim is STALE_CLAIM.
func (s *suite) testEndManyRetries(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2", "3", "4")
	cs, _ := b.claimNext("ja", 4)
	done := []string{cs[0].Token, cs[1].Token}
	failedItems := []backends.FailItem{{Token: cs[2].Token, Reason: "x"}, {Token: cs[3].Token, Reason: "y"}}
	res, err := b.s.CompleteMany(b.ctx, done)
	require.NoError(t, err)
	requireResults(t, res, "", "")
	res, err = b.s.FailMany(b.ctx, failedItems)
	require.NoError(t, err)
	requireResults(t, res, "", "")
	seq, snap := b.lastSeq(), b.snapshot()

	res, err = b.s.CompleteMany(b.ctx, done)
	require.NoError(t, err)
	requireResults(t, res, "", "")
	res, err = b.s.FailMany(b.ctx, failedItems)
	require.NoError(t, err)
	requireResults(t, res, "", "")
	// The same token twice in one list: the second is a repeat.
	res, err = b.s.CompleteMany(b.ctx, []string{done[0], done[0]})
	require.NoError(t, err)
	requireResults(t, res, "", "")
	require.Equal(t, seq, b.lastSeq(), "repeats record no event")
	require.Equal(t, snap, b.snapshot(), "repeats change nothing")

	res, err = b.s.FailMany(b.ctx, []backends.FailItem{{Token: done[0]}})
	require.NoError(t, err)
	requireResults(t, res, backends.CodeStaleClaim)
	res, err = b.s.CompleteMany(b.ctx, []string{failedItems[0].Token})
	require.NoError(t, err)
	requireResults(t, res, backends.CodeStaleClaim)
	res, err = b.s.HeartbeatMany(b.ctx, []string{done[1], failedItems[1].Token})
	require.NoError(t, err)
	requireResults(t, res, backends.CodeStaleClaim, backends.CodeStaleClaim)
	require.Equal(t, snap, b.snapshot())
}

// testHeartbeatMany: each live claim's lease moves to now + leaseSeconds
// and is answered; a claim past its lease is stale alone, and the reaper
// fails only it.
func (s *suite) testHeartbeatMany(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2", "3")
	cs, _ := b.claimNext("ja", 3)
	lease := time.Duration(backends.DefaultLeaseSeconds) * time.Second
	b.clock.Advance(lease / 2)
	res, err := b.s.HeartbeatMany(b.ctx, []string{cs[0].Token, cs[1].Token})
	require.NoError(t, err)
	requireResults(t, res, "", "")
	for i, r := range res {
		require.Equal(t, b.clock.Now().Add(lease).UTC(), r.LeaseExpiresAt.UTC(), "claim %d", i)
		require.Equal(t, r.LeaseExpiresAt.UTC(), b.row("a", cs[i].DataID, "ja", backends.RoleOutput).LeaseExpiresAt.UTC())
	}
	b.clock.Advance(lease/2 + time.Second)
	res, err = b.s.HeartbeatMany(b.ctx, []string{cs[0].Token, cs[2].Token, cs[1].Token})
	require.NoError(t, err)
	requireResults(t, res, "", backends.CodeStaleClaim, "")
	require.True(t, res[1].LeaseExpiresAt.IsZero(), "a stale token has no lease")
	n, err := b.s.ExpireLeases(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, failed, b.status("a", "3"))
	require.Equal(t, running, b.status("a", "1"))
}

// testManyBounds: lists are bounded; an empty list answers an empty list.
func (s *suite) testManyBounds(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	long := make([]string, backends.MaxManyTokens+1)
	for i := range long {
		long[i] = "ct1.garbage"
	}
	_, err := b.s.CompleteMany(b.ctx, long)
	requireCode(t, err, backends.CodeInvalidArgument)
	_, err = b.s.HeartbeatMany(b.ctx, long)
	requireCode(t, err, backends.CodeInvalidArgument)
	_, err = b.s.FailMany(b.ctx, make([]backends.FailItem, backends.MaxManyTokens+1))
	requireCode(t, err, backends.CodeInvalidArgument)
	res, err := b.s.CompleteMany(b.ctx, nil)
	require.NoError(t, err)
	require.Empty(t, res)
	res, err = b.s.CompleteMany(b.ctx, long[:backends.MaxManyTokens])
	require.NoError(t, err)
	require.Len(t, res, backends.MaxManyTokens)
	require.Equal(t, backends.CodeStaleClaim, res[0].Code(), "as the single operation answers a malformed token")
}
