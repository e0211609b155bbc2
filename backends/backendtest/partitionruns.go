package backendtest

import (
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// Tests of the runs read model (PartitionRuns: the dashboard's grid and
// history strip) and of LatestReady.

var runTests = []testCase{
	{"RunsStatusesAndLate", (*suite).testRunsStatusesAndLate},
	{"RunsColumns", (*suite).testRunsColumns},
	{"RunsColumnsCalendar", (*suite).testRunsColumnsCalendar},
	{"RunsBounds", (*suite).testRunsBounds},
	{"RunsOtherKinds", (*suite).testRunsOtherKinds},
	{"RunsAgreeWithPartitions", (*suite).testRunsAgreeWithPartitions},
	{"RunsErrors", (*suite).testRunsErrors},
	{"LatestReady", (*suite).testLatestReady},
}

func (b *bundle) runs(f backends.RunsFilter) backends.PartitionSpan {
	b.t.Helper()
	span, err := b.s.PartitionRuns(b.ctx, f)
	require.NoError(b.t, err)
	require.Equal(b.t, f.Dataset, span.Dataset)
	return span
}

// run is a PartitionRun written short: run("a", "b", 2, ready) or, late,
// lateRun(...).
func run(from, to string, n int, st backends.Status) backends.PartitionRun {
	return backends.PartitionRun{From: from, To: to, Count: n, Status: st}
}

func lateRun(from, to string, n int, st backends.Status) backends.PartitionRun {
	r := run(from, to, n, st)
	r.Late = true
	return r
}

func (s *suite) testRunsStatusesAndLate(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("feed", partition.Def{Kind: partition.Daily, Start: "2026-01-01", Deadline: ptr(6 * time.Hour)})
	b.clock.Advance(10*24*time.Hour + 5*time.Hour) // 2026-01-11T05:00: 01..10 due, 01..09 past their deadline
	b.publish("feed", "2026-01-01", "2026-01-02", "2026-01-03", "2026-01-06", "2026-01-10")
	_, err := b.s.Hold(b.ctx, "feed", "2026-01-07", "bad file")
	require.NoError(t, err)

	span := b.runs(backends.RunsFilter{Dataset: "feed", Runs: true})
	require.Equal(t, partition.Daily, span.Kind)
	require.Equal(t, []backends.PartitionRun{
		run("2026-01-01", "2026-01-03", 3, ready),
		lateRun("2026-01-04", "2026-01-05", 2, none),
		run("2026-01-06", "2026-01-06", 1, ready),
		lateRun("2026-01-07", "2026-01-07", 1, hold),
		lateRun("2026-01-08", "2026-01-09", 2, none),
		run("2026-01-10", "2026-01-10", 1, ready),
	}, span.Runs)
	require.Equal(t, "2026-01-01", span.From)
	require.Equal(t, "2026-01-10", span.To, "up to the last due day")
	require.Equal(t, 10, span.Count)
	require.Empty(t, span.Next)
	require.Nil(t, span.Columns, "no zoom, no columns")
	require.Equal(t, utc("2026-01-12T00:00:00Z"), span.ChangesAt.UTC(), "when 2026-01-11 becomes due")

	span = b.runs(backends.RunsFilter{Dataset: "feed", From: "2026-01-05", To: "2026-01-07", Runs: true})
	require.Equal(t, []backends.PartitionRun{
		lateRun("2026-01-05", "2026-01-05", 1, none), run("2026-01-06", "2026-01-06", 1, ready), lateRun("2026-01-07", "2026-01-07", 1, hold),
	}, span.Runs)
	require.True(t, span.ChangesAt.IsZero(), "a span of due days, all late or READY, changes with no clock")

	// A chunk that is not READY and not late yet: the span changes when
	// its deadline passes.
	_, err = b.s.Hold(b.ctx, "feed", "2026-01-10", "recheck")
	require.NoError(t, err)
	span = b.runs(backends.RunsFilter{Dataset: "feed", From: "2026-01-09", Runs: true})
	require.Equal(t, []backends.PartitionRun{lateRun("2026-01-09", "2026-01-09", 1, none), run("2026-01-10", "2026-01-10", 1, hold)}, span.Runs)
	require.Equal(t, utc("2026-01-11T06:00:00Z"), span.ChangesAt.UTC(), "the deadline of 2026-01-10")
	b.clock.Advance(time.Hour)
	span = b.runs(backends.RunsFilter{Dataset: "feed", From: "2026-01-09", Runs: true})
	require.Equal(t, []backends.PartitionRun{lateRun("2026-01-09", "2026-01-09", 1, none), lateRun("2026-01-10", "2026-01-10", 1, hold)}, span.Runs)
}

func cols(from, to string, columns, count int, counts map[string]int) backends.PartitionColumnRun {
	c := backends.PartitionColumnRun{From: from, To: to, Columns: columns, Count: count}
	c.Ready, c.Running, c.Failed, c.Resubmit = counts["ready"], counts["running"], counts["failed"], counts["resubmit"]
	c.Hold, c.Missing, c.Late = counts["hold"], counts["missing"], counts["late"]
	return c
}

func (s *suite) testRunsColumns(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("h", partition.Def{Kind: partition.Hourly, Start: "2026-01-01T00", Deadline: ptr(time.Duration(0))})
	b.clock.Advance(4*24*time.Hour + 30*time.Minute) // 2026-01-05T00:30: four days of hours due
	_, err := b.s.PublishRange(b.ctx, "h", "2026-01-01T00", "2026-01-04T23")
	require.NoError(t, err)
	_, err = b.s.Hold(b.ctx, "h", "2026-01-02T05", "bad hour")
	require.NoError(t, err)

	span := b.runs(backends.RunsFilter{Dataset: "h", Zoom: partition.Daily})
	require.Nil(t, span.Runs, "runs not asked for")
	require.Equal(t, []backends.PartitionColumnRun{
		cols("2026-01-01", "2026-01-01", 1, 24, map[string]int{"ready": 24}),
		cols("2026-01-02", "2026-01-02", 1, 24, map[string]int{"ready": 23, "hold": 1, "late": 1}),
		cols("2026-01-03", "2026-01-04", 2, 24, map[string]int{"ready": 24}),
	}, span.Columns, "equal columns in a row merge")
	require.Equal(t, 96, span.Count)

	span = b.runs(backends.RunsFilter{Dataset: "h", Zoom: partition.Weekly, Runs: true})
	require.Equal(t, []backends.PartitionColumnRun{cols("2026-W01", "2026-W01", 1, 96, map[string]int{"ready": 95, "hold": 1, "late": 1})},
		span.Columns, "2026-01-01 is the Thursday of 2026-W01")
	require.Equal(t, []backends.PartitionRun{
		run("2026-01-01T00", "2026-01-02T04", 29, ready), lateRun("2026-01-02T05", "2026-01-02T05", 1, hold), run("2026-01-02T06", "2026-01-04T23", 66, ready),
	}, span.Runs)
	span = b.runs(backends.RunsFilter{Dataset: "h", Zoom: partition.Monthly, From: "2026-01-02T00", To: "2026-01-02T11"})
	require.Equal(t, []backends.PartitionColumnRun{cols("2026-01", "2026-01", 1, 12, map[string]int{"ready": 11, "hold": 1, "late": 1})}, span.Columns)
	span = b.runs(backends.RunsFilter{Dataset: "h", Zoom: partition.Hourly, Runs: true})
	require.Nil(t, span.Columns, "a zoom as fine as the dataset: its runs are its cells")
	require.Len(t, span.Runs, 3)
}

// testRunsColumnsCalendar: a week is in the month of its Thursday, and a
// day's column holds the hours its zone gives it (23 on the day clocks
// spring forward).
func (s *suite) testRunsColumnsCalendar(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("wk", partition.Def{Kind: partition.Weekly, Start: "2026-W01"})
	b.definedDataset("berlin", partition.Def{Kind: partition.Hourly, Start: "2026-03-28T00", End: "2026-03-30T23", Timezone: "Europe/Berlin"})
	b.clock.Advance(70 * 24 * time.Hour) // 2026-03-12: 2026-W10 (ends Monday 2026-03-09) is due, W11 is not
	span := b.runs(backends.RunsFilter{Dataset: "wk", Zoom: partition.Monthly})
	require.Equal(t, []backends.PartitionColumnRun{
		cols("2026-01", "2026-01", 1, 5, map[string]int{"missing": 5}), // W01 (Thursday 2026-01-01) .. W05 (Thursday 2026-01-29)
		cols("2026-02", "2026-02", 1, 4, map[string]int{"missing": 4}), // W06 .. W09 (Thursday 2026-02-26)
		cols("2026-03", "2026-03", 1, 1, map[string]int{"missing": 1}), // W10
	}, span.Columns)
	require.Equal(t, "2026-W10", span.To)

	b.clock.Advance(30 * 24 * time.Hour)
	span = b.runs(backends.RunsFilter{Dataset: "berlin", Zoom: partition.Daily, Runs: true})
	require.Equal(t, []backends.PartitionColumnRun{
		cols("2026-03-28", "2026-03-28", 1, 24, map[string]int{"missing": 24}),
		cols("2026-03-29", "2026-03-29", 1, 23, map[string]int{"missing": 23}),
		cols("2026-03-30", "2026-03-30", 1, 24, map[string]int{"missing": 24}),
	}, span.Columns)
	require.Equal(t, []backends.PartitionRun{run("2026-03-28T00", "2026-03-30T23", 71, none)}, span.Runs)
	require.True(t, span.ChangesAt.IsZero(), "a bounded definition whose every window is due")
}

func (s *suite) testRunsBounds(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("d", partition.Def{Kind: partition.Daily, Start: "2025-01-01"})
	b.publish("d", "2025-01-02", "2025-01-04", "2025-01-06")

	// Limit ends the span; Next goes on from there, and the spans add up.
	span := b.runs(backends.RunsFilter{Dataset: "d", Limit: 100, Runs: true})
	require.Equal(t, 100, span.Count)
	require.Equal(t, "2025-04-10", span.To)
	require.Equal(t, "2025-04-11", span.Next)
	require.True(t, span.ChangesAt.IsZero(), "a span cut short says nothing of the windows after it")
	total := span.Count
	for span.Next != "" {
		span = b.runs(backends.RunsFilter{Dataset: "d", From: span.Next, Limit: 100, Runs: true})
		total += span.Count
	}
	require.Equal(t, 365, total, "2025 is due")
	require.Equal(t, "2025-12-31", span.To)
	require.Equal(t, []backends.PartitionRun{run("2025-10-28", "2025-12-31", 65, none)}, span.Runs, "the fourth span: the last 65 days")

	// MaxRuns ends the span before the run that would exceed it.
	span = b.runs(backends.RunsFilter{Dataset: "d", MaxRuns: 3, Runs: true})
	require.Equal(t, []backends.PartitionRun{run("2025-01-01", "2025-01-01", 1, none), run("2025-01-02", "2025-01-02", 1, ready), run("2025-01-03", "2025-01-03", 1, none)}, span.Runs)
	require.Equal(t, "2025-01-03", span.To)
	require.Equal(t, "2025-01-04", span.Next)
	require.Equal(t, 3, span.Count)
	// ... and columns at a column's end.
	span = b.runs(backends.RunsFilter{Dataset: "d", MaxRuns: 2, Zoom: partition.Monthly})
	require.Equal(t, []backends.PartitionColumnRun{
		cols("2025-01", "2025-01", 1, 31, map[string]int{"ready": 3, "missing": 28}),
		cols("2025-02", "2025-02", 1, 28, map[string]int{"missing": 28}),
	}, span.Columns)
	require.Equal(t, "2025-03-01", span.Next)
	require.Equal(t, 59, span.Count)

	// Without a limit, DefaultRunsLimit dataids at most.
	b.definedDataset("old", partition.Def{Kind: partition.Daily, Start: "1990-01-01"})
	span = b.runs(backends.RunsFilter{Dataset: "old", Runs: true})
	require.Equal(t, backends.DefaultRunsLimit, span.Count)
	require.Equal(t, "2017-05-19", span.Next, "1990-01-01 + %d days", backends.DefaultRunsLimit)
	require.Equal(t, []backends.PartitionRun{run("1990-01-01", "2017-05-18", backends.DefaultRunsLimit, none)}, span.Runs)
	span = b.runs(backends.RunsFilter{Dataset: "old", Limit: backends.MaxRunsLimit, Runs: true})
	require.Equal(t, 13149, span.Count, "every day from 1990 to 2025")
	require.Empty(t, span.Next)
}

func (s *suite) testRunsOtherKinds(t *testing.T) {
	b := s.setup(t)
	b.datasets("plain")
	b.publish("plain", "a", "b", "c", "aa")
	_, err := b.s.Hold(b.ctx, "plain", "b", "")
	require.NoError(t, err)
	span := b.runs(backends.RunsFilter{Dataset: "plain", Zoom: partition.Daily, Runs: true})
	require.Equal(t, partition.Kind(""), span.Kind)
	require.Equal(t, []backends.PartitionRun{run("a", "a", 1, ready), run("b", "b", 1, hold), run("c", "aa", 2, ready)}, span.Runs,
		"without a definition: the chunks, in shortlex order")
	require.Nil(t, span.Columns)
	require.Equal(t, 4, span.Count)
	span = b.runs(backends.RunsFilter{Dataset: "plain", From: "b", Limit: 1, Runs: true})
	require.Equal(t, []backends.PartitionRun{run("b", "b", 1, hold)}, span.Runs)
	require.Equal(t, "c", span.Next)

	b.definedDataset("seq", partition.Def{Kind: partition.Integer})
	require.Zero(t, b.runs(backends.RunsFilter{Dataset: "seq", Runs: true}).Count, "no row: nothing expected yet")
	b.publish("seq", "0", "2", "5")
	span = b.runs(backends.RunsFilter{Dataset: "seq", Runs: true})
	require.Equal(t, []backends.PartitionRun{
		run("0", "0", 1, ready), run("1", "1", 1, none), run("2", "2", 1, ready), run("3", "4", 2, none), run("5", "5", 1, ready),
	}, span.Runs, "up to the highest dataid seen")
	require.Equal(t, "5", span.To)
	require.Empty(t, span.Next)
	require.True(t, span.ChangesAt.IsZero())

	b.definedDataset("regions", partition.Def{Kind: partition.Static, Values: []string{"us", "apac", "eu"}})
	b.publish("regions", "us")
	span = b.runs(backends.RunsFilter{Dataset: "regions", Runs: true})
	require.Equal(t, []backends.PartitionRun{run("eu", "eu", 1, none), run("us", "us", 1, ready), run("apac", "apac", 1, none)}, span.Runs)
}

// testRunsAgreeWithPartitions: the runs, spelled out one dataid at a
// time, are the partitions listing.
func (s *suite) testRunsAgreeWithPartitions(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("h", partition.Def{Kind: partition.Hourly, Start: "2026-01-01T00", Deadline: ptr(20 * time.Hour)})
	b.clock.Advance(3 * 24 * time.Hour) // 72 hours due, the first 52 past their deadline
	for i := range 72 {
		id := time.Date(2026, 1, 1, i, 0, 0, 0, time.UTC).Format("2006-01-02T15")
		switch {
		case i%7 == 3:
			_, err := b.s.Hold(b.ctx, "h", id, "")
			require.NoError(t, err)
		case i%5 != 0 && i%11 != 0:
			b.publish("h", id)
		}
	}
	listed := b.partitions(backends.PartitionFilter{Dataset: "h", First: 1000})
	for _, f := range []backends.RunsFilter{
		{Dataset: "h", Runs: true},
		{Dataset: "h", From: "2026-01-02T10", To: "2026-01-03T03", Runs: true},
	} {
		span := b.runs(f)
		var spelled []backends.Partition
		for _, r := range span.Runs {
			ids, err := partition.Def{Kind: partition.Hourly, Start: "2026-01-01T00"}.Range(r.From, r.To)
			require.NoError(t, err)
			n := 0
			for id := range ids {
				spelled = append(spelled, backends.Partition{DataID: id, Status: r.Status, Late: r.Late})
				n++
			}
			require.Equal(t, r.Count, n, "a run counts its dataids")
		}
		var want []backends.Partition
		for _, p := range listed {
			if (f.From == "" || p.DataID >= f.From) && (f.To == "" || p.DataID <= f.To) {
				want = append(want, backends.Partition{DataID: p.DataID, Status: p.Status, Late: p.Late})
			}
		}
		require.Equal(t, want, spelled)
		require.Equal(t, len(want), span.Count)
	}
}

func (s *suite) testRunsErrors(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("d", partition.Def{Kind: partition.Daily, Start: "2025-01-01"})
	for _, f := range []backends.RunsFilter{
		{Dataset: "d", Limit: -1},
		{Dataset: "d", Limit: backends.MaxRunsLimit + 1},
		{Dataset: "d", MaxRuns: backends.MaxRuns + 1},
		{Dataset: "d", Zoom: partition.Integer},
		{Dataset: "d", Zoom: "FORTNIGHTLY"},
		{Dataset: "d", From: "2025-01"},
		{Dataset: "d", To: "bad id!"},
	} {
		_, err := b.s.PartitionRuns(b.ctx, f)
		requireCode(t, err, backends.CodeInvalidArgument, "%+v", f)
	}
	_, err := b.s.PartitionRuns(b.ctx, backends.RunsFilter{Dataset: "nope"})
	requireCode(t, err, backends.CodeNotFound)
	_, err = b.s.LatestReady(b.ctx, []string{"d", "nope"})
	requireCode(t, err, backends.CodeNotFound)
}

func (s *suite) testLatestReady(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("d", partition.Def{Kind: partition.Daily, Start: "2025-12-01"})
	b.datasets("plain")
	b.definedDataset("later", partition.Def{Kind: partition.Daily, Start: "2026-06-01"})
	latest := func(ds ...string) []string {
		t.Helper()
		ids, err := b.s.LatestReady(b.ctx, ds)
		require.NoError(t, err)
		return ids
	}
	require.Equal(t, []string{"", "", ""}, latest("d", "plain", "later"), "no chunk")
	b.publish("d", "2025-12-03", "2025-12-09", "2025-12-20")
	_, err := b.s.Hold(b.ctx, "d", "2025-12-20", "")
	require.NoError(t, err)
	b.publish("plain", "9", "10", "b")
	require.Equal(t, []string{"2025-12-09", "10"}, latest("d", "plain"),
		"the newest READY chunk, not the newest chunk; shortlex: 10 is after 9 and b")
	require.Empty(t, latest(), "no dataset, no answer")

	// However far back the newest READY chunk is.
	b.definedDataset("years", partition.Def{Kind: partition.Daily, Start: "1980-01-01"})
	require.Equal(t, []string{""}, latest("years"), "46 years and nothing READY")
	b.publish("years", "1980-01-05")
	require.Equal(t, []string{"1980-01-05"}, latest("years"), "16,797 days back")
	b.publish("years", "2001-06-01")
	require.Equal(t, []string{"2001-06-01"}, latest("years"), "8,979 days back")
	b.publish("years", "2025-10-01")
	require.Equal(t, []string{"2025-10-01"}, latest("years"), "92 days back")
}
