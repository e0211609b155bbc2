package backendtest

import (
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

// guaranteeTests check SPEC §4, guarantees 1 to 5, one subtest each.
// Guarantee 6 (a copy of the store alone reveals no secret) is the keys
// layer's: the store only ever sees ciphertext, and the keys package tests it.
var guaranteeTests = []testCase{
	{"Guarantee1NeverTwoLiveClaims", (*suite).testGuarantee1},
	{"Guarantee2InputChunkClaimedOnce", (*suite).testGuarantee2},
	{"Guarantee3OnlyReadyChunksAreRead", (*suite).testGuarantee3},
	{"Guarantee4FencesAndStaleTokens", (*suite).testGuarantee4},
	{"Guarantee5NoClaimIsLost", (*suite).testGuarantee5},
}

// liveClaimsAt counts the claims Claims reports on job's output at dataid.
func (b *bundle) liveClaimsAt(job, dataid string) int {
	b.t.Helper()
	claims, err := b.s.Claims(b.ctx, job)
	require.NoError(b.t, err)
	n := 0
	for _, c := range claims {
		if c.DataID == dataid {
			n++
		}
	}
	return n
}

func (s *suite) testGuarantee1(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1")
	c := b.claim("ja", "1")
	_, err := b.s.Claim(b.ctx, "ja", "1", "second")
	requireCode(t, err, backends.CodeLocked)
	_, d := b.next("ja")
	require.Empty(t, d)
	require.Equal(t, 1, b.liveClaimsAt("ja", "1"))

	// Past its lease but not reaped: still nobody else's.
	b.clock.Advance(61 * time.Second)
	_, err = b.s.Claim(b.ctx, "ja", "1", "second")
	requireCode(t, err, backends.CodeLocked)
	_, d = b.next("ja")
	require.Empty(t, d)

	// Force supersedes: the old token dies in the same step.
	c2 := b.force("ja", "1")
	require.Equal(t, 1, b.liveClaimsAt("ja", "1"))
	requireCode(t, b.s.Complete(b.ctx, c.Token), backends.CodeStaleClaim)
	b.complete(c2)
	require.Zero(t, b.liveClaimsAt("ja", "1"))
}

func (s *suite) testGuarantee2(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2")
	c1, d1 := b.next("ja")
	c2, d2 := b.next("ja")
	require.Equal(t, "1", d1)
	require.Equal(t, "2", d2, "a second instance of the job skips the input chunk the first holds")
	_, d := b.next("ja")
	require.Empty(t, d)
	b.complete(c1)
	b.fail(c2, "boom")

	// DONE: never again, unless resubmitted.
	_, d = b.next("ja")
	require.Equal(t, "2", d, "ERROR released the local lock")
	_, d = b.next("ja")
	require.Empty(t, d)
	_, err := b.s.Claim(b.ctx, "ja", "1", executor)
	requireCode(t, err, backends.CodeLocked)
	require.Equal(t, done, b.inputStatus("src", "1", "ja"))
	_, err = b.s.Resubmit(b.ctx, "a", "1", false)
	require.NoError(t, err)
	c, d := b.next("ja")
	require.Equal(t, "1", d, "resubmitted: the DONE input may be read again")
	require.Equal(t, running, b.inputStatus("src", "1", "ja"))
	_, err = b.s.Claim(b.ctx, "ja", "1", executor)
	requireCode(t, err, backends.CodeLocked)
	b.complete(c)
}

// testGuarantee3 walks a/1 through every status but READY and checks that
// its consumer never gets it, then that it does once READY.
func (s *suite) testGuarantee3(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1")
	consumerBlocked := func(st backends.Status) {
		t.Helper()
		require.Equal(t, st, b.status("a", "1"))
		_, d := b.next("jb")
		require.Empty(t, d, "jb got a/1 while it was %q", st)
		_, err := b.s.Claim(b.ctx, "jb", "1", executor)
		requireLocked(t, err, "1", bk{backends.BlockerInputNotReady, "a", "ja", st})
	}
	consumerBlocked(none)
	c := b.claim("ja", "1")
	consumerBlocked(running)
	b.fail(c, "boom")
	consumerBlocked(failed)
	c = b.claim("ja", "1")
	b.release(c)
	consumerBlocked(failed)
	_, err := b.s.Hold(b.ctx, "a", "1", "x")
	require.NoError(t, err)
	consumerBlocked(hold)
	_, err = b.s.Resubmit(b.ctx, "a", "1", false)
	require.NoError(t, err)
	consumerBlocked(resubmit)
	b.run("ja", "1")
	c, d := b.next("jb")
	require.Equal(t, "1", d)
	require.Equal(t, ready, b.status("a", "1"))
	b.complete(c)
}

// testGuarantee4: fences of successive claims on one output chunk strictly
// increase, whatever ended the previous claim, and a stale token — or a
// forged one — changes nothing.
func (s *suite) testGuarantee4(t *testing.T) {
	b := s.setup(t)
	b.datasets("src", "a")
	b.upsertJob(backends.Job{ID: "ja", Inputs: []string{"src"}, Output: "a", MaxAttempts: 10, LeaseSeconds: 30})
	b.publish("src", "1")

	var fences []int64
	var stale []string
	claimed := func(c *backends.Claim) *backends.Claim {
		fences = append(fences, c.Fence)
		return c
	}
	c := claimed(b.claim("ja", "1"))
	b.fail(c, "boom")
	stale = append(stale, c.Token)
	c = claimed(b.claim("ja", "1"))
	b.release(c)
	stale = append(stale, c.Token)
	c = claimed(b.claim("ja", "1"))
	b.clock.Advance(30 * time.Second)
	_, err := b.s.ExpireLeases(b.ctx)
	require.NoError(t, err)
	stale = append(stale, c.Token)
	c = claimed(b.claim("ja", "1"))
	c2 := claimed(b.force("ja", "1"))
	stale = append(stale, c.Token)
	b.complete(c2)
	stale = append(stale, c2.Token)
	_, err = b.s.Resubmit(b.ctx, "a", "1", false)
	require.NoError(t, err)
	c, _ = b.next("ja")
	claimed(c)
	for i := 1; i < len(fences); i++ {
		require.Greater(t, fences[i], fences[i-1], "fences %v", fences)
	}

	// While c is live: every stale token, and tokens that were never
	// issued, are refused and change nothing.
	forged := []string{
		"", "garbage", "ct1.", "ct1.!!!!", "ct2." + c.Token[4:],
		backends.NewToken("ja", "a", "1", c.Fence), // right chunk and fence, wrong nonce
		backends.NewToken("ja", "a", "2", 1),
		backends.NewToken("nope", "a", "1", c.Fence),
		backends.NewToken("ja", "src", "1", c.Fence),
	}
	before := b.snapshot()
	for _, tok := range append(stale, forged...) {
		_, err := b.s.Heartbeat(b.ctx, tok)
		requireCode(t, err, backends.CodeStaleClaim, "heartbeat %q", tok)
		requireCode(t, b.s.Complete(b.ctx, tok), backends.CodeStaleClaim, "complete %q", tok)
		requireCode(t, b.s.Fail(b.ctx, tok, "x"), backends.CodeStaleClaim, "fail %q", tok)
		requireCode(t, b.s.Release(b.ctx, tok), backends.CodeStaleClaim, "release %q", tok)
	}
	require.Equal(t, before, b.snapshot(), "stale and forged tokens changed something")
	b.complete(c)
}

// testGuarantee5: an executor dies without a word; after its lease (and one
// reaper pass) the chunk is claimable again.
func (s *suite) testGuarantee5(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1")
	c, _ := b.next("ja")
	b.clock.Advance(50 * time.Second)
	_, err := b.s.Heartbeat(b.ctx, c.Token)
	require.NoError(t, err)
	// The executor dies right after its heartbeat at t=50: lease ends at t=110.
	b.clock.Advance(59 * time.Second)
	n, err := b.s.ExpireLeases(b.ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	b.clock.Advance(time.Second)
	n, err = b.s.ExpireLeases(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	c2, d := b.next("ja")
	require.Equal(t, "1", d, "the dead executor's chunk is claimable again")
	require.Equal(t, 2, c2.Attempt)
	b.complete(c2)
	_, d = b.next("jb")
	require.Equal(t, "1", d)
}
