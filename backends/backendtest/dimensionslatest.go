package backendtest

import (
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// LATEST into a dataset with dimensions (SPEC §10, one side
// one-dimensional): a one-dimensional snapshot read LATEST pairs with the
// output's time dimension, and every value of the output's other
// dimensions reads the same snapshot: each (date, region) reads the newest
// READY snapshot not after its date, as a one-dimensional output would.
var dimensionsLatestTests = []testCase{
	{"DimensionsLatestSnapshot", (*suite).testDimensionsLatestSnapshot},
	{"DimensionsLatestRefused", (*suite).testDimensionsLatestRefused},
}

// ratesByDate: each region's day of sales, priced with the newest rates.
func ratesByDate(b *bundle, entry partition.Mapping) {
	b.definedDataset("rates", partition.Def{Kind: partition.Daily, Start: "2025-12-28"})
	b.definedDataset("sales", dateRegion())
	b.definedDataset("priced", dateRegion())
	b.upsertJob(backends.Job{ID: "price", Inputs: []string{"sales", "rates"}, Output: "priced",
		InputMappings: []backends.InputMapping{{Dataset: "rates", Mapping: entry}}})
}

func (s *suite) testDimensionsLatestSnapshot(t *testing.T) {
	b := s.setup(t)
	ratesByDate(b, partition.Mapping{Kind: partition.Latest, OutputDimension: "date"})
	b.publish("sales", "2026-01-01|us", "2026-01-01|eu")
	// No snapshot READY: blocked on the newest candidate, the output's day.
	_, err := b.s.Claim(b.ctx, "price", "2026-01-01|eu", executor)
	lockedUntil(t, err, backends.BlockerInputNotReady, "rates", "2026-01-01", time.Time{})
	require.Empty(t, b.drain("price"))

	// A snapshot from before: a region's day reads it.
	b.publish("rates", "2025-12-30")
	c, d := b.next("price")
	require.Equal(t, "2026-01-01|eu", d)
	require.Equal(t, []string{"2026-01-01|eu", "2025-12-30"}, claimReadIDs(c))
	b.complete(c)
	// A newer one: the claims after it read it.
	b.publish("rates", "2026-01-01")
	c, d = b.next("price")
	require.Equal(t, "2026-01-01|us", d)
	require.Equal(t, []string{"2026-01-01|us", "2026-01-01"}, claimReadIDs(c))
	b.complete(c)
	require.Empty(t, b.drain("price"))
	// The reads are rows and locks like any mapped read's.
	detail, err := b.s.Chunk(b.ctx, "rates", "2026-01-01")
	require.NoError(t, err)
	var readFor []string
	for _, r := range detail.Rows {
		if r.Role == backends.RoleInput {
			readFor = append(readFor, r.ReadFor)
		}
	}
	require.Equal(t, []string{"2026-01-01|us"}, readFor)

	// A resubmit of a snapshot with cascade reaches what read it, and
	// only that; its claim reads the newest READY one now.
	res, err := b.s.Resubmit(b.ctx, "rates", "2025-12-30", true)
	require.NoError(t, err)
	var got []string
	for _, r := range res {
		got = append(got, r.Dataset+"/"+r.DataID)
	}
	require.ElementsMatch(t, []string{"rates/2025-12-30", "priced/2026-01-01|eu"}, got)
	c, d = b.next("price")
	require.Equal(t, "2026-01-01|eu", d)
	require.Equal(t, []string{"2026-01-01|eu", "2026-01-01"}, claimReadIDs(c))
	b.complete(c)

	// The next days read the newest snapshot before them.
	b.clock.Advance(24 * time.Hour)
	b.publish("sales", "2026-01-02|eu", "2026-01-02|us")
	require.Equal(t, []string{"2026-01-02|eu", "2026-01-02|us"}, b.drain("price"))
	// With no snapshot READY, a day waits, and the snapshot arriving
	// queues it (a sweep over the outputs from its day).
	b.clock.Advance(2 * 24 * time.Hour)
	_, err = b.s.Resubmit(b.ctx, "rates", "2026-01-01", false)
	require.NoError(t, err)
	b.publish("sales", "2026-01-04|us")
	require.Empty(t, b.drain("price"))
	b.publish("rates", "2026-01-03")
	c, d = b.next("price")
	require.Equal(t, "2026-01-04|us", d)
	require.Equal(t, []string{"2026-01-04|us", "2026-01-03"}, claimReadIDs(c))
	b.complete(c)
}

// Without outputDimension the snapshot pairs with the output's time
// dimension too; a LATEST entry naming another output dimension, or read
// from an input with dimensions, is refused.
func (s *suite) testDimensionsLatestRefused(t *testing.T) {
	b := s.setup(t)
	ratesByDate(b, partition.Mapping{Kind: partition.Latest})
	b.publish("rates", "2025-12-31")
	b.publish("sales", "2026-01-01|eu")
	c, d := b.next("price")
	require.Equal(t, "2026-01-01|eu", d)
	require.Equal(t, []string{"2026-01-01|eu", "2025-12-31"}, claimReadIDs(c))
	b.complete(c)
	for _, tc := range []struct {
		entry partition.Mapping
		want  string
	}{
		{partition.Mapping{Kind: partition.Latest, OutputDimension: "region"}, "pairs with the output's time dimension"},
		{partition.Mapping{Kind: partition.Latest, OutputDimension: "hour"}, "no dimension \"hour\""},
	} {
		_, err := b.s.UpsertJob(b.ctx, backends.Job{ID: "price", Inputs: []string{"sales", "rates"}, Output: "priced",
			InputMappings: []backends.InputMapping{{Dataset: "rates", Mapping: tc.entry}}})
		require.Error(t, err, "%+v", tc.entry)
		require.Equal(t, backends.CodeInvalidArgument, backends.CodeOf(err), "%v", err)
		require.Contains(t, err.Error(), tc.want)
	}
	_, err := b.s.UpsertJob(b.ctx, backends.Job{ID: "latest2", Inputs: []string{"sales"}, Output: "priced2",
		InputMappings: []backends.InputMapping{{Dataset: "sales", Mapping: partition.Mapping{Kind: partition.Latest, Dimension: "date", OutputDimension: "date"}}}})
	require.Error(t, err)
}
