package backendtest

import (
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// Sweeps (a frontier candidate walking the outputs of a job that reads an
// input through LATEST or ALL): every output that claim accepts must be
// offered by findNext (SPEC §3 findNext, §9).

var mappingSweepTests = []testCase{
	{"MappingSweepBackfillTwoLatest", (*suite).testMappingSweepBackfillTwoLatest},
	{"MappingSweepBackfillAllAndLatest", (*suite).testMappingSweepBackfillAllAndLatest},
	{"MappingSweepSnapshotBeforeJob", (*suite).testMappingSweepSnapshotBeforeJob},
	{"MappingSweepParkedPileUp", (*suite).testMappingSweepParkedPileUp},
	{"MappingSweepMaxConcurrent", (*suite).testMappingSweepMaxConcurrent},
	{"MappingSweepMixedBlocked", (*suite).testMappingSweepMixedBlocked},
	{"MappingSweepPassesRunningInput", (*suite).testMappingSweepPassesRunningInput},
	{"MappingSweepsMerge", (*suite).testMappingSweepsMerge},
}

// sweepDef is the daily definition of the sweep tests' datasets: eight
// days up to the suite's epoch (2026-01-01), whose windows have all
// started.
var sweepDef = partition.Def{Kind: partition.Daily, Start: "2025-12-25"}

// requireClaimable asserts that claim would accept job at each dataid
// (blockers lists nothing).
func (b *bundle) requireClaimable(job string, ids ...string) {
	b.t.Helper()
	for _, id := range ids {
		bs, err := b.s.Blockers(b.ctx, job, id)
		require.NoError(b.t, err)
		require.Empty(b.t, bs, "%s at %s is claimable", job, id)
	}
}

// requireOffered asserts that claim would accept job at each dataid, and
// that findNext offers exactly those, at once or once a parked frontier's
// retry time (10 s) has passed.
func (b *bundle) requireOffered(job string, ids ...string) {
	b.t.Helper()
	b.requireClaimable(job, ids...)
	got := b.drain(job)
	b.clock.Advance(10 * time.Second) // past any parked frontier's retry
	got = append(got, b.drain(job)...)
	require.Equal(b.t, ids, got, "outputs claim accepts are never offered by findNext")
}

// testMappingSweepBackfillTwoLatest: a job reading two snapshots through
// LATEST, created over snapshots already READY (a on 12-26, b on 12-28):
// every output from 12-28 reads both, claim accepts it, and findNext must
// offer it, at once or once a parked frontier's retry time has passed.
func (s *suite) testMappingSweepBackfillTwoLatest(t *testing.T) {
	b := s.setup(t)
	for _, d := range []string{"a", "b", "out"} {
		b.definedDataset(d, sweepDef)
	}
	b.publish("a", "2025-12-26")
	b.publish("b", "2025-12-28")
	b.upsertJob(backends.Job{ID: "j", Output: "out", Inputs: []string{"a", "b"},
		InputMappings: []backends.InputMapping{mapping("a", partition.Latest, 0, 0), mapping("b", partition.Latest, 0, 0)}})
	b.requireOffered("j", dayRange("2025-12-28", "2026-01-01")...)
}

// testMappingSweepBackfillAllAndLatest: the same with an ALL input first
// (every region) and a LATEST snapshot published on 12-28, both READY
// before the job exists.
func (s *suite) testMappingSweepBackfillAllAndLatest(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("region", regions)
	for _, d := range []string{"a", "out"} {
		b.definedDataset(d, sweepDef)
	}
	b.publish("region", "eu", "us")
	b.publish("a", "2025-12-28")
	b.upsertJob(backends.Job{ID: "j", Output: "out", Inputs: []string{"region", "a"},
		InputMappings: []backends.InputMapping{mapping("region", partition.All, 0, 0), mapping("a", partition.Latest, 0, 0)}})
	b.requireOffered("j", dayRange("2025-12-28", "2026-01-01")...)
}

// testMappingSweepSnapshotBeforeJob: b's snapshot (12-28) is READY before
// the job exists and a's (12-26) arrives after: the outputs from 12-28
// read both.
func (s *suite) testMappingSweepSnapshotBeforeJob(t *testing.T) {
	b := s.setup(t)
	for _, d := range []string{"a", "b", "out"} {
		b.definedDataset(d, sweepDef)
	}
	b.publish("b", "2025-12-28")
	b.upsertJob(backends.Job{ID: "j", Output: "out", Inputs: []string{"a", "b"},
		InputMappings: []backends.InputMapping{mapping("a", partition.Latest, 0, 0), mapping("b", partition.Latest, 0, 0)}})
	b.publish("a", "2025-12-26")
	b.requireOffered("j", dayRange("2025-12-28", "2026-01-01")...)
}

// testMappingSweepParkedPileUp: a job reading two snapshots through
// LATEST gets a's snapshot every day while b has none yet: every output is
// blocked on b. Each snapshot starts a sweep; a sweep must not stay behind
// at the output it could not claim, polling it forever, one more per day:
// b's first snapshot starts its own sweep from the outputs that read it.
func (s *suite) testMappingSweepParkedPileUp(t *testing.T) {
	b := s.setup(t)
	for _, d := range []string{"a", "b", "out"} {
		b.definedDataset(d, sweepDef)
	}
	b.upsertJob(backends.Job{ID: "j", Output: "out", Inputs: []string{"a", "b"},
		InputMappings: []backends.InputMapping{mapping("a", partition.Latest, 0, 0), mapping("b", partition.Latest, 0, 0)}})
	for _, d := range dayRange("2025-12-25", "2026-01-01") {
		b.publish("a", d)
		require.Empty(t, b.drain("j"))
		b.clock.Advance(2 * time.Second)
	}
	// The next day starts: frontiers waiting for it meet there and merge.
	b.clock.Advance(24 * time.Hour)
	require.Empty(t, b.drain("j"))
	n, err := b.s.QueueLength(b.ctx, "j")
	require.NoError(t, err)
	require.LessOrEqual(t, n, 2, "frontiers left polling outputs blocked on an input that has no chunk")
	b.publish("b", "2025-12-30")
	b.clock.Advance(2 * time.Second)
	require.Equal(t, dayRange("2025-12-30", "2026-01-02"), b.drain("j"))
}

// testMappingSweepMaxConcurrent: a sweep of a job at its maxConcurrent
// waits; each completion lets the next output be claimed.
func (s *suite) testMappingSweepMaxConcurrent(t *testing.T) {
	b := s.setup(t)
	for _, d := range []string{"raw", "dim", "out"} {
		b.definedDataset(d, sweepDef)
	}
	b.upsertJob(backends.Job{ID: "j", Output: "out", Inputs: []string{"raw", "dim"}, MaxConcurrent: 1,
		InputMappings: []backends.InputMapping{mapping("dim", partition.Latest, 0, 0)}})
	days := dayRange("2025-12-25", "2026-01-01")
	_, err := b.s.PublishRange(b.ctx, "raw", days[0], days[len(days)-1])
	require.NoError(t, err)
	b.publish("dim", "2025-12-25")
	var got []string
	for range len(days) + 1 {
		c, d := b.next("j")
		if c == nil {
			break
		}
		c2, _ := b.next("j")
		require.Nil(t, c2, "maxConcurrent 1")
		got = append(got, d)
		b.complete(c)
	}
	require.Equal(t, days, got)
}

// testMappingSweepMixedBlocked: a sweep passes outputs blocked on the
// driving input; those come once it is READY, and a release or failure of
// an output the sweep walked past brings it back.
func (s *suite) testMappingSweepMixedBlocked(t *testing.T) {
	b := s.setup(t)
	for _, d := range []string{"raw", "dim", "out"} {
		b.definedDataset(d, sweepDef)
	}
	b.upsertJob(backends.Job{ID: "j", Output: "out", Inputs: []string{"raw", "dim"},
		InputMappings: []backends.InputMapping{mapping("dim", partition.Latest, 0, 0)}})
	b.publish("raw", "2025-12-26", "2025-12-27", "2025-12-29")
	// 12-27 is claimed by hand before the snapshot; the sweep walks past it.
	b.publish("dim", "2025-12-25")
	held := b.claim("j", "2025-12-27")
	got := b.drain("j")
	require.Equal(t, []string{"2025-12-26", "2025-12-29"}, got)
	b.release(held)
	require.Equal(t, []string{"2025-12-27"}, b.drain("j"))
	b.publish("raw", "2025-12-28", "2026-01-01")
	require.Equal(t, []string{"2025-12-28", "2026-01-01"}, b.drain("j"))
}

// testMappingSweepPassesRunningInput: a sweep passes outputs whose chunk
// of the input read one to one is being produced (RUNNING, from nothing or
// over a READY chunk, by a force); completing or releasing that claim
// makes the chunk READY and queues the output.
func (s *suite) testMappingSweepPassesRunningInput(t *testing.T) {
	b := s.setup(t)
	for _, d := range []string{"src", "raw", "dim", "out"} {
		b.definedDataset(d, sweepDef)
	}
	b.upsertJob(backends.Job{ID: "mkraw", Output: "raw", Inputs: []string{"src"}})
	b.upsertJob(backends.Job{ID: "j", Output: "out", Inputs: []string{"raw", "dim"},
		InputMappings: []backends.InputMapping{mapping("dim", partition.Latest, 0, 0)}})
	b.publish("src", "2025-12-26", "2025-12-27", "2025-12-28")
	b.run("mkraw", "2025-12-26")
	b.run("mkraw", "2025-12-28")
	running := b.claim("mkraw", "2025-12-27")
	forced := b.force("mkraw", "2025-12-28")
	require.Empty(t, b.drain("j"), "no snapshot yet")
	b.publish("dim", "2025-12-25")
	require.Equal(t, []string{"2025-12-26"}, b.drain("j"))
	b.complete(running)
	require.Equal(t, []string{"2025-12-27"}, b.drain("j"))
	b.release(forced)
	require.Equal(t, backends.StatusReady, b.status("raw", "2025-12-28"))
	require.Equal(t, []string{"2025-12-28"}, b.drain("j"))
}

// testMappingSweepsMerge: snapshots published while a job lags behind
// its outputs each start a sweep; a sweep that catches up with another
// merges into it (two frontiers at one output), so that the queue holds
// at most one sweep's read-ahead (16 outputs) and a frontier per sweep
// beyond the outputs left, not a copy of every output per sweep (each
// copy costs a findNext round to drop).
func (s *suite) testMappingSweepsMerge(t *testing.T) {
	b := s.setup(t)
	def := partition.Def{Kind: partition.Daily, Start: "2025-09-01"}
	for _, d := range []string{"raw", "dim", "out"} {
		b.definedDataset(d, def)
	}
	b.upsertJob(backends.Job{ID: "j", Output: "out", Inputs: []string{"raw", "dim"},
		InputMappings: []backends.InputMapping{mapping("dim", partition.Latest, 0, 0)}})
	_, err := b.s.PublishRange(b.ctx, "raw", "2025-09-01", "2026-01-01")
	require.NoError(t, err)
	left := len(dayRange("2025-09-01", "2026-01-01"))
	b.publish("dim", "2025-09-01")
	c, _ := b.next("j")
	require.NotNil(t, c)
	b.complete(c)
	left--
	snapshots := []string{"2025-10-01", "2025-10-15", "2025-11-01", "2025-11-15"}
	b.publish("dim", snapshots...)
	sweeps := 1 + len(snapshots)
	worst := 0
	for {
		c, _ := b.next("j")
		if c == nil {
			break
		}
		b.complete(c)
		left--
		n, err := b.s.QueueLength(b.ctx, "j")
		require.NoError(t, err)
		worst = max(worst, n-left)
	}
	require.Zero(t, left, "every output claimed")
	// One read-ahead (16) and, per snapshot, its two sweeps (the RESUBMIT
	// one and the other) until they merge.
	require.LessOrEqual(t, worst, 16+2*sweeps, "queue entries beyond the outputs left: sweeps that met did not merge")
}
