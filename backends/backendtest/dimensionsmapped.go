package backendtest

import (
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// Mappings by dimension (SPEC §10 "Mappings across dimensions"): an input
// with one inputMappings entry per mapped dimension. The expected reads
// are written out by hand.

var byDimensionTests = []testCase{
	{"DimensionsLookbackByRegion", (*suite).testDimensionsLookbackByRegion},
	{"DimensionsHoursIntoDaysByRegion", (*suite).testDimensionsHoursIntoDaysByRegion},
	{"DimensionsByDimensionRefused", (*suite).testDimensionsByDimensionRefused},
}

func claimReadIDs(c *backends.Claim) []string {
	var out []string
	for _, r := range c.Reads {
		out = append(out, r.DataID)
	}
	return out
}

// dateRegion is date (DAILY from 2026-01-01 to 2026-01-06) × region (us,
// eu).
func dateRegion() partition.Def {
	return dimensionsDef(0, nil, dimension("date", partition.Def{Kind: partition.Daily, Start: "2026-01-01", End: "2026-01-06"}),
		dimension("region", partition.Def{Kind: partition.Static, Values: []string{"us", "eu"}}))
}

// testDimensionsLookbackByRegion: a 3-day lookback on the date with each
// region read by value: an output waits for its own region's three days
// only, claims read them, a live claim holds them, a resubmit of one day
// of one region reaches the outputs of that region whose window holds it,
// and a job declared after its input backfills what it can.
func (s *suite) testDimensionsLookbackByRegion(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("sales", dateRegion())
	b.definedDataset("rolling", dateRegion())
	b.upsertJob(backends.Job{ID: "roll3", Inputs: []string{"sales"}, Output: "rolling", InputMappings: []backends.InputMapping{
		{Dataset: "sales", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -2, Dimension: "date", OutputDimension: "date"}}}})
	j, err := b.s.Job(b.ctx, "roll3")
	require.NoError(t, err)
	require.Equal(t, "date", j.InputMappings[0].Dimension, "the entry reads back with its dimensions")

	b.publish("sales", "2026-01-01|eu", "2026-01-02|eu", "2026-01-01|us")
	c, d := b.next("roll3")
	require.Equal(t, "2026-01-01|eu", d)
	require.Equal(t, []string{"2026-01-01|eu"}, claimReadIDs(c), "the window starts with the input")
	b.complete(c)
	require.Equal(t, []string{"2026-01-01|us", "2026-01-02|eu"}, b.drain("roll3"), "each output waits for its own region only")
	b.requireBlockers("roll3", "2026-01-03|eu", bk{backends.BlockerInputNotReady, "sales", "", backends.StatusNone})
	b.publish("sales", "2026-01-03|eu")
	c, d = b.next("roll3")
	require.Equal(t, "2026-01-03|eu", d)
	require.Equal(t, []string{"2026-01-01|eu", "2026-01-02|eu", "2026-01-03|eu"}, claimReadIDs(c))
	_, err = b.s.Resubmit(b.ctx, "sales", "2026-01-02|eu", true)
	requireCode(t, err, backends.CodeLocked, "a day read by a live claim")
	b.complete(c)
	_, err = b.s.Resubmit(b.ctx, "sales", "2026-01-01|eu", true)
	require.NoError(t, err)
	for _, id := range []string{"2026-01-01|eu", "2026-01-02|eu", "2026-01-03|eu"} {
		require.Equal(t, backends.StatusResubmit, b.status("rolling", id), "%s read 2026-01-01|eu", id)
	}
	require.Equal(t, backends.StatusReady, b.status("rolling", "2026-01-01|us"), "another region's window does not hold it")
	b.publish("sales", "2026-01-01|eu")
	require.Equal(t, []string{"2026-01-01|eu", "2026-01-02|eu", "2026-01-03|eu"}, b.drain("roll3"))

	// A job declared after its input backfills: rolling2's outputs whose
	// window is READY are claimable at once.
	b.definedDataset("rolling2", dateRegion())
	b.upsertJob(backends.Job{ID: "roll3b", Inputs: []string{"sales"}, Output: "rolling2", InputMappings: []backends.InputMapping{
		{Dataset: "sales", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -2, Dimension: "date", OutputDimension: "date"}}}})
	require.Equal(t, []string{"2026-01-01|eu", "2026-01-01|us", "2026-01-02|eu", "2026-01-03|eu"}, b.drain("roll3b"))
}

// testDimensionsHoursIntoDaysByRegion: hour × region read into date ×
// region: each region's day reads that region's 24 hours, and waits for
// all of them.
func (s *suite) testDimensionsHoursIntoDaysByRegion(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("clicks", dimensionsDef(0, nil, dimension("hour", partition.Def{Kind: partition.Hourly, Start: "2026-01-01T00", End: "2026-01-02T23"}),
		dimension("region", partition.Def{Kind: partition.Static, Values: []string{"us", "eu"}})))
	b.definedDataset("daily", dimensionsDef(0, nil, dimension("date", partition.Def{Kind: partition.Daily, Start: "2026-01-01", End: "2026-01-02"}),
		dimension("region", partition.Def{Kind: partition.Static, Values: []string{"us", "eu"}})))
	b.upsertJob(backends.Job{ID: "days", Inputs: []string{"clicks"}, Output: "daily", InputMappings: []backends.InputMapping{
		{Dataset: "clicks", Mapping: partition.Mapping{Kind: partition.TimeWindow, Dimension: "hour", OutputDimension: "date"}}}})
	var us []string
	for h := range 24 {
		us = append(us, "2026-01-01T"+twoDigits(h)+"|us")
	}
	b.publish("clicks", us[:23]...)
	_, d := b.next("days")
	require.Empty(t, d, "2026-01-01T23|us is not READY")
	b.publish("clicks", us[23])
	c, d := b.next("days")
	require.Equal(t, "2026-01-01|us", d)
	require.Equal(t, us, claimReadIDs(c))
	b.complete(c)
	_, d = b.next("days")
	require.Empty(t, d, "eu has no hour READY")
}

// testDimensionsByDimensionRefused: entries that cannot be are refused,
// naming the entry, and nothing is stored.
func (s *suite) testDimensionsByDimensionRefused(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("sales", dateRegion())
	b.definedDataset("rolling", dateRegion())
	b.definedDataset("daily", partition.Def{Kind: partition.Daily, Start: "2026-01-01"})
	for _, c := range []struct {
		entries []partition.Mapping
		want    string
	}{
		{[]partition.Mapping{{Kind: partition.TimeWindow, Dimension: "day", OutputDimension: "date"}}, `no dimension "day"`},
		{[]partition.Mapping{{Kind: partition.TimeWindow, OutputDimension: "date"}}, "name the input dimension"},
		{[]partition.Mapping{{Kind: partition.TimeWindow, Dimension: "date", OutputDimension: "date"}, {Kind: partition.All, Dimension: "date"}}, "two entries map input dimension date"},
		{[]partition.Mapping{{Kind: partition.Latest, Dimension: "date", OutputDimension: "date"}}, "LATEST by dimension is not built yet"},
		{[]partition.Mapping{{Kind: partition.TimeWindow, Dimension: "region", OutputDimension: "region"}}, "TIME_WINDOW needs time partitions"},
	} {
		var ms []backends.InputMapping
		for _, e := range c.entries {
			ms = append(ms, backends.InputMapping{Dataset: "sales", Mapping: e})
		}
		_, err := b.s.UpsertJob(b.ctx, backends.Job{ID: "bad", Inputs: []string{"sales"}, Output: "rolling", InputMappings: ms})
		requireCode(t, err, backends.CodeInvalidArgument, "%v", c.entries)
		require.Contains(t, err.Error(), c.want)
	}
	_, err := b.s.UpsertJob(b.ctx, backends.Job{ID: "bad", Inputs: []string{"sales"}, Output: "rolling", InputMappings: []backends.InputMapping{
		{Dataset: "sales", Mapping: partition.Mapping{Kind: partition.TimeWindow}}, {Dataset: "sales", Mapping: partition.Mapping{Kind: partition.All}}}})
	requireCode(t, err, backends.CodeInvalidArgument, "two entries without dimensions")
	require.Contains(t, err.Error(), "names input \"sales\" twice")
	_, err = b.s.Job(b.ctx, "bad")
	requireCode(t, err, backends.CodeNotFound, "nothing stored")
	// A definition change that breaks an entry is refused too.
	b.upsertJob(backends.Job{ID: "roll", Inputs: []string{"sales"}, Output: "rolling", InputMappings: []backends.InputMapping{
		{Dataset: "sales", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -1, Dimension: "date", OutputDimension: "date"}}}})
	_, err = b.s.UpsertDataset(b.ctx, backends.Dataset{ID: "sales", Partitions: ptr(dimensionsDef(0, nil,
		dimension("day", partition.Def{Kind: partition.Daily, Start: "2026-01-01"}), dimension("region", partition.Def{Kind: partition.Static, Values: []string{"us"}})))})
	requireCode(t, err, backends.CodeInvalidArgument, "the entry's dimension renamed")
	require.Contains(t, err.Error(), "roll")
}
