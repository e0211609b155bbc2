package backendtest

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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
	{"Publish", (*suite).testPublish},
	{"ResubmitCascade", (*suite).testResubmitCascade},
	{"ResubmitCascadeDiamond", (*suite).testResubmitCascadeDiamond},
	{"Backfill", (*suite).testBackfill},
	{"FailReasonAnyBytes", (*suite).testFailReasonAnyBytes},
}

// A failure reason is often the tail of a crashed process's stderr: any
// bytes, any length. Fail must record it (as valid UTF-8 without NUL, its
// last MaxReasonBytes cut on a character boundary), never refuse it.
func (s *suite) testFailReasonAnyBytes(t *testing.T) {
	b := s.setup(t)
	b.datasets("x", "m")
	b.job("jm", "m", "x")
	b.publish("x", "1", "2", "3")
	for dataid, reason := range map[string]string{
		"1": "core dumped\x00\xff\xfe binary tail",
		"2": strings.Repeat("é", 3001) + "x", // 6003 bytes: the cut lands inside a character
		"3": "plain",
	} {
		c := b.claim("jm", dataid)
		require.NoError(t, b.s.Fail(b.ctx, c.Token, reason), "dataid %s", dataid)
		got := b.row("m", dataid, "jm", backends.RoleOutput).Reason
		require.True(t, utf8.ValidString(got), "dataid %s: reason %q is not valid UTF-8", dataid, got)
		require.NotContains(t, got, "\x00")
		require.LessOrEqual(t, len(got), backends.MaxReasonBytes)
		require.True(t, strings.HasSuffix(got, reason[len(reason)-1:]), "the tail is kept: %q", got)
	}
	requireCode(t, func() error { _, err := b.s.Claim(b.ctx, "jm", "1", "bad\x00executor"); return err }(), backends.CodeInvalidArgument)
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

func (s *suite) testHeartbeat(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1")
	c := b.claim("ja", "1")
	require.Equal(t, epoch.Add(60*time.Second), c.LeaseExpiresAt.UTC())

	b.clock.Advance(time40s) // t=40
	hb, err := b.s.Heartbeat(b.ctx, c.Token)
	require.NoError(t, err)
	require.Equal(t, c.Token, hb.Token)
	require.Equal(t, c.Attempt, hb.Attempt)
	require.Equal(t, "1", hb.DataID)
	require.Equal(t, epoch.Add(100*time.Second), hb.LeaseExpiresAt.UTC(), "a heartbeat extends the lease by leaseSeconds")
	claims, err := b.s.Claims(b.ctx, "ja")
	require.NoError(t, err)
	require.Equal(t, epoch.Add(100*time.Second), claims[0].LeaseExpiresAt.UTC())

	b.clock.Advance(time40s) // t=80: past the first lease, within the second
	n, err := b.s.ExpireLeases(b.ctx)
	require.NoError(t, err)
	require.Zero(t, n, "a heartbeat kept the claim alive")
	_, err = b.s.Heartbeat(b.ctx, c.Token)
	require.NoError(t, err) // lease now t=140

	b.clock.Advance(60 * time.Second) // t=140: the lease has just passed
	_, err = b.s.Heartbeat(b.ctx, c.Token)
	requireCode(t, err, backends.CodeStaleClaim, "a claim past its lease is stale before the reaper runs")
	requireCode(t, b.s.Complete(b.ctx, c.Token), backends.CodeStaleClaim)
	requireCode(t, b.s.Fail(b.ctx, c.Token, "x"), backends.CodeStaleClaim)
	requireCode(t, b.s.Release(b.ctx, c.Token), backends.CodeStaleClaim)
	require.Equal(t, running, b.status("a", "1"), "until the reaper runs the row stays RUNNING")
	n, err = b.s.ExpireLeases(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = b.s.Heartbeat(b.ctx, c.Token)
	requireCode(t, err, backends.CodeStaleClaim)
}

func (s *suite) testCompleteAndFail(t *testing.T) {
	b := s.setup(t)
	b.datasets("x", "y", "m")
	b.job("jm", "m", "x", "y")
	b.publish("x", "1", "2")
	b.publish("y", "1", "2")

	c := b.claim("jm", "1")
	b.clock.Advance(time40s)
	b.complete(c)
	out := b.row("m", "1", "jm", backends.RoleOutput)
	require.Equal(t, ready, out.Status)
	require.Equal(t, 1, out.Attempt)
	require.True(t, out.LeaseExpiresAt.IsZero(), "a finished claim has no lease")
	require.Equal(t, epoch.Add(time40s), out.UpdatedAt.UTC())
	for _, in := range []string{"x", "y"} {
		require.Equal(t, done, b.inputStatus(in, "1", "jm"))
	}
	require.NoError(t, b.s.Complete(b.ctx, c.Token), "completing twice answers as the first call (RetryComplete)")
	requireCode(t, b.s.Fail(b.ctx, c.Token, "late"), backends.CodeStaleClaim)

	c = b.claim("jm", "2")
	b.fail(c, "disk full")
	out = b.row("m", "2", "jm", backends.RoleOutput)
	require.Equal(t, failed, out.Status)
	require.Equal(t, 1, out.Attempt)
	require.Equal(t, "disk full", out.Reason)
	for _, in := range []string{"x", "y"} {
		require.Equal(t, errored, b.inputStatus(in, "2", "jm"))
	}
	require.NoError(t, b.s.Fail(b.ctx, c.Token, "again"), "failing twice answers as the first call (RetryFail)")
	require.Equal(t, "disk full", b.row("m", "2", "jm", backends.RoleOutput).Reason, "and changes nothing")
	requireCode(t, b.s.Complete(b.ctx, c.Token), backends.CodeStaleClaim)
	c = b.claim("jm", "2")
	require.Equal(t, 2, c.Attempt)
}

// testRelease: release restores the chunk exactly as it was before the
// claim: rows (or no rows), statuses and attempt count.
func (s *suite) testRelease(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2", "3")
	before := b.allRows()

	// From no row.
	c := b.claim("ja", "1")
	b.release(c)
	require.Equal(t, stripVolatile(before), stripVolatile(b.allRows()), "releasing a first claim leaves no row behind")
	requireCode(t, b.s.Release(b.ctx, c.Token), backends.CodeStaleClaim, "no row is left to tell it from a token never issued (RetryRelease)")
	requireCode(t, b.s.Complete(b.ctx, c.Token), backends.CodeStaleClaim)
	c2, d := b.next("ja")
	require.Equal(t, "1", d, "a released chunk is claimable again")
	require.Equal(t, 1, c2.Attempt, "release does not count an attempt")
	require.Greater(t, c2.Fence, c.Fence, "fences grow even across a deleted row")
	b.complete(c2)

	// From FAILED.
	b.fail(b.claim("ja", "2"), "boom")
	c = b.claim("ja", "2")
	require.Equal(t, 2, c.Attempt)
	b.release(c)
	out := b.row("a", "2", "ja", backends.RoleOutput)
	require.Equal(t, failed, out.Status)
	require.Equal(t, 1, out.Attempt)
	require.Equal(t, errored, b.inputStatus("src", "2", "ja"))
	c = b.claim("ja", "2")
	require.Equal(t, 2, c.Attempt)
	b.complete(c)

	// From RESUBMIT, with the job's DONE lock on the input kept.
	_, err := b.s.Resubmit(b.ctx, "a", "2", false)
	require.NoError(t, err)
	c, d = b.next("ja")
	require.Equal(t, "2", d)
	require.Equal(t, 1, c.Attempt)
	b.release(c)
	out = b.row("a", "2", "ja", backends.RoleOutput)
	require.Equal(t, resubmit, out.Status)
	require.Equal(t, 0, out.Attempt)
	require.Equal(t, done, b.inputStatus("src", "2", "ja"))
	_, d = b.next("ja")
	require.Equal(t, "2", d, "the RESUBMIT chunk is first in line again")

	// Releasing never makes a chunk readable downstream.
	c = b.claim("ja", "3")
	b.release(c)
	_, err = b.s.Claim(b.ctx, "jb", "3", executor)
	requireCode(t, err, backends.CodeLocked)
}

// stripVolatile keeps what release must restore: keys, statuses, attempts.
func stripVolatile(rows []backends.StatusRow) []backends.StatusRow {
	out := make([]backends.StatusRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, backends.StatusRow{RowKey: r.RowKey, Status: r.Status, Attempt: r.Attempt})
	}
	return out
}

func (s *suite) testLeaseExpiry(t *testing.T) {
	b := s.setup(t)
	b.datasets("src", "a")
	b.upsertJob(backends.Job{ID: "ja", Inputs: []string{"src"}, Output: "a", LeaseSeconds: 30, MaxAttempts: 2})
	b.publish("src", "1", "2", "3")
	c := b.claim("ja", "1")

	b.clock.Advance(29 * time.Second)
	n, err := b.s.ExpireLeases(b.ctx)
	require.NoError(t, err)
	require.Zero(t, n, "the lease has not passed yet")
	b.clock.Advance(time.Second)
	requireCode(t, b.s.Complete(b.ctx, c.Token), backends.CodeStaleClaim, "stale as soon as the lease passes")
	seq := b.lastSeq()
	n, err = b.s.ExpireLeases(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	out := b.row("a", "1", "ja", backends.RoleOutput)
	require.Equal(t, failed, out.Status)
	require.Equal(t, backends.ReasonLeaseExpired, out.Reason)
	require.Equal(t, errored, b.inputStatus("src", "1", "ja"))
	evs := b.events(backends.EventFilter{After: seq})
	require.NotEmpty(t, evs)
	for _, e := range evs {
		require.Equal(t, "reaper", e.Actor)
		require.Equal(t, backends.ReasonLeaseExpired, e.Reason)
	}
	n, err = b.s.ExpireLeases(b.ctx)
	require.NoError(t, err)
	require.Zero(t, n, "an expired claim is failed once")
	requireCode(t, b.s.Complete(b.ctx, c.Token), backends.CodeStaleClaim)

	// Guarantee 5: the chunk comes back; the second expiry exhausts the attempts.
	c, d := b.next("ja")
	require.Equal(t, "1", d)
	require.Equal(t, 2, c.Attempt)
	b.clock.Advance(30 * time.Second)
	n, err = b.s.ExpireLeases(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, hold, b.status("a", "1"), "attempts exhausted: HOLD")

	// Several claims expire in one call; a heartbeat one survives.
	c2 := b.claim("ja", "2")
	c3 := b.claim("ja", "3")
	b.clock.Advance(20 * time.Second)
	_, err = b.s.Heartbeat(b.ctx, c3.Token)
	require.NoError(t, err)
	b.clock.Advance(10 * time.Second)
	n, err = b.s.ExpireLeases(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, failed, b.status("a", "2"))
	require.Equal(t, running, b.status("a", "3"))
	requireCode(t, b.s.Complete(b.ctx, c2.Token), backends.CodeStaleClaim)
	b.complete(c3)
}

func (s *suite) testMaxAttemptsHold(t *testing.T) {
	b := s.setup(t)
	b.datasets("src", "a")
	b.upsertJob(backends.Job{ID: "ja", Inputs: []string{"src"}, Output: "a", MaxAttempts: 2})
	b.publish("src", "1")
	c, _ := b.next("ja")
	b.fail(c, "first")
	require.Equal(t, failed, b.status("a", "1"))
	c, _ = b.next("ja")
	require.Equal(t, 2, c.Attempt)
	b.fail(c, "second")
	out := b.row("a", "1", "ja", backends.RoleOutput)
	require.Equal(t, hold, out.Status, "attempt >= maxAttempts: HOLD")
	require.Equal(t, 2, out.Attempt)
	require.Equal(t, "second", out.Reason)
	require.Equal(t, errored, b.inputStatus("src", "1", "ja"))
	_, d := b.next("ja")
	require.Empty(t, d, "a HOLD chunk is frozen")
	_, err := b.s.Claim(b.ctx, "ja", "1", executor)
	requireLocked(t, err, "1", bk{backends.BlockerOutputLocked, "a", "ja", hold})

	_, err = b.s.Resubmit(b.ctx, "a", "1", false)
	require.NoError(t, err)
	c, d = b.next("ja")
	require.Equal(t, "1", d, "resubmit thaws a HOLD")
	require.Equal(t, 1, c.Attempt)
}

func (s *suite) testHoldAndResubmit(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2")

	c := b.claim("ja", "1")
	_, err := b.s.Hold(b.ctx, "a", "1", "no")
	requireLocked(t, err, "1", bk{backends.BlockerOutputLocked, "a", "ja", running})
	_, err = b.s.Resubmit(b.ctx, "a", "1", false)
	requireLocked(t, err, "1", bk{backends.BlockerOutputLocked, "a", "ja", running})
	_, err = b.s.Resubmit(b.ctx, "a", "1", true)
	requireCode(t, err, backends.CodeLocked)
	b.complete(c)

	// Hold a READY chunk: consumers are blocked.
	b.clock.Advance(time40s)
	row, err := b.s.Hold(b.ctx, "a", "1", "suspicious totals")
	require.NoError(t, err)
	require.Equal(t, hold, row.Status)
	require.Equal(t, "suspicious totals", row.Reason)
	require.Equal(t, "ja", row.Job)
	require.Equal(t, backends.RoleOutput, row.Role)
	require.Equal(t, epoch.Add(time40s), row.UpdatedAt.UTC())
	require.Equal(t, 1, row.Attempt, "hold keeps the attempt count")
	_, err = b.s.Claim(b.ctx, "jb", "1", executor)
	requireLocked(t, err, "1", bk{backends.BlockerInputNotReady, "a", "ja", hold})

	// Hold a chunk nobody produced yet: it gets a HOLD row.
	row, err = b.s.Hold(b.ctx, "a", "2", "wait for the audit")
	require.NoError(t, err)
	require.Equal(t, hold, row.Status)
	require.Equal(t, "ja", row.Job)
	require.Equal(t, 0, row.Attempt)
	_, d := b.next("ja")
	require.Empty(t, d)

	// Hold a source chunk: publishing it is refused until resubmitted.
	_, err = b.s.Hold(b.ctx, "src", "3", "late file")
	require.NoError(t, err)
	_, err = b.s.Publish(b.ctx, "src", "3")
	requireCode(t, err, backends.CodeLocked)
	changed, err := b.s.Resubmit(b.ctx, "src", "3", false)
	require.NoError(t, err)
	require.Len(t, changed, 1)
	require.Equal(t, resubmit, changed[0].Status)
	require.Equal(t, "", changed[0].Job)
	b.publish("src", "3")
	require.Equal(t, ready, b.status("src", "3"))

	// Resubmit thaws; holding again from RESUBMIT and FAILED is allowed.
	changed, err = b.s.Resubmit(b.ctx, "a", "1", false)
	require.NoError(t, err)
	require.Len(t, changed, 1)
	require.Equal(t, backends.RowKey{Dataset: "a", DataID: "1", Job: "ja", Role: backends.RoleOutput}, changed[0].RowKey)
	require.Equal(t, resubmit, changed[0].Status)
	require.Equal(t, 0, changed[0].Attempt, "resubmit resets the attempt count")
	_, err = b.s.Hold(b.ctx, "a", "1", "again")
	require.NoError(t, err)
	_, err = b.s.Resubmit(b.ctx, "a", "2", false)
	require.NoError(t, err)
	require.Equal(t, []string{"2", "3"}, b.drain("ja"))
	b.publish("src", "4")
	b.fail(b.claim("ja", "4"), "x")
	_, err = b.s.Hold(b.ctx, "a", "4", "from failed")
	require.NoError(t, err)
	require.Equal(t, hold, b.status("a", "4"))
	_, err = b.s.Resubmit(b.ctx, "a", "4", false)
	require.NoError(t, err)
	require.Equal(t, resubmit, b.status("a", "4"))
}

func (s *suite) testPublish(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	_, err := b.s.Publish(b.ctx, "a", "1")
	requireCode(t, err, backends.CodeInvalidArgument, "a is produced by ja")
	_, err = b.s.Publish(b.ctx, "b", "1")
	requireCode(t, err, backends.CodeInvalidArgument)

	b.clock.Advance(time40s)
	row, err := b.s.Publish(b.ctx, "src", "1")
	require.NoError(t, err)
	require.Equal(t, backends.RowKey{Dataset: "src", DataID: "1", Job: "", Role: backends.RoleOutput}, row.RowKey)
	require.Equal(t, ready, row.Status)
	require.Equal(t, epoch.Add(time40s), row.UpdatedAt.UTC())
	seq := b.lastSeq()
	row2, err := b.s.Publish(b.ctx, "src", "1")
	require.NoError(t, err, "publishing twice is harmless")
	require.Equal(t, ready, row2.Status)
	require.Equal(t, seq, b.lastSeq(), "publishing a READY chunk again records no transition")
	d := b.chunk("src", "1")
	require.NotNil(t, d.Output)
	require.Equal(t, "", d.Output.Job)
	requireLocks(t, d.Locks, lk{"src", "1", gw, "", ready})
}

// testResubmitCascade: cascade invalidates every chunk computed from the
// resubmitted one, transitively, atomically.
func (s *suite) testResubmitCascade(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.datasets("c", "d")
	b.job("jc", "c", "b")
	b.job("jd", "d", "a")
	b.publish("src", "1")
	for _, j := range []string{"ja", "jb", "jc", "jd"} {
		b.run(j, "1")
	}

	changed, err := b.s.Resubmit(b.ctx, "src", "1", true)
	require.NoError(t, err)
	var ds []string
	for _, r := range changed {
		require.Equal(t, resubmit, r.Status)
		require.Equal(t, backends.RoleOutput, r.Role)
		ds = append(ds, r.Dataset)
	}
	require.ElementsMatch(t, []string{"src", "a", "b", "c", "d"}, ds)
	for _, d := range []string{"src", "a", "b", "c", "d"} {
		require.Equal(t, resubmit, b.status(d, "1"), d)
	}
	require.Equal(t, errored, b.inputStatus("src", "1", "ja"))
	require.Equal(t, errored, b.inputStatus("a", "1", "jb"))
	require.Equal(t, errored, b.inputStatus("a", "1", "jd"))
	require.Equal(t, errored, b.inputStatus("b", "1", "jc"))
	for _, j := range []string{"ja", "jb", "jc", "jd"} {
		_, d := b.next(j)
		require.Empty(t, d, "%s must wait for its input to be READY again", j)
	}

	// Chunk 2: jb failed on a/2, so the cascade from a resubmits b/2 too,
	// with its attempts counted afresh (ResubmitCascadeFailedAndHold).
	b.publish("src", "2")
	b.run("ja", "2")
	b.fail(b.claim("jb", "2"), "boom")
	_, err = b.s.Resubmit(b.ctx, "a", "2", true)
	require.NoError(t, err)
	require.Equal(t, resubmit, b.status("a", "2"))
	require.Equal(t, resubmit, b.status("b", "2"))
	require.Zero(t, b.row("b", "2", "jb", backends.RoleOutput).Attempt)
	require.Equal(t, errored, b.inputStatus("a", "2", "jb"))

	// A live downstream claim refuses the cascade, and nothing changes.
	b.publish("src", "3")
	b.run("ja", "3")
	c := b.claim("jb", "3")
	before := b.snapshot()
	_, err = b.s.Resubmit(b.ctx, "src", "3", true)
	requireLocked(t, err, "3", bk{backends.BlockerLocalRead, "a", "jb", running})
	require.Equal(t, before, b.snapshot(), "a refused cascade is all-or-nothing")
	b.complete(c)
	_, err = b.s.Resubmit(b.ctx, "src", "3", true)
	require.NoError(t, err)
	require.Equal(t, resubmit, b.status("b", "3"))
}

// testResubmitCascadeDiamond: jx reads a and b, and b is computed from a.
// A cascade from a reaches x twice; x is resubmitted once, and everything
// re-runs in order: ja, then jb, then jx once both its inputs are READY.
func (s *suite) testResubmitCascadeDiamond(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.datasets("x")
	b.job("jx", "x", "a", "b")
	b.publish("src", "1")
	for _, j := range []string{"ja", "jb", "jx"} {
		b.run(j, "1")
	}
	seq := b.lastSeq()
	changed, err := b.s.Resubmit(b.ctx, "src", "1", true)
	require.NoError(t, err)
	var ds []string
	for _, r := range changed {
		ds = append(ds, r.Dataset)
	}
	require.ElementsMatch(t, []string{"src", "a", "b", "x"}, ds, "each chunk is resubmitted once")
	out, in := backends.RoleOutput, backends.RoleInput
	require.ElementsMatch(t, []ev{
		{"src", "1", "", out, ready, resubmit, "system", 0},
		{"src", "1", "ja", in, done, errored, "system", 0},
		{"a", "1", "ja", out, ready, resubmit, "system", 0},
		{"a", "1", "jb", in, done, errored, "system", 0},
		{"a", "1", "jx", in, done, errored, "system", 0},
		{"b", "1", "jb", out, ready, resubmit, "system", 0},
		{"b", "1", "jx", in, done, errored, "system", 0},
		{"x", "1", "jx", out, ready, resubmit, "system", 0},
	}, toEvs(b.events(backends.EventFilter{After: seq})), "one transition per row")

	b.publish("src", "1")
	for _, step := range []struct {
		job     string
		blocked []string
	}{{"ja", []string{"jb", "jx"}}, {"jb", []string{"jx"}}, {"jx", nil}} {
		for _, j := range step.blocked {
			_, d := b.next(j)
			require.Empty(t, d, "%s runs before %s", step.job, j)
		}
		c, d := b.next(step.job)
		require.Equal(t, "1", d, step.job)
		require.Equal(t, 1, c.Attempt)
		b.complete(c)
	}
	require.Equal(t, ready, b.status("x", "1"))
}

// testBackfill: chunks already READY on a job's inputs become claimable by
// a job defined (or re-pointed) after they were published.
func (s *suite) testBackfill(t *testing.T) {
	b := s.setup(t)
	b.datasets("src", "src2", "a", "m")
	b.publish("src", "3", "1", "2")
	b.publish("src2", "5", "2")
	b.job("ja", "a", "src")
	require.Equal(t, []string{"1", "2", "3"}, b.drain("ja"))
	b.job("jm", "m", "src", "src2")
	require.Equal(t, []string{"2"}, b.drain("jm"), "a two-input job gets the dataids where both are READY")
	b.publish("src", "5")
	require.Equal(t, []string{"5"}, b.drain("jm"))

	// Re-pointing a job's inputs backfills from the new input.
	b.publish("src2", "10")
	b.job("ja", "a", "src2")
	require.Equal(t, []string{"5", "10"}, b.drain("ja"), "2 was already produced and stays READY")
}
