package backendtest

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

// Tests of the operations on a live claim (operationTests): heartbeat,
// complete, fail, release, and the reaper's lease expiry.

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
