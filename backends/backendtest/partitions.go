package backendtest

import (
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// Tests of the partitions read model (SPEC §8 "Missing and late") and of
// publish within a definition.

var partitionTests = []testCase{
	{"PartitionsExpectedSets", (*suite).testPartitionsExpectedSets},
	{"PartitionsIntegerOpen", (*suite).testPartitionsIntegerOpen},
	{"PartitionsStatuses", (*suite).testPartitionsStatuses},
	{"PartitionsLate", (*suite).testPartitionsLate},
	{"PartitionsPaging", (*suite).testPartitionsPaging},
	{"PartitionsFilters", (*suite).testPartitionsFilters},
	{"PartitionsScanBound", (*suite).testPartitionsScanBound},
	{"PartitionsErrors", (*suite).testPartitionsErrors},
	{"PartitionCounts", (*suite).testPartitionCounts},
	{"PartitionCountsBound", (*suite).testPartitionCountsBound},
	{"PartitionCountsLongWindows", (*suite).testPartitionCountsLongWindows},
	{"PartitionCountsKept", (*suite).testPartitionCountsKept},
	{"PartitionCountsKeptRelease", (*suite).testPartitionCountsKeptRelease},
	{"PartitionCountsKeptBisect", (*suite).testPartitionCountsKeptBisect},
	{"PartitionCountsKeptInteger", (*suite).testPartitionCountsKeptInteger},
	{"PartitionZones", (*suite).testPartitionZones},
	{"PublishOutsideDefinition", (*suite).testPublishOutsideDefinition},
}

func (b *bundle) definedDataset(id string, def partition.Def) {
	b.t.Helper()
	_, err := b.s.UpsertDataset(b.ctx, backends.Dataset{ID: id, Description: "dataset " + id,
		URL: "s3://lake/" + id, Location: "dt={dataid}/", Partitions: &def})
	require.NoError(b.t, err, "upsert dataset %s", id)
}

// partitions follows every page of f and returns all partitions.
func (b *bundle) partitions(f backends.PartitionFilter) []backends.Partition {
	b.t.Helper()
	var all []backends.Partition
	for range 1000 {
		page, err := b.s.Partitions(b.ctx, f)
		require.NoError(b.t, err)
		require.Len(b.t, page.Cursors, len(page.Partitions))
		all = append(all, page.Partitions...)
		if !page.HasNextPage {
			return all
		}
		require.NotEmpty(b.t, page.EndCursor, "a page with a next page has an end cursor")
		f.After = page.EndCursor
	}
	b.t.Fatal("more than 1000 pages")
	return nil
}

func dataids(ps []backends.Partition) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.DataID)
	}
	return out
}

func statuses(ps []backends.Partition) []backends.Status {
	out := []backends.Status{}
	for _, p := range ps {
		out = append(out, p.Status)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func (s *suite) testPartitionsExpectedSets(t *testing.T) {
	b := s.setup(t)
	berlin := "Europe/Berlin"
	b.definedDataset("hourly", partition.Def{Kind: partition.Hourly, Start: "2026-03-29T00", End: "2026-03-29T04", Timezone: berlin})
	b.definedDataset("daily", partition.Def{Kind: partition.Daily, Start: "2026-10-24", End: "2026-10-26", Timezone: berlin})
	b.definedDataset("weekly", partition.Def{Kind: partition.Weekly, Start: "2026-W52", End: "2027-W01"})
	b.definedDataset("monthly", partition.Def{Kind: partition.Monthly, Start: "2026-01", End: "2026-04"})
	b.definedDataset("integer", partition.Def{Kind: partition.Integer, Start: "8", End: "11"})
	b.definedDataset("static", partition.Def{Kind: partition.Static, Values: []string{"us", "apac", "eu"}})
	b.clock.Advance(2 * 365 * 24 * time.Hour) // every window has ended

	hourly := b.partitions(backends.PartitionFilter{Dataset: "hourly"})
	require.Equal(t, []string{"2026-03-29T00", "2026-03-29T01", "2026-03-29T03", "2026-03-29T04"}, dataids(hourly),
		"02:00 does not exist in Berlin on the day clocks spring forward")
	require.Equal(t, utc("2026-03-29T00:00:00Z"), hourly[1].WindowStart.UTC())
	require.Equal(t, utc("2026-03-29T01:00:00Z"), hourly[1].WindowEnd.UTC())
	require.Equal(t, utc("2026-03-29T01:00:00Z"), hourly[2].WindowStart.UTC(), "03:00 CEST follows 01:59 CET")

	daily := b.partitions(backends.PartitionFilter{Dataset: "daily"})
	require.Equal(t, []string{"2026-10-24", "2026-10-25", "2026-10-26"}, dataids(daily))
	require.Equal(t, utc("2026-10-24T22:00:00Z"), daily[1].WindowStart.UTC())
	require.Equal(t, 25*time.Hour, daily[1].WindowEnd.Sub(daily[1].WindowStart), "the day clocks fall back has 25 hours")
	require.Equal(t, daily[1].WindowEnd, daily[1].DueAt, "without lag a window is due at its end")

	weekly := b.partitions(backends.PartitionFilter{Dataset: "weekly"})
	require.Equal(t, []string{"2026-W52", "2026-W53", "2027-W01"}, dataids(weekly))
	require.Equal(t, utc("2026-12-28T00:00:00Z"), weekly[1].WindowStart.UTC())
	require.Equal(t, utc("2027-01-04T00:00:00Z"), weekly[1].WindowEnd.UTC())

	monthly := b.partitions(backends.PartitionFilter{Dataset: "monthly"})
	require.Equal(t, []string{"2026-01", "2026-02", "2026-03", "2026-04"}, dataids(monthly))
	require.Equal(t, 28*24*time.Hour, monthly[1].WindowEnd.Sub(monthly[1].WindowStart))

	integer := b.partitions(backends.PartitionFilter{Dataset: "integer"})
	require.Equal(t, []string{"8", "9", "10", "11"}, dataids(integer), "shortlex order is numeric order")
	require.True(t, integer[0].WindowStart.IsZero() && integer[0].WindowEnd.IsZero() && integer[0].DueAt.IsZero(),
		"INTEGER dataids have no window")

	static := b.partitions(backends.PartitionFilter{Dataset: "static"})
	require.Equal(t, []string{"eu", "us", "apac"}, dataids(static))
	require.True(t, static[0].DueAt.IsZero())
	for _, p := range append(hourly, static...) {
		require.Equal(t, backends.StatusNone, p.Status, "%s is missing", p.DataID)
		require.False(t, p.Late, "no deadline: nothing is late")
	}
}

func (s *suite) testPartitionsIntegerOpen(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("seq", partition.Def{Kind: partition.Integer})
	require.Empty(t, b.partitions(backends.PartitionFilter{Dataset: "seq"}), "no row: nothing is expected yet")

	b.publish("seq", "0", "2", "5")
	got := b.partitions(backends.PartitionFilter{Dataset: "seq"})
	require.Equal(t, []string{"0", "1", "2", "3", "4", "5"}, dataids(got), "up to the highest dataid seen")
	require.Equal(t, []backends.Status{ready, none, ready, none, none, ready}, statuses(got))

	b.publish("seq", "11")
	got = b.partitions(backends.PartitionFilter{Dataset: "seq", First: 4})
	require.Equal(t, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"}, dataids(got))
	require.Equal(t, []string{"3", "4"}, dataids(b.partitions(backends.PartitionFilter{Dataset: "seq", From: "3", To: "4"})))
	got = b.partitions(backends.PartitionFilter{Dataset: "seq", From: "10", To: "13"})
	require.Equal(t, []string{"10", "11", "12", "13"}, dataids(got), "a given to reaches past the highest seen")
	missing := b.partitions(backends.PartitionFilter{Dataset: "seq", Status: ptr(none), First: 2})
	require.Equal(t, []string{"1", "3", "4", "6", "7", "8", "9", "10"}, dataids(missing))
}

func (s *suite) testPartitionsStatuses(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("src", partition.Def{Kind: partition.Daily, Start: "2026-01-01"})
	b.definedDataset("out", partition.Def{Kind: partition.Daily, Start: "2026-01-01"})
	b.job("load", "out")
	b.clock.Advance(5 * 24 * time.Hour) // 2026-01-06: five days are due
	b.publish("src", "2026-01-01", "2026-01-03")
	_, err := b.s.Hold(b.ctx, "src", "2026-01-04", "bad feed")
	require.NoError(t, err)
	got := b.partitions(backends.PartitionFilter{Dataset: "src"})
	require.Equal(t, []string{"2026-01-01", "2026-01-02", "2026-01-03", "2026-01-04", "2026-01-05"}, dataids(got),
		"up to the last due day")
	require.Equal(t, []backends.Status{ready, none, ready, hold, none}, statuses(got))

	c := b.claim("load", "2026-01-02")
	b.complete(c)
	b.claim("load", "2026-01-03")
	c = b.claim("load", "2026-01-05")
	b.fail(c, "boom")
	_, err = b.s.Resubmit(b.ctx, "out", "2026-01-02", false)
	require.NoError(t, err)
	got = b.partitions(backends.PartitionFilter{Dataset: "out"})
	require.Equal(t, []backends.Status{none, resubmit, running, none, failed}, statuses(got))
}

func (s *suite) testPartitionsLate(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("feed", partition.Def{Kind: partition.Daily, Start: "2026-01-01", Lag: time.Hour, Deadline: ptr(6 * time.Hour)})
	b.clock.Advance(2*24*time.Hour + 5*time.Hour) // 2026-01-03T05:00
	got := b.partitions(backends.PartitionFilter{Dataset: "feed"})
	require.Equal(t, []string{"2026-01-01", "2026-01-02"}, dataids(got))
	require.Equal(t, utc("2026-01-03T01:00:00Z"), got[1].DueAt.UTC(), "due at end + lag")
	require.True(t, got[0].Late, "past its end + deadline and not READY")
	require.False(t, got[1].Late, "its deadline is 06:00")

	b.clock.Advance(time.Hour) // exactly the deadline of 2026-01-02
	got = b.partitions(backends.PartitionFilter{Dataset: "feed"})
	require.True(t, got[1].Late, "late at end + deadline")

	b.publish("feed", "2026-01-01")
	got = b.partitions(backends.PartitionFilter{Dataset: "feed"})
	require.False(t, got[0].Late, "READY is never late")
	require.Equal(t, ready, got[0].Status)
	require.True(t, got[1].Late)
	_, err := b.s.Hold(b.ctx, "feed", "2026-01-01", "recheck")
	require.NoError(t, err)
	got = b.partitions(backends.PartitionFilter{Dataset: "feed"})
	require.True(t, got[0].Late, "a chunk that is no longer READY is late again")
}

func (s *suite) testPartitionsPaging(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("d", partition.Def{Kind: partition.Daily, Start: "2026-01-01", Deadline: ptr(time.Duration(0))})
	b.clock.Advance(31 * 24 * time.Hour) // 2026-02-01: January is due
	b.publish("d", "2026-01-05", "2026-01-20")
	all := b.partitions(backends.PartitionFilter{Dataset: "d", First: 1000})
	require.Len(t, all, 31)

	f := backends.PartitionFilter{Dataset: "d", First: 10}
	var paged []backends.Partition
	for i := 0; ; i++ {
		page, err := b.s.Partitions(b.ctx, f)
		require.NoError(t, err)
		paged = append(paged, page.Partitions...)
		if i < 3 {
			require.Len(t, page.Partitions, 10)
			require.True(t, page.HasNextPage)
			require.Equal(t, page.Cursors[9], page.EndCursor)
		} else {
			require.Len(t, page.Partitions, 1)
			require.False(t, page.HasNextPage)
			break
		}
		f.After = page.Cursors[len(page.Cursors)-1]
	}
	require.Equal(t, all, paged)

	got := b.partitions(backends.PartitionFilter{Dataset: "d", From: "2026-01-10", To: "2026-01-12"})
	require.Equal(t, []string{"2026-01-10", "2026-01-11", "2026-01-12"}, dataids(got))
	got = b.partitions(backends.PartitionFilter{Dataset: "d", From: "2026-01-31", To: "2026-02-02"})
	require.Equal(t, []string{"2026-01-31", "2026-02-01", "2026-02-02"}, dataids(got), "a given to lists windows not due yet")
	require.True(t, got[1].DueAt.After(b.clock.Now()))
	require.False(t, got[1].Late, "a window not due is not late")
	require.True(t, got[0].Late)
	got = b.partitions(backends.PartitionFilter{Dataset: "d", From: "2025-12-01", To: "2026-01-02"})
	require.Equal(t, []string{"2026-01-01", "2026-01-02"}, dataids(got), "nothing before start")
	require.Empty(t, b.partitions(backends.PartitionFilter{Dataset: "d", From: "2026-01-12", To: "2026-01-10"}))
}

func (s *suite) testPartitionsFilters(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("d", partition.Def{Kind: partition.Daily, Start: "2026-01-01", Deadline: ptr(24 * time.Hour)})
	b.clock.Advance(10 * 24 * time.Hour) // 2026-01-11: ten days due, 01..09 past their deadline
	b.publish("d", "2026-01-02", "2026-01-04", "2026-01-06", "2026-01-08", "2026-01-10")
	_, err := b.s.Hold(b.ctx, "d", "2026-01-03", "")
	require.NoError(t, err)

	missing := b.partitions(backends.PartitionFilter{Dataset: "d", Status: ptr(none), First: 2})
	require.Equal(t, []string{"2026-01-01", "2026-01-05", "2026-01-07", "2026-01-09"}, dataids(missing))
	readyOnes := b.partitions(backends.PartitionFilter{Dataset: "d", Status: ptr(ready), First: 3})
	require.Equal(t, []string{"2026-01-02", "2026-01-04", "2026-01-06", "2026-01-08", "2026-01-10"}, dataids(readyOnes))
	late := b.partitions(backends.PartitionFilter{Dataset: "d", Late: ptr(true), First: 1})
	require.Equal(t, []string{"2026-01-01", "2026-01-03", "2026-01-05", "2026-01-07", "2026-01-09"}, dataids(late))
	onTime := b.partitions(backends.PartitionFilter{Dataset: "d", Late: ptr(false)})
	require.Equal(t, []string{"2026-01-02", "2026-01-04", "2026-01-06", "2026-01-08", "2026-01-10"}, dataids(onTime))
	both := b.partitions(backends.PartitionFilter{Dataset: "d", Status: ptr(hold), Late: ptr(true), From: "2026-01-02", To: "2026-01-05"})
	require.Equal(t, []string{"2026-01-03"}, dataids(both))
	require.Empty(t, b.partitions(backends.PartitionFilter{Dataset: "d", Status: ptr(running)}))
}

// testPartitionsScanBound: a filter that matches nothing over a history
// longer than MaxPartitionScan answers pages that end at the bound, and
// following them finds what lies beyond.
func (s *suite) testPartitionsScanBound(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("old", partition.Def{Kind: partition.Daily, Start: "1990-01-01"})
	b.publish("old", "2025-12-30")
	f := backends.PartitionFilter{Dataset: "old", Status: ptr(ready)}
	page, err := b.s.Partitions(b.ctx, f)
	require.NoError(t, err)
	require.Empty(t, page.Partitions, "the first %d days hold nothing READY", backends.MaxPartitionScan)
	require.True(t, page.HasNextPage, "the scan bound ended the page, not the history")
	require.Equal(t, "2017-05-18", page.EndCursor, "1990-01-01 + %d days - 1", backends.MaxPartitionScan)
	f.After = page.EndCursor
	page, err = b.s.Partitions(b.ctx, f)
	require.NoError(t, err)
	require.Equal(t, []string{"2025-12-30"}, dataids(page.Partitions))
	require.False(t, page.HasNextPage)
	require.Len(t, b.partitions(backends.PartitionFilter{Dataset: "old", Status: ptr(none), First: 1000}),
		int(utc("2026-01-01T00:00:00Z").Sub(utc("1990-01-01T00:00:00Z"))/(24*time.Hour))-1)
}

func (s *suite) testPartitionsErrors(t *testing.T) {
	b := s.setup(t)
	b.datasets("plain")
	b.definedDataset("d", partition.Def{Kind: partition.Daily, Start: "2026-01-01"})
	_, err := b.s.Partitions(b.ctx, backends.PartitionFilter{Dataset: "plain"})
	requireCode(t, err, backends.CodeInvalidArgument)
	require.Contains(t, err.Error(), "no partition definition")
	_, err = b.s.Partitions(b.ctx, backends.PartitionFilter{Dataset: "nope"})
	requireCode(t, err, backends.CodeNotFound)
	_, err = b.s.Partitions(b.ctx, backends.PartitionFilter{Dataset: "d", Status: ptr(backends.StatusDone)})
	requireCode(t, err, backends.CodeInvalidArgument)
	_, err = b.s.Partitions(b.ctx, backends.PartitionFilter{Dataset: "d", From: "2026-01"})
	requireCode(t, err, backends.CodeInvalidArgument)
	_, err = b.s.Partitions(b.ctx, backends.PartitionFilter{Dataset: "d", To: "bad id!"})
	requireCode(t, err, backends.CodeInvalidArgument)
	_, err = b.s.PartitionCounts(b.ctx, "plain")
	requireCode(t, err, backends.CodeInvalidArgument)
}

func (s *suite) testPartitionCounts(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("feed", partition.Def{Kind: partition.Hourly, Start: "2025-12-31T20", Deadline: ptr(2 * time.Hour)})
	b.definedDataset("seq", partition.Def{Kind: partition.Integer, Start: "1"})
	b.publish("feed", "2025-12-31T21", "2025-12-31T23")
	b.clock.Advance(time.Hour) // 2026-01-01T01: 20..00 due; 20..22 past their deadline
	c, err := b.s.PartitionCounts(b.ctx, "feed")
	require.NoError(t, err)
	require.Equal(t, 3, c.Missing) // 20, 22, 00
	require.Equal(t, "2025-12-31T20", c.OldestMissing)
	require.Equal(t, 2, c.Late) // 20, 22
	require.Equal(t, "2025-12-31T20", c.OldestLate)
	require.False(t, c.Truncated)
	want := b.partitions(backends.PartitionFilter{Dataset: "feed", Status: ptr(none)})
	require.Len(t, want, c.Missing, "the count agrees with the listing")
	require.Len(t, b.partitions(backends.PartitionFilter{Dataset: "feed", Late: ptr(true)}), c.Late)

	c, err = b.s.PartitionCounts(b.ctx, "seq")
	require.NoError(t, err)
	require.Equal(t, backends.PartitionCount{Dataset: "seq", At: b.clock.Now()}, c)
	b.publish("seq", "2", "5")
	c, err = b.s.PartitionCounts(b.ctx, "seq")
	require.NoError(t, err)
	require.Equal(t, 3, c.Missing, "1, 3 and 4: up to the highest seen")
	require.Equal(t, "1", c.OldestMissing)
	require.Zero(t, c.Late)
}

// testPartitionCountsBound: a time or INTEGER definition's history is
// counted whole however long, from the counts kept with the rows, when
// every definition the dataset had since its creation expected no dataid
// the current one does not; a dataset whose definition expected more
// before (here, an earlier start) is counted over MaxPartitionCount
// expected dataids, by reading its rows.
func (s *suite) testPartitionCountsBound(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("long", partition.Def{Kind: partition.Daily, Start: "1800-01-01", End: "9999-12-31"})
	b.definedDataset("long", partition.Def{Kind: partition.Daily, Start: "1700-01-01"}) // expects more: still kept
	b.definedDataset("old", partition.Def{Kind: partition.Daily, Start: "1600-01-01"})
	b.definedDataset("old", partition.Def{Kind: partition.Daily, Start: "1700-01-01"}) // expects less
	b.definedDataset("ints", partition.Def{Kind: partition.Integer, End: "150000"})
	b.definedDataset("open", partition.Def{Kind: partition.Integer})
	b.publish("open", "150000")
	c, err := b.s.PartitionCounts(b.ctx, "old")
	require.NoError(t, err)
	require.True(t, c.Truncated)
	require.Equal(t, backends.MaxPartitionCount, c.Missing)
	require.Equal(t, "1752-03-18", c.OldestMissing, "the most recent dataids are counted")
	for ds, missing := range map[string]int{"ints": 150001, "open": 150000} {
		c, err := b.s.PartitionCounts(b.ctx, ds)
		require.NoError(t, err)
		require.Equal(t, []any{missing, "0", false}, []any{c.Missing, c.OldestMissing, c.Truncated}, "%s: counted whole", ds)
	}
	// Every day from 1700-01-01 to yesterday, by Unix days (a
	// time.Duration holds at most 292 years).
	days := func(t time.Time) int64 { return t.Unix() / 86400 }
	want := days(b.clock.Now()) - days(time.Date(1700, 1, 1, 0, 0, 0, 0, time.UTC))
	c, err = b.s.PartitionCounts(b.ctx, "long")
	require.NoError(t, err)
	require.False(t, c.Truncated)
	require.Equal(t, int(want), c.Missing)
	require.Equal(t, "1700-01-01", c.OldestMissing)
}

func (s *suite) testPublishOutsideDefinition(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("daily", partition.Def{Kind: partition.Daily, Start: "2026-01-01", End: "2026-12-31"})
	b.definedDataset("hourly", partition.Def{Kind: partition.Hourly, Start: "2026-01-01T00", Timezone: "Europe/Berlin"})
	b.definedDataset("static", partition.Def{Kind: partition.Static, Values: []string{"eu", "us"}})
	b.definedDataset("integer", partition.Def{Kind: partition.Integer, Start: "1", End: "9"})
	b.datasets("plain")
	for ds, ids := range map[string][]string{
		"daily":   {"2025-12-31", "2027-01-01", "2026-02-30", "2026-1-05", "20260105"},
		"hourly":  {"2026-03-29T02", "2026-01-01", "2025-12-31T23"},
		"static":  {"apac", "EU"},
		"integer": {"0", "10", "07", "x"},
	} {
		for _, id := range ids {
			_, err := b.s.Publish(b.ctx, ds, id)
			requireCode(t, err, backends.CodeInvalidArgument, "publish %s/%s", ds, id)
			require.Contains(t, err.Error(), "not an expected dataid")
			_, err = b.s.Hold(b.ctx, ds, id, "held outside")
			requireCode(t, err, backends.CodeInvalidArgument, "hold %s/%s", ds, id)
			require.Contains(t, err.Error(), "not an expected dataid")
			require.Equal(t, backends.StatusNone, b.status(ds, id), "nothing written for %s/%s", ds, id)
		}
	}
	b.publish("daily", "2026-01-01", "2026-12-31")
	b.publish("hourly", "2026-03-29T03")
	b.publish("static", "eu")
	b.publish("integer", "9")
	b.publish("plain", "anything", "2026-02-30")

	// Rows written before a definition stay; partitions does not list
	// them, chunks does.
	b.datasets("late")
	b.publish("late", "x1", "2026-01-02")
	b.definedDataset("late", partition.Def{Kind: partition.Daily, Start: "2026-01-01", End: "2026-01-02"})
	got := b.partitions(backends.PartitionFilter{Dataset: "late", To: "2026-01-02"})
	require.Equal(t, []string{"2026-01-01", "2026-01-02"}, dataids(got))
	require.Equal(t, []backends.Status{none, ready}, statuses(got))
	require.Len(t, listRows(t, b, backends.ChunkFilter{Dataset: "late"}), 2)
	// Nor are they counted: the rows are read, not the kept counts (which
	// count x1 too).
	b.clock.Advance(72 * time.Hour)
	c, err := b.s.PartitionCounts(b.ctx, "late")
	require.NoError(t, err)
	require.Equal(t, []any{1, "2026-01-01"}, []any{c.Missing, c.OldestMissing})
}
