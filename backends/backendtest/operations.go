package backendtest

import (
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

// operationTests cover every operation of SPEC §3 and its error cases.
var operationTests = []testCase{
	{"FindNextOrder", (*suite).testFindNextOrder},
	{"FindNextResubmitFirst", (*suite).testFindNextResubmitFirst},
	{"FindNextPaused", (*suite).testFindNextPaused},
	{"FindNextNoInputs", (*suite).testFindNextNoInputs},
	{"FindNextTwoInputs", (*suite).testFindNextTwoInputs},
	{"ClaimResult", (*suite).testClaimResult},
	{"ClaimLocked", (*suite).testClaimLocked},
	{"Force", (*suite).testForce},
	{"Heartbeat", (*suite).testHeartbeat},
	{"CompleteAndFail", (*suite).testCompleteAndFail},
	{"Release", (*suite).testRelease},
	{"LeaseExpiry", (*suite).testLeaseExpiry},
	{"MaxAttemptsHold", (*suite).testMaxAttemptsHold},
	{"HoldAndResubmit", (*suite).testHoldAndResubmit},
	{"OperatorEventsNameNoExecutor", (*suite).testOperatorEventsNameNoExecutor},
	{"Publish", (*suite).testPublish},
	{"ResubmitCascade", (*suite).testResubmitCascade},
	{"ResubmitCascadeDiamond", (*suite).testResubmitCascadeDiamond},
	{"Backfill", (*suite).testBackfill},
	{"FailReasonAnyBytes", (*suite).testFailReasonAnyBytes},
}

// drain runs FindNext + Complete until nothing is claimable and returns the
// dataids in the order they were claimed.
func (b *bundle) drain(job string) []string {
	b.t.Helper()
	var order []string
	for range 1000 {
		c, d := b.next(job)
		if c == nil {
			return order
		}
		order = append(order, d)
		b.complete(c)
	}
	b.t.Fatal("findNext keeps returning claims")
	return nil
}

func (s *suite) testFindNextOrder(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	_, d := b.next("ja")
	require.Empty(t, d, "nothing is claimable before anything is published")
	// Shortlex: shorter first, then byte-wise, so "9" < "10" and integers
	// sort as numbers.
	b.publish("src", "10", "2", "9", "100", "1", "11")
	require.Equal(t, []string{"1", "2", "9", "10", "11", "100"}, b.drain("ja"))
	b.publish("src", "2026-11-10", "2026-11-02", "2026-02-28", "2025-12-31")
	require.Equal(t, []string{"2025-12-31", "2026-02-28", "2026-11-02", "2026-11-10"}, b.drain("ja"))
	// Byte order within one length: digits < upper case < lower case.
	b.publish("src", "b0", "a0", "B0", "00")
	require.Equal(t, []string{"00", "B0", "a0", "b0"}, b.drain("ja"))
	// Downstream sees the same order.
	require.Equal(t, []string{"1", "2", "9", "00", "10", "11", "B0", "a0", "b0", "100",
		"2025-12-31", "2026-02-28", "2026-11-02", "2026-11-10"}, b.drain("jb"))
}

// testFindNextResubmitFirst: RESUBMIT chunks (whose inputs are READY) come
// before everything else, lowest first; then the lowest new or FAILED chunk.
func (s *suite) testFindNextResubmitFirst(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2", "100")
	require.Equal(t, []string{"1", "2", "100"}, b.drain("ja"))

	b.publish("src", "5")
	b.fail(b.claim("ja", "5"), "boom") // a/5 FAILED
	b.publish("src", "7")              // a/7 new
	// a/3 RESUBMIT but src/3 is not published: rule 1 needs READY inputs.
	_, err := b.s.Hold(b.ctx, "a", "3", "operator")
	require.NoError(t, err)
	_, err = b.s.Resubmit(b.ctx, "a", "3", false)
	require.NoError(t, err)
	for _, d := range []string{"100", "2"} {
		_, err := b.s.Resubmit(b.ctx, "a", d, false)
		require.NoError(t, err)
	}
	var got []string
	var attempts []int
	for {
		c, d := b.next("ja")
		if c == nil {
			break
		}
		got, attempts = append(got, d), append(attempts, c.Attempt)
		b.complete(c)
	}
	require.Equal(t, []string{"2", "100", "5", "7"}, got)
	require.Equal(t, []int{1, 1, 2, 1}, attempts, "resubmit resets the attempt count")
	b.publish("src", "3")
	c, d := b.next("ja")
	require.Equal(t, "3", d)
	require.Equal(t, 1, c.Attempt)
	b.complete(c)

	// A chunk resubmitted twice, claimed from RESUBMIT and failed, is an
	// ordinary FAILED chunk again: a lower new chunk comes first.
	for range 2 {
		_, err := b.s.Resubmit(b.ctx, "a", "9", false)
		requireCode(t, err, backends.CodeNotFound)
	}
	b.publish("src", "9")
	b.run("ja", "9")
	for range 2 {
		_, err := b.s.Resubmit(b.ctx, "a", "9", false)
		require.NoError(t, err)
	}
	c, d = b.next("ja")
	require.Equal(t, "9", d)
	b.fail(c, "boom")
	require.Equal(t, failed, b.status("a", "9"))
	b.publish("src", "8")
	_, d = b.next("ja")
	require.Equal(t, "8", d, "a FAILED chunk waits its turn in dataid order")
}

func (s *suite) testFindNextPaused(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2")
	b.upsertJob(backends.Job{ID: "ja", Inputs: []string{"src"}, Output: "a", Paused: true})
	_, d := b.next("ja")
	require.Empty(t, d, "a paused job claims nothing")
	_, err := b.s.Claim(b.ctx, "ja", "1", executor)
	requireLocked(t, err, "1", bk{backends.BlockerPaused, "a", "ja", none})
	b.requireBlockers("ja", "1", bk{backends.BlockerPaused, "a", "ja", none})
	require.Empty(t, b.allRowsOf("a"), "a paused job wrote nothing")

	b.upsertJob(backends.Job{ID: "ja", Inputs: []string{"src"}, Output: "a"})
	require.Equal(t, []string{"1", "2"}, b.drain("ja"), "unpaused, the job finds its chunks again")
}

func (b *bundle) allRowsOf(dataset string) []backends.StatusRow {
	b.t.Helper()
	return listRows(b.t, b, backends.ChunkFilter{Dataset: dataset})
}

// testFindNextNoInputs: a job without inputs gets only RESUBMIT and FAILED
// chunks from findNext; it claims new dataids with claim.
func (s *suite) testFindNextNoInputs(t *testing.T) {
	b := s.setup(t)
	b.datasets("g")
	b.job("gen", "g")
	_, d := b.next("gen")
	require.Empty(t, d)
	b.requireBlockers("gen", "1") // claimable by claim

	b.run("gen", "1")                   // g/1 READY
	b.fail(b.claim("gen", "2"), "boom") // g/2 FAILED
	b.release(b.claim("gen", "3"))      // g/3 back to no row
	b.run("gen", "4")                   // g/4 READY, then RESUBMIT
	_, err := b.s.Resubmit(b.ctx, "g", "4", false)
	require.NoError(t, err)
	_, err = b.s.Hold(b.ctx, "g", "5", "not yet") // g/5 HOLD
	require.NoError(t, err)
	require.Equal(t, none, b.status("g", "3"))

	c, d := b.next("gen")
	require.Equal(t, "4", d, "RESUBMIT first")
	b.complete(c)
	c, d = b.next("gen")
	require.Equal(t, "2", d, "then FAILED")
	require.Equal(t, 2, c.Attempt)
	b.complete(c)
	_, d = b.next("gen")
	require.Empty(t, d, "a released new dataid is not handed out by findNext: it had no row before")

	c = b.claim("gen", "3")
	require.Equal(t, 1, c.Attempt, "a released claim did not count as an attempt")
	b.complete(c)
	_, err = b.s.Claim(b.ctx, "gen", "1", executor)
	requireLocked(t, err, "1", bk{backends.BlockerOutputLocked, "g", "gen", ready})
	_, err = b.s.Claim(b.ctx, "gen", "5", executor)
	requireLocked(t, err, "5", bk{backends.BlockerOutputLocked, "g", "gen", hold})
}

func (s *suite) testFindNextTwoInputs(t *testing.T) {
	b := s.setup(t)
	b.datasets("x", "y", "m")
	b.job("jm", "m", "x", "y")
	b.publish("x", "1", "2", "3")
	b.publish("y", "3")
	_, d := b.next("jm")
	require.Equal(t, "3", d, "every input must be READY")
	_, d = b.next("jm")
	require.Empty(t, d)
	b.requireBlockers("jm", "1", bk{backends.BlockerInputNotReady, "y", "", none})
	b.requireBlockers("jm", "4", bk{backends.BlockerInputNotReady, "x", "", none}, bk{backends.BlockerInputNotReady, "y", "", none})
	b.publish("y", "2", "1")
	require.Equal(t, []string{"1", "2"}, b.drain("jm"))
	for _, in := range []string{"x", "y"} {
		require.Equal(t, done, b.inputStatus(in, "1", "jm"))
	}
}

func (s *suite) testClaimResult(t *testing.T) {
	b := s.setup(t)
	b.datasets("x", "y", "m")
	b.upsertJob(backends.Job{ID: "jm", Inputs: []string{"x", "y"}, Output: "m", LeaseSeconds: 90})
	b.publish("x", "1")
	b.publish("y", "1")
	b.clock.Advance(time40s)
	c, err := b.s.Claim(b.ctx, "jm", "1", "host-1/pid-2")
	require.NoError(t, err)
	require.NotEmpty(t, c.Token)
	require.Equal(t, "jm", c.Job)
	require.Equal(t, "m", c.Output)
	require.Equal(t, []string{"x", "y"}, c.Inputs)
	require.Equal(t, "1", c.DataID)
	require.Equal(t, 1, c.Attempt)
	require.Equal(t, "host-1/pid-2", c.Executor)
	require.Equal(t, epoch.Add(time40s+90*time.Second), c.LeaseExpiresAt.UTC())
	require.Positive(t, c.Fence)

	out := b.row("m", "1", "jm", backends.RoleOutput)
	require.NotNil(t, out)
	require.Equal(t, running, out.Status)
	require.Equal(t, 1, out.Attempt)
	require.Equal(t, "host-1/pid-2", out.Executor)
	require.Equal(t, c.LeaseExpiresAt.UTC(), out.LeaseExpiresAt.UTC())
	require.Equal(t, epoch.Add(time40s), out.UpdatedAt.UTC())
	for _, in := range []string{"x", "y"} {
		r := b.row(in, "1", "jm", backends.RoleInput)
		require.NotNil(t, r, "claiming writes an INPUT row on %s", in)
		require.Equal(t, running, r.Status)
	}

	claims, err := b.s.Claims(b.ctx, "jm")
	require.NoError(t, err)
	require.Len(t, claims, 1)
	require.Equal(t, c.Token, claims[0].Token)
	require.Equal(t, []string{"x", "y"}, claims[0].Inputs)
	require.Equal(t, "m", claims[0].Output)
}

// testClaimLocked: a refused claim is LOCKED and lists every blocker.
func (s *suite) testClaimLocked(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	_, err := b.s.Claim(b.ctx, "jb", "1", executor)
	requireLocked(t, err, "1", bk{backends.BlockerInputNotReady, "a", "", none})
	b.publish("src", "1")
	c := b.claim("ja", "1")
	_, err = b.s.Claim(b.ctx, "jb", "1", executor)
	requireLocked(t, err, "1", bk{backends.BlockerInputNotReady, "a", "ja", running})
	_, err = b.s.Claim(b.ctx, "ja", "1", "other")
	requireLocked(t, err, "1", bk{backends.BlockerOutputLocked, "a", "ja", running}, bk{backends.BlockerLocalRead, "src", "ja", running})
	b.complete(c)
	_, err = b.s.Claim(b.ctx, "ja", "1", "other")
	requireLocked(t, err, "1", bk{backends.BlockerOutputLocked, "a", "ja", ready}, bk{backends.BlockerLocalRead, "src", "ja", done})
	b.requireBlockers("ja", "1", bk{backends.BlockerOutputLocked, "a", "ja", ready}, bk{backends.BlockerLocalRead, "src", "ja", done})
	b.requireBlockers("jb", "1")
	require.Equal(t, ready, b.status("a", "1"), "refused claims change nothing")
}

// testForce: force ignores inputs and the job's DONE locks, supersedes a
// live claim (whose token goes stale), and fences keep increasing.
func (s *suite) testForce(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	// Inputs not ready: a/1 has no row.
	c := b.force("jb", "1")
	require.Equal(t, 1, c.Attempt)
	require.Equal(t, running, b.status("b", "1"))
	require.Equal(t, running, b.inputStatus("a", "1", "jb"))
	b.complete(c)
	require.Equal(t, done, b.inputStatus("a", "1", "jb"))

	// DONE locks and a READY output: force re-runs the chunk (an operator's
	// override, "regardless of ... the job's DONE locks").
	c2 := b.force("jb", "1")
	require.Greater(t, c2.Fence, c.Fence)
	require.Equal(t, 2, c2.Attempt)

	// Superseding a live claim.
	c3 := b.force("jb", "1")
	require.Greater(t, c3.Fence, c2.Fence)
	require.Equal(t, 3, c3.Attempt)
	before := b.snapshot()
	_, err := b.s.Heartbeat(b.ctx, c2.Token)
	requireCode(t, err, backends.CodeStaleClaim)
	requireCode(t, b.s.Complete(b.ctx, c2.Token), backends.CodeStaleClaim)
	requireCode(t, b.s.Fail(b.ctx, c2.Token, "late"), backends.CodeStaleClaim)
	requireCode(t, b.s.Release(b.ctx, c2.Token), backends.CodeStaleClaim)
	require.Equal(t, before, b.snapshot(), "the superseded token changed nothing")
	claims, err := b.s.Claims(b.ctx, "jb")
	require.NoError(t, err)
	require.Len(t, claims, 1, "never two live claims on one output chunk")
	require.Equal(t, c3.Token, claims[0].Token)
	// Releasing the forced claim gives back the chunk as it was before the
	// first claim of the chain (READY, DONE), with the superseded run counted.
	b.release(c3)
	require.Equal(t, ready, b.status("b", "1"))
	require.Equal(t, done, b.inputStatus("a", "1", "jb"))
	require.Equal(t, 2, b.row("b", "1", "jb", backends.RoleOutput).Attempt)

	// A claim made by Claim is superseded just the same.
	b.publish("src", "2")
	c4 := b.claim("ja", "2")
	c5 := b.force("ja", "2")
	require.Greater(t, c5.Fence, c4.Fence)
	requireCode(t, b.s.Complete(b.ctx, c4.Token), backends.CodeStaleClaim)
	b.complete(c5)
	require.Equal(t, ready, b.status("a", "2"))

	// HOLD and a paused job do not stop an operator's force either.
	_, err = b.s.Hold(b.ctx, "a", "2", "check")
	require.NoError(t, err)
	b.upsertJob(backends.Job{ID: "ja", Inputs: []string{"src"}, Output: "a", Paused: true})
	c6 := b.force("ja", "2")
	require.Greater(t, c6.Fence, c5.Fence)
	b.complete(c6)
	require.Equal(t, ready, b.status("a", "2"))
}
