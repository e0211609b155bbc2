package backendtest

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

// Backoff (SPEC §3 fail): a FAILED chunk of a job with retryDelaySeconds
// is claimable again from its retryAt = fail time + min(retryDelaySeconds
// × 2^(attempt−1), retryMaxDelaySeconds); before that its blocker is
// BACKOFF, findNext passes over it, and force ignores it.

var backoffTests = []testCase{
	{"BackoffTiming", (*suite).testBackoffTiming},
	{"BackoffFindNext", (*suite).testBackoffFindNext},
	{"BackoffForceResubmitHold", (*suite).testBackoffOverrides},
	{"BackoffLeaseExpiry", (*suite).testBackoffLeaseExpiry},
	{"BackoffManyHidden", (*suite).testBackoffManyHidden},
}

// retryPipeline is src → jr → r, jr failing with a retry delay of delay
// seconds up to limit, with ten attempts.
func (b *bundle) retryPipeline(delay, limit int) {
	b.t.Helper()
	b.datasets("src", "r")
	b.upsertJob(backends.Job{ID: "jr", Inputs: []string{"src"}, Output: "r", MaxAttempts: 10,
		RetryDelaySeconds: delay, RetryMaxDelaySeconds: limit})
}

// retryAt is the retryAt of chunk r/dataid.
func (b *bundle) retryAt(dataid string) time.Time {
	b.t.Helper()
	r := b.row("r", dataid, "jr", backends.RoleOutput)
	require.NotNil(b.t, r, "r/%s has an OUTPUT row", dataid)
	return r.RetryAt.UTC()
}

// blockerUntil checks that bs hold exactly one blocker, of kind, on the
// job's output at dataid, lifting at until.
func blockerUntil(t testing.TB, bs []backends.Blocker, kind backends.BlockerKind, dataset, dataid string, until time.Time) {
	t.Helper()
	require.Len(t, bs, 1, "blockers: %+v", bs)
	require.Equal(t, kind, bs[0].Kind)
	require.Equal(t, dataset, bs[0].Dataset)
	require.Equal(t, dataid, bs[0].DataID)
	require.Equal(t, until, bs[0].Until.UTC(), "%s lifts at", kind)
}

// lockedUntil checks that err is LOCKED by one blocker of kind lifting at until.
func lockedUntil(t testing.TB, err error, kind backends.BlockerKind, dataset, dataid string, until time.Time) {
	t.Helper()
	requireCode(t, err, backends.CodeLocked)
	var e *backends.Error
	require.True(t, errors.As(err, &e))
	blockerUntil(t, e.Blockers, kind, dataset, dataid, until)
}

func (s *suite) testBackoffTiming(t *testing.T) {
	b := s.setup(t)
	b.retryPipeline(10, 35)
	b.publish("src", "1")
	// attempt 1: 10 s; 2: 20 s; 3: 40 s, capped at 35 s; 4: 35 s.
	for i, delay := range []time.Duration{10 * time.Second, 20 * time.Second, 35 * time.Second, 35 * time.Second} {
		c := b.claim("jr", "1")
		require.Equal(t, i+1, c.Attempt)
		b.clock.Advance(3 * time.Second)
		failedAt := b.clock.Now()
		b.fail(c, "warehouse down")
		require.Equal(t, failed, b.status("r", "1"))
		require.Equal(t, failedAt.Add(delay), b.retryAt("1"), "retryAt after attempt %d", i+1)

		_, err := b.s.Claim(b.ctx, "jr", "1", executor)
		lockedUntil(t, err, backends.BlockerBackoff, "r", "1", failedAt.Add(delay))
		bs, err := b.s.Blockers(b.ctx, "jr", "1")
		require.NoError(t, err)
		blockerUntil(t, bs, backends.BlockerBackoff, "r", "1", failedAt.Add(delay))

		b.clock.Advance(delay - time.Microsecond)
		_, err = b.s.Claim(b.ctx, "jr", "1", executor)
		lockedUntil(t, err, backends.BlockerBackoff, "r", "1", failedAt.Add(delay))
		b.clock.Advance(time.Microsecond)
		b.requireBlockers("jr", "1")
	}
	// Without a delay the chunk is claimable at once and has no retryAt.
	b.upsertJob(backends.Job{ID: "jr", Inputs: []string{"src"}, Output: "r", MaxAttempts: 10})
	b.fail(b.claim("jr", "1"), "again")
	require.True(t, b.retryAt("1").IsZero())
	b.requireBlockers("jr", "1")
}

func (s *suite) testBackoffFindNext(t *testing.T) {
	b := s.setup(t)
	b.retryPipeline(60, 3600)
	b.publish("src", "1", "2", "3")
	c, d := b.next("jr")
	require.Equal(t, "1", d)
	failedAt := b.clock.Now()
	b.fail(c, "x")
	// The chunk in backoff blocks nothing behind it.
	require.Equal(t, []string{"2", "3"}, b.drain("jr"))
	b.clock.Advance(59 * time.Second)
	_, d = b.next("jr")
	require.Empty(t, d, "1 is in backoff until %s", failedAt.Add(time.Minute))
	b.publish("src", "4")
	require.Equal(t, []string{"4"}, b.drain("jr"))
	b.clock.Advance(time.Second)
	c, d = b.next("jr")
	require.Equal(t, "1", d, "claimed at its retryAt")
	require.Equal(t, 2, c.Attempt)
	require.True(t, b.row("r", "1", "jr", backends.RoleOutput).RetryAt.IsZero(), "a claim clears retryAt")

	// Two chunks in backoff come back in their retry order, and a chunk
	// whose input turns READY while it backs off is not claimed early.
	failedAt = b.clock.Now()
	b.fail(c, "y") // attempt 2: 120 s
	b.publish("src", "5")
	c5, d := b.next("jr")
	require.Equal(t, "5", d)
	b.fail(c5, "z") // attempt 1: 60 s
	b.publish("src", "5")
	_, d = b.next("jr")
	require.Empty(t, d)
	b.clock.Advance(time.Minute)
	require.Equal(t, []string{"5"}, b.drain("jr"))
	require.True(t, b.clock.Now().Before(failedAt.Add(2*time.Minute)))
	b.clock.Advance(time.Minute)
	require.Equal(t, []string{"1"}, b.drain("jr"))
}

func (s *suite) testBackoffOverrides(t *testing.T) {
	b := s.setup(t)
	b.retryPipeline(300, 3600)
	b.publish("src", "1", "2")

	// force ignores backoff.
	b.fail(b.claim("jr", "1"), "x")
	c := b.force("jr", "1")
	require.Equal(t, 2, c.Attempt)
	b.complete(c)

	// resubmit clears it: claimable at once, by findNext too.
	b.fail(b.claim("jr", "2"), "x")
	require.False(t, b.retryAt("2").IsZero())
	changed, err := b.s.Resubmit(b.ctx, "r", "2", false)
	require.NoError(t, err)
	require.True(t, changed[0].RetryAt.IsZero())
	require.True(t, b.retryAt("2").IsZero())
	require.Equal(t, []string{"2"}, b.drain("jr"))

	// hold clears it; resubmit thaws.
	b.publish("src", "3")
	b.fail(b.claim("jr", "3"), "x")
	row, err := b.s.Hold(b.ctx, "r", "3", "look first")
	require.NoError(t, err)
	require.True(t, row.RetryAt.IsZero())
	_, err = b.s.Resubmit(b.ctx, "r", "3", false)
	require.NoError(t, err)
	require.Equal(t, []string{"3"}, b.drain("jr"))

	// attempts exhausted: HOLD, no retryAt.
	b.upsertJob(backends.Job{ID: "jr", Inputs: []string{"src"}, Output: "r", MaxAttempts: 1, RetryDelaySeconds: 300})
	b.publish("src", "4")
	b.fail(b.claim("jr", "4"), "x")
	require.Equal(t, hold, b.status("r", "4"))
	require.True(t, b.retryAt("4").IsZero())
}

func (s *suite) testBackoffLeaseExpiry(t *testing.T) {
	b := s.setup(t)
	b.datasets("src", "r")
	b.upsertJob(backends.Job{ID: "jr", Inputs: []string{"src"}, Output: "r", MaxAttempts: 5, LeaseSeconds: 30,
		RetryDelaySeconds: 100, RetryMaxDelaySeconds: 150})
	b.publish("src", "1", "2")
	b.claim("jr", "1")
	b.clock.Advance(time40s)
	expiredAt := b.clock.Now()
	n, err := b.s.ExpireLeases(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, failed, b.status("r", "1"))
	require.Equal(t, expiredAt.Add(100*time.Second), b.retryAt("1"))
	_, err = b.s.Claim(b.ctx, "jr", "1", executor)
	lockedUntil(t, err, backends.BlockerBackoff, "r", "1", expiredAt.Add(100*time.Second))
	require.Equal(t, []string{"2"}, b.drain("jr"))
	b.clock.Advance(100 * time.Second)
	c, d := b.next("jr")
	require.Equal(t, "1", d)
	b.clock.Advance(time40s)
	expiredAt = b.clock.Now()
	n, err = b.s.ExpireLeases(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, expiredAt.Add(150*time.Second), b.retryAt("1"), "200 s capped at 150 s")
	requireCode(t, b.s.Complete(b.ctx, c.Token), backends.CodeStaleClaim)
	// The event log records the failure as before.
	evs := b.events(backends.EventFilter{Dataset: "r", DataID: "1"})
	last := evs[len(evs)-1]
	require.Equal(t, running, last.From)
	require.Equal(t, failed, last.To)
	require.Equal(t, backends.ReasonLeaseExpired, last.Reason)
}

// testBackoffManyHidden: findNext passes over a long run of chunks in
// backoff at the head of the queue to the claimable one behind them, and
// takes them all back once their time has come.
func (s *suite) testBackoffManyHidden(t *testing.T) {
	b := s.setup(t)
	b.retryPipeline(60, 3600)
	var ids []string
	for i := 1; i <= 60; i++ {
		ids = append(ids, strconv.Itoa(i))
	}
	b.publish("src", ids...)
	for range ids {
		c, _ := b.next("jr")
		require.NotNil(t, c)
		b.fail(c, "x")
	}
	b.publish("src", "100")
	require.Equal(t, []string{"100"}, b.drain("jr"))
	b.clock.Advance(time.Minute)
	require.Equal(t, ids, b.drain("jr"))
}
