package backendtest

import (
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// Schedules (SPEC §8): a job without inputs whose output has a partition
// definition claims its output's due dataids with findNext, lowest first,
// after its RESUBMIT chunks and beside its FAILED ones; NOT_DUE before the
// window's end + lag; a dataid outside the definition is INVALID_ARGUMENT.
// The suite's clock starts at 2026-01-01T00:00Z (epoch).

var scheduleTests = []testCase{
	{"ScheduleHourly", (*suite).testScheduleHourly},
	{"ScheduleRetries", (*suite).testScheduleRetries},
	{"ScheduleDailyDST", (*suite).testScheduleDailyDST},
	{"ScheduleLagAndEnd", (*suite).testScheduleLagAndEnd},
	{"ScheduleTenYears", (*suite).testScheduleTenYears},
	{"ScheduleDefinitionChanges", (*suite).testScheduleDefinitionChanges},
	{"ScheduleClaimAhead", (*suite).testScheduleClaimAhead},
}

// partitioned upserts dataset id with definition def.
func (b *bundle) partitioned(id string, def partition.Def) {
	b.t.Helper()
	_, err := b.s.UpsertDataset(b.ctx, backends.Dataset{
		ID: id, URL: "s3://lake/" + id, Location: "dt={dataid}/", Partitions: &def,
	})
	require.NoError(b.t, err, "upsert dataset %s", id)
}

// hourly is the definition of an hourly dataset starting at start.
func hourly(start string) partition.Def {
	return partition.Def{Kind: partition.Hourly, Start: start}
}

func (s *suite) testScheduleHourly(t *testing.T) {
	b := s.setup(t)
	b.partitioned("h", hourly("2026-01-01T00"))
	b.job("gen", "h")

	// Hour 00 is due at 01:00.
	_, d := b.next("gen")
	require.Empty(t, d, "nothing is due at 00:00")
	_, err := b.s.Claim(b.ctx, "gen", "2026-01-01T00", executor)
	lockedUntil(t, err, backends.BlockerNotDue, "h", "2026-01-01T00", epoch.Add(time.Hour))
	bs, err := b.s.Blockers(b.ctx, "gen", "2026-01-01T00")
	require.NoError(t, err)
	blockerUntil(t, bs, backends.BlockerNotDue, "h", "2026-01-01T00", epoch.Add(time.Hour))
	for _, bad := range []string{"7", "2025-12-31T23", "2026-01-01"} {
		_, err = b.s.Claim(b.ctx, "gen", bad, executor)
		requireCode(t, err, backends.CodeInvalidArgument, "claim of %s, not an expected dataid", bad)
		_, err = b.s.Blockers(b.ctx, "gen", bad)
		requireCode(t, err, backends.CodeInvalidArgument, "blockers of %s", bad)
	}

	b.clock.Advance(time.Hour - time.Microsecond)
	_, d = b.next("gen")
	require.Empty(t, d)
	b.clock.Advance(time.Microsecond)
	require.Equal(t, []string{"2026-01-01T00"}, b.drain("gen"))
	b.clock.Advance(150 * time.Minute) // 03:30
	require.Equal(t, []string{"2026-01-01T01", "2026-01-01T02"}, b.drain("gen"))
	_, err = b.s.Claim(b.ctx, "gen", "2026-01-01T03", executor)
	lockedUntil(t, err, backends.BlockerNotDue, "h", "2026-01-01T03", epoch.Add(4*time.Hour))
	b.clock.Advance(30 * time.Minute)
	c, d := b.next("gen")
	require.Equal(t, "2026-01-01T03", d)
	require.Equal(t, 1, c.Attempt)
	require.Equal(t, "h", c.Output)
	b.complete(c)
}

// testScheduleRetries: a scheduled job's RESUBMIT chunks come first, its
// FAILED ones in dataid order among the due ones, backoff included.
func (s *suite) testScheduleRetries(t *testing.T) {
	b := s.setup(t)
	b.partitioned("h", hourly("2026-01-01T00"))
	b.upsertJob(backends.Job{ID: "gen", Output: "h", MaxAttempts: 5, RetryDelaySeconds: 600})
	b.clock.Advance(3 * time.Hour) // 00, 01, 02 due
	c, d := b.next("gen")
	require.Equal(t, "2026-01-01T00", d)
	b.complete(c)
	c, d = b.next("gen")
	require.Equal(t, "2026-01-01T01", d)
	b.fail(c, "source locked") // back at 03:10
	c, d = b.next("gen")
	require.Equal(t, "2026-01-01T02", d)
	b.complete(c)
	_, d = b.next("gen")
	require.Empty(t, d, "01 backs off, 03 is not due")

	_, err := b.s.Resubmit(b.ctx, "h", "2026-01-01T00", false)
	require.NoError(t, err)
	b.clock.Advance(time.Hour) // 04:00: 01 retries, 03 due
	require.Equal(t, []string{"2026-01-01T00", "2026-01-01T01", "2026-01-01T03"}, b.drain("gen"))

	// A released new chunk comes back to findNext.
	b.clock.Advance(time.Hour)
	c, d = b.next("gen")
	require.Equal(t, "2026-01-01T04", d)
	b.release(c)
	require.Equal(t, []string{"2026-01-01T04"}, b.drain("gen"))
}

// testScheduleDailyDST: DAILY in Europe/Berlin; 2026-03-29 has 23 hours
// (clocks go from 02:00 to 03:00 CET → CEST), 2026-10-25 has 25.
func (s *suite) testScheduleDailyDST(t *testing.T) {
	b := s.setup(t)
	b.partitioned("d", partition.Def{Kind: partition.Daily, Start: "2026-03-28", Timezone: "Europe/Berlin"})
	b.job("daily", "d")
	// 2026-03-28 ends at 2026-03-28T23:00Z (midnight CET).
	b.clock.Advance(time.Date(2026, 3, 28, 23, 0, 0, 0, time.UTC).Sub(b.clock.Now()) - time.Second)
	_, err := b.s.Claim(b.ctx, "daily", "2026-03-28", executor)
	lockedUntil(t, err, backends.BlockerNotDue, "d", "2026-03-28", time.Date(2026, 3, 28, 23, 0, 0, 0, time.UTC))
	_, d := b.next("daily")
	require.Empty(t, d)
	b.clock.Advance(time.Second)
	require.Equal(t, []string{"2026-03-28"}, b.drain("daily"))
	// 2026-03-29 is 23 hours long: it ends at 22:00Z (midnight CEST).
	_, err = b.s.Claim(b.ctx, "daily", "2026-03-29", executor)
	lockedUntil(t, err, backends.BlockerNotDue, "d", "2026-03-29", time.Date(2026, 3, 29, 22, 0, 0, 0, time.UTC))
	b.clock.Advance(23*time.Hour - time.Second)
	_, d = b.next("daily")
	require.Empty(t, d, "at 21:59:59Z 2026-03-29 has not ended in Berlin")
	b.clock.Advance(time.Second)
	require.Equal(t, []string{"2026-03-29"}, b.drain("daily"))

	// Autumn: 2026-10-25 is 25 hours long, ending at 2026-10-25T23:00Z.
	b.clock.Advance(time.Date(2026, 10, 25, 23, 0, 0, 0, time.UTC).Sub(b.clock.Now()) - time.Second)
	ids := b.drain("daily")
	require.Len(t, ids, 209, "2026-03-30 to 2026-10-24")
	require.Equal(t, "2026-10-24", ids[len(ids)-1])
	_, err = b.s.Claim(b.ctx, "daily", "2026-10-25", executor)
	lockedUntil(t, err, backends.BlockerNotDue, "d", "2026-10-25", time.Date(2026, 10, 25, 23, 0, 0, 0, time.UTC))
	b.clock.Advance(time.Second)
	require.Equal(t, []string{"2026-10-25"}, b.drain("daily"))
}

// testScheduleLagAndEnd: a window is due at its end + lagSeconds; nothing
// after end is expected.
func (s *suite) testScheduleLagAndEnd(t *testing.T) {
	b := s.setup(t)
	def := hourly("2026-01-01T00")
	def.End, def.Lag = "2026-01-01T02", 15*time.Minute
	b.partitioned("h", def)
	b.job("gen", "h")
	b.clock.Advance(time.Hour)
	_, err := b.s.Claim(b.ctx, "gen", "2026-01-01T00", executor)
	lockedUntil(t, err, backends.BlockerNotDue, "h", "2026-01-01T00", epoch.Add(75*time.Minute))
	_, d := b.next("gen")
	require.Empty(t, d, "due at 01:15")
	b.clock.Advance(15 * time.Minute)
	require.Equal(t, []string{"2026-01-01T00"}, b.drain("gen"))
	b.clock.Advance(48 * time.Hour)
	require.Equal(t, []string{"2026-01-01T01", "2026-01-01T02"}, b.drain("gen"), "nothing after end")
	_, err = b.s.Claim(b.ctx, "gen", "2026-01-01T03", executor)
	requireCode(t, err, backends.CodeInvalidArgument)
	n, err := b.s.QueueLength(b.ctx, "gen")
	require.NoError(t, err)
	require.Zero(t, n, "a finished schedule leaves no candidate")
	b.upsertJob(backends.Job{ID: "gen", Output: "h", Description: "again"})
	n, err = b.s.QueueLength(b.ctx, "gen")
	require.NoError(t, err)
	require.Zero(t, n, "upserting a finished schedule's job places no frontier")
	_, d = b.next("gen")
	require.Empty(t, d)
}

// testScheduleTenYears: an hourly root job that started ten years ago
// claims its first hour at once, one hour per findNext, and its queue
// holds one candidate until a claim, then the frontier and at most 15
// hours due ahead of it (queued together, so that one round serves a
// claimNext of several), not the 87,672 due.
func (s *suite) testScheduleTenYears(t *testing.T) {
	b := s.setup(t)
	b.partitioned("h", hourly("2016-01-01T00"))
	b.job("gen", "h")
	n, err := b.s.QueueLength(b.ctx, "gen")
	require.NoError(t, err)
	require.Equal(t, 1, n, "one frontier, not 87,672 candidates")
	want := []string{"2016-01-01T00", "2016-01-01T01", "2016-01-01T02"}
	for _, id := range want {
		c, d := b.next("gen")
		require.Equal(t, id, d)
		b.complete(c)
		n, err := b.s.QueueLength(b.ctx, "gen")
		require.NoError(t, err)
		require.LessOrEqual(t, n, 16)
	}
	// The latest due hour is claimable by dataid, and the frontier steps
	// over it when it gets there.
	b.run("gen", "2025-12-31T23")
	_, err = b.s.Claim(b.ctx, "gen", "2026-01-01T00", executor)
	lockedUntil(t, err, backends.BlockerNotDue, "h", "2026-01-01T00", epoch.Add(time.Hour))
}

// testScheduleDefinitionChanges: moving the definition's start, adding a
// definition to a dataset with a root job, and upserting the job again
// lose no dataid and claim none twice.
func (s *suite) testScheduleDefinitionChanges(t *testing.T) {
	b := s.setup(t)
	b.datasets("h")
	b.job("gen", "h")
	b.run("gen", "2025-12-31T20") // claimed by dataid before there was a definition
	_, d := b.next("gen")
	require.Empty(t, d)
	// A definition on the existing dataset schedules the job, from its
	// first dataid without a row.
	b.partitioned("h", hourly("2025-12-31T20"))
	require.Equal(t, []string{"2025-12-31T21", "2025-12-31T22", "2025-12-31T23"}, b.drain("gen"))
	// Start moved earlier: the new hours are claimed, lowest first. The
	// new frontier walks over the claimed hours to the first hour not due
	// yet, where the old one waits.
	b.partitioned("h", hourly("2025-12-31T18"))
	require.Equal(t, []string{"2025-12-31T18", "2025-12-31T19"}, b.drain("gen"))
	// Start moved later: nothing before it is claimed again or anew. The
	// frontiers that met merged: the queue is one frontier again.
	b.partitioned("h", hourly("2026-01-01T02"))
	b.clock.Advance(4 * time.Hour)
	require.Equal(t, []string{"2026-01-01T02", "2026-01-01T03"}, b.drain("gen"))
	n, err := b.s.QueueLength(b.ctx, "gen")
	require.NoError(t, err)
	require.Equal(t, 1, n, "candidates of the scheduled job")
	// Upserting the job unchanged, or with another description, adds nothing.
	b.upsertJob(backends.Job{ID: "gen", Output: "h", Description: "hourly extract"})
	b.clock.Advance(time.Hour)
	require.Equal(t, []string{"2026-01-01T04"}, b.drain("gen"))
	// Without the definition the job is claimed by dataid again.
	_, err = b.s.UpsertDataset(b.ctx, backends.Dataset{ID: "h", URL: "s3://lake/h", Location: "dt={dataid}/"})
	require.NoError(t, err)
	b.clock.Advance(time.Hour)
	_, d = b.next("gen")
	require.Empty(t, d)
	b.run("gen", "anything")
}

// testScheduleClaimAhead: dataids claimed by claim or force ahead of the
// schedule are not claimed again by findNext; a released one comes back
// once due.
func (s *suite) testScheduleClaimAhead(t *testing.T) {
	b := s.setup(t)
	b.partitioned("h", hourly("2025-12-31T20"))
	b.job("gen", "h")
	b.run("gen", "2025-12-31T22")
	b.run("gen", "2025-12-31T21")
	b.complete(b.force("gen", "2026-01-01T02")) // not due: only force takes it
	c := b.force("gen", "2026-01-01T03")
	b.release(c)
	require.Equal(t, []string{"2025-12-31T20", "2025-12-31T23"}, b.drain("gen"))
	b.clock.Advance(4 * time.Hour)
	require.Equal(t, []string{"2026-01-01T00", "2026-01-01T01", "2026-01-01T03"}, b.drain("gen"))
	b.clock.Advance(time.Hour)
	require.Equal(t, []string{"2026-01-01T04"}, b.drain("gen"))
}
