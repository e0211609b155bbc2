package backendtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// testPartitionCountsKept: the missing and late counts of a long hourly
// history in a zone with a skipped hour, and its oldest missing and late
// dataids, with gaps near the start, in the middle and at the end, rows
// published ahead and a chunk held past its deadline, agree with the
// partitions listing of the same dataset, as gaps are filled and time
// passes. "kept" is counted from the counts kept with its rows; "read",
// whose definition expected more dataids before, by reading its rows:
// both answer alike.
func (s *suite) testPartitionCountsKept(t *testing.T) {
	b := s.setup(t)
	lag, deadline := time.Hour, 6*time.Hour
	def := partition.Def{Kind: partition.Hourly, Start: "2026-01-01T00", Timezone: "Europe/Berlin", Lag: lag, Deadline: &deadline}
	earlier := def
	earlier.Start = "2025-12-01T00"
	b.definedDataset("kept", def)
	b.definedDataset("read", earlier)
	b.definedDataset("read", def)
	b.clock.Advance(time.Date(2026, 4, 15, 12, 30, 0, 0, time.UTC).Sub(b.clock.Now()))

	publish := func(from, to string) {
		t.Helper()
		for _, ds := range []string{"kept", "read"} {
			_, err := b.s.PublishRange(b.ctx, ds, from, to)
			require.NoError(t, err, "%s %s..%s", ds, from, to)
		}
	}
	check := func(what string) {
		t.Helper()
		// The reference: every due expected dataid, listed.
		missing, late, oldestMissing, oldestLate := 0, 0, "", ""
		for _, p := range b.partitions(backends.PartitionFilter{Dataset: "kept", First: backends.MaxPageSize}) {
			if p.Status == backends.StatusNone {
				if missing++; oldestMissing == "" {
					oldestMissing = p.DataID
				}
			}
			if p.Late {
				if late++; oldestLate == "" {
					oldestLate = p.DataID
				}
			}
		}
		require.Positive(t, missing+late+1) // (the last check has none of either)
		for _, ds := range []string{"kept", "read"} {
			c, err := b.s.PartitionCounts(b.ctx, ds)
			require.NoError(t, err, ds)
			require.Equal(t, []any{missing, late, oldestMissing, oldestLate, false},
				[]any{c.Missing, c.Late, c.OldestMissing, c.OldestLate, c.Truncated}, "%s: %s", ds, what)
		}
	}

	// Due at 12:30 UTC, lag 1h: up to 2026-04-15T12 Berlin (10:00-11:00
	// UTC); not READY by 6h after the end: late up to T07.
	publish("2026-01-01T06", "2026-02-15T09")
	publish("2026-02-15T13", "2026-04-15T09")
	publish("2026-04-20T00", "2026-04-20T02") // ahead
	publish("2026-01-01T00", "2026-01-01T02")
	_, err := b.s.Hold(b.ctx, "kept", "2026-01-01T07", "bad feed")
	require.NoError(t, err)
	_, err = b.s.Hold(b.ctx, "read", "2026-01-01T07", "bad feed")
	require.NoError(t, err)
	check("gaps at the start, in the middle and at the end")
	publish("2026-01-01T03", "2026-01-01T05")
	check("the first gap filled: the held chunk is the oldest late one")
	for _, ds := range []string{"kept", "read"} {
		_, err := b.s.Resubmit(b.ctx, ds, "2026-01-01T07", false)
		require.NoError(t, err)
		_, err = b.s.Publish(b.ctx, ds, "2026-01-01T07")
		require.NoError(t, err)
	}
	check("the held chunk published again")
	publish("2026-02-15T10", "2026-02-15T12")
	check("gaps at the end only")
	b.clock.Advance(5 * time.Hour)
	check("five hours later")
	publish("2026-04-15T10", "2026-04-15T18")
	check("none missing")
	publish("2026-04-15T19", "2026-04-15T19")
	b.clock.Advance(-5 * time.Hour)
	check("earlier again: rows not due yet do not count")
}

// testPartitionCountsKeptRelease: the oldest missing chunk of a produced
// dataset, claimed and counted while RUNNING (it has a row then), is the
// oldest missing one again once the claim is released, and a chunk
// completed before it stays counted; the count of a dataset also finds
// what a count before it found, when nothing changed.
func (s *suite) testPartitionCountsKeptRelease(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("out", partition.Def{Kind: partition.Daily, Start: "2026-01-01", End: "2026-12-31"})
	b.job("mk", "out")
	b.clock.Advance(time.Date(2026, 1, 20, 12, 0, 0, 0, time.UTC).Sub(b.clock.Now()))
	count := func() backends.PartitionCount {
		t.Helper()
		c, err := b.s.PartitionCounts(b.ctx, "out")
		require.NoError(t, err)
		return c
	}
	first := b.claim("mk", "2026-01-01")
	b.complete(first)
	c := count()
	require.Equal(t, []any{18, "2026-01-02"}, []any{c.Missing, c.OldestMissing})
	require.Equal(t, c, count())
	second := b.claim("mk", "2026-01-02")
	c = count()
	require.Equal(t, []any{17, "2026-01-03"}, []any{c.Missing, c.OldestMissing}, "while RUNNING")
	b.release(second)
	c = count()
	require.Equal(t, []any{18, "2026-01-02"}, []any{c.Missing, c.OldestMissing}, "released: missing again")
	for _, id := range []string{"2026-01-02", "2026-01-03"} {
		b.complete(b.claim("mk", id))
	}
	c = count()
	require.Equal(t, []any{16, "2026-01-04"}, []any{c.Missing, c.OldestMissing})
}

// testPartitionCountsKeptBisect: the oldest missing chunk of histories
// longer than one window of rows (where stores that count rows find it by
// bisection, engine bisectMissing), agrees with the partitions listing:
// a gap just after a skipped hour, gaps in the middle and near the end
// filled one by one, and a produced dataset whose only missing chunk is
// claimed (RUNNING: not missing), released (missing again) and
// completed.
func (s *suite) testPartitionCountsKeptBisect(t *testing.T) {
	b := s.setup(t)
	def := partition.Def{Kind: partition.Hourly, Start: "2025-01-01T00", Timezone: "Europe/Berlin"}
	b.definedDataset("hours", def)
	b.clock.Advance(time.Date(2026, 1, 10, 0, 30, 0, 0, time.UTC).Sub(b.clock.Now()))
	check := func(ds, what string) {
		t.Helper()
		b.missingAsListed(ds, what)
	}
	gaps := []string{"2025-03-30T03", "2025-07-14T11", "2025-12-20T05"} // 2025-03-30T02 is skipped in Berlin
	from := "2025-01-01T00"
	for _, g := range gaps {
		prev, _ := def.Prev(g)
		_, err := b.s.PublishRange(b.ctx, "hours", from, prev)
		require.NoError(t, err)
		from, _ = def.Next(g)
	}
	_, err := b.s.PublishRange(b.ctx, "hours", from, "2026-01-10T00")
	require.NoError(t, err)
	check("hours", "three gaps, the first after a skipped hour")
	for _, g := range gaps {
		b.publish("hours", g)
		check("hours", g+" filled")
	}

	// A chunk held early and late, and one missing in the middle: the
	// oldest late one is the held one, before the missing one (the
	// dataset made after the store's holds mark, in the clock's future,
	// so that it is counted from the kept counts).
	b.clock.Advance(time.Date(2040, 5, 1, 0, 30, 0, 0, time.UTC).Sub(b.clock.Now()))
	lateDef := partition.Def{Kind: partition.Hourly, Start: "2039-12-01T00", Deadline: ptr(6 * time.Hour)}
	b.definedDataset("late", lateDef)
	_, err = b.s.PublishRange(b.ctx, "late", "2039-12-01T06", "2040-03-09T23")
	require.NoError(t, err)
	_, err = b.s.PublishRange(b.ctx, "late", "2040-03-10T01", "2040-04-30T23")
	require.NoError(t, err)
	_, err = b.s.PublishRange(b.ctx, "late", "2039-12-01T00", "2039-12-01T04")
	require.NoError(t, err)
	_, err = b.s.Hold(b.ctx, "late", "2039-12-01T05", "bad feed")
	require.NoError(t, err)
	c0, err := b.s.PartitionCounts(b.ctx, "late")
	require.NoError(t, err)
	require.Equal(t, []any{1, 2, "2040-03-10T00", "2039-12-01T05"}, []any{c0.Missing, c0.Late, c0.OldestMissing, c0.OldestLate})
	check("late", "a held chunk early, a missing one in the middle")

	b.definedDataset("days", partition.Def{Kind: partition.Daily, Start: "2020-01-01", End: "2025-12-31"})
	b.job("mk", "days")
	_, err = b.s.HoldRange(b.ctx, "days", "2020-01-01", "2024-02-28", "seeded")
	require.NoError(t, err)
	_, err = b.s.HoldRange(b.ctx, "days", "2024-03-01", "2025-12-31", "seeded")
	require.NoError(t, err)
	check("days", "held all but one day")
	c := b.claim("mk", "2024-02-29")
	check("days", "its only missing day RUNNING")
	b.release(c)
	check("days", "released: missing again")
	b.complete(b.claim("mk", "2024-02-29"))
	check("days", "completed")
}

// testPartitionCountsKeptInteger: the missing counts and oldest missing
// dataid of INTEGER datasets, with and without an end, counted from the
// kept counts ("kept", and the highest dataid found by counts where the
// store counts rows) agree with the partitions listing and with datasets
// of the same rows counted by reading them ("read": their definition
// expected 0 before), as gaps far apart are filled.
func (s *suite) testPartitionCountsKeptInteger(t *testing.T) {
	b := s.setup(t)
	for _, end := range []string{"", "5000"} {
		def := partition.Def{Kind: partition.Integer, Start: "1", End: end}
		earlier := def
		earlier.Start = "0"
		b.definedDataset("kept"+end, def)
		b.definedDataset("read"+end, earlier)
		b.definedDataset("read"+end, def)
	}
	publish := func(from, to string) {
		t.Helper()
		for _, ds := range []string{"kept", "read", "kept5000", "read5000"} {
			_, err := b.s.PublishRange(b.ctx, ds, from, to)
			require.NoError(t, err, "%s %s..%s", ds, from, to)
		}
	}
	check := func(what string, wantMissing int) {
		t.Helper()
		for _, ds := range []string{"kept", "read", "kept5000", "read5000"} {
			c := b.missingAsListed(ds, what)
			if ds == "kept" {
				require.Equal(t, wantMissing, c.Missing, what)
			}
		}
	}
	check("no rows", 0)
	publish("1", "699")
	publish("701", "1500")
	publish("3000", "3100")
	check("a gap at 700, and 1501 to 2999", 1+1499)
	publish("700", "700")
	check("the first gap filled", 1499)
	publish("1501", "2998")
	check("one left before the highest", 1)
	publish("2999", "2999")
	check("none", 0)
	publish("4096", "4096")
	check("one far ahead", 995)

	// Spans a count does not answer (more than a GraphQL Int): the rows
	// are read, over the last MaxPartitionCount expected dataids.
	b.definedDataset("huge", partition.Def{Kind: partition.Integer, End: "18446744073709551615"})
	b.definedDataset("far", partition.Def{Kind: partition.Integer})
	b.publish("far", "18446744073709551615")
	for _, ds := range []string{"huge", "far"} {
		c, err := b.s.PartitionCounts(b.ctx, ds)
		require.NoError(t, err, ds)
		require.Equal(t, []any{backends.MaxPartitionCount, true}, []any{c.Missing, c.Truncated}, ds)
	}
}

// missingAsListed checks that the missing count and the oldest missing
// dataid of dataset agree with its partitions listing, and that its
// history was counted whole; it returns the count.
func (b *bundle) missingAsListed(dataset, what string) backends.PartitionCount {
	b.t.Helper()
	missing, oldest := 0, ""
	for _, p := range b.partitions(backends.PartitionFilter{Dataset: dataset, First: backends.MaxPageSize}) {
		if p.Status == backends.StatusNone {
			if missing++; oldest == "" {
				oldest = p.DataID
			}
		}
	}
	c, err := b.s.PartitionCounts(b.ctx, dataset)
	require.NoError(b.t, err, dataset)
	require.Equal(b.t, []any{missing, oldest, false}, []any{c.Missing, c.OldestMissing, c.Truncated}, "%s: %s", dataset, what)
	return c
}
