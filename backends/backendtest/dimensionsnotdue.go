package backendtest

import (
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// What is not due is neither claimable through findNext by mistake nor
// counted missing: a roll-up into a dataset with dimensions before its
// input's start stays not due (nothing offers it); a one-axis total over
// a DYNAMIC dimension is due from the first window that reads a value,
// through its lookback, after its input's start, and not at all when it
// ends before.
var notDueTests = []testCase{
	{"DimensionsRollUpIntoDimensionsBeforeStart", (*suite).testDimensionsRollUpIntoDimensionsBeforeStart},
	{"DimensionsTotalNotDue", (*suite).testDimensionsTotalNotDue},
}

func (s *suite) testDimensionsRollUpIntoDimensionsBeforeStart(t *testing.T) {
	b := s.setup(t)
	statics := func(name string, values ...string) partition.Dimension {
		return dimension(name, partition.Def{Kind: partition.Static, Values: values})
	}
	b.definedDataset("sales3", dimensionsDef(0, nil, dimension("date", partition.Def{Kind: partition.Daily, Start: "2025-12-30"}),
		statics("region", "eu", "us"), statics("channel", "shop", "web")))
	b.definedDataset("byregion", dimensionsDef(0, nil, dimension("date", partition.Def{Kind: partition.Daily, Start: "2025-12-28"}),
		statics("region", "eu", "us")))
	b.job("rollch", "byregion", "sales3")
	bs, err := b.s.Blockers(b.ctx, "rollch", "2025-12-28|eu")
	require.NoError(t, err)
	blockerUntil(t, bs, backends.BlockerNotDue, "byregion", "2025-12-28|eu", time.Time{})
	require.Empty(t, b.drainReads("rollch"))
	b.publish("sales3", "2025-12-30|eu|shop", "2025-12-30|eu|web")
	require.Equal(t, []string{"2025-12-30|eu <- [2025-12-30|eu|web 2025-12-30|eu|shop]"}, b.drainReads("rollch"))
}

func (s *suite) testDimensionsTotalNotDue(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("orders", dateByCustomer("2025-12-25", nil))
	missing := func(dataset string) []any {
		t.Helper()
		c, err := b.s.PartitionCounts(b.ctx, dataset)
		require.NoError(t, err)
		require.Equal(t, b.partitionIDs(backends.PartitionFilter{Dataset: dataset, Status: ptr(backends.StatusNone)}) != nil, c.Missing > 0)
		return []any{c.Missing, c.OldestMissing}
	}
	// The day before's customers: a customer expected from today is first
	// read tomorrow.
	b.definedDataset("prevtot", partition.Def{Kind: partition.Daily, Start: "2025-12-25"})
	b.upsertJob(backends.Job{ID: "prev", Inputs: []string{"orders"}, Output: "prevtot", InputMappings: []backends.InputMapping{
		{Dataset: "orders", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -1, EndOffset: -1, Dimension: "date"}}}})
	// An output that ends before any customer is read: nothing is due.
	b.definedDataset("ended", partition.Def{Kind: partition.Daily, Start: "2025-12-25", End: "2025-12-28"})
	b.job("endedj", "ended", "orders")
	b.addTo("orders", "customer", "", "acme") // expected from 2026-01-01
	b.clock.Advance(49 * time.Hour)           // 2026-01-03 01:00: 01-01 and 01-02 are over
	bs, err := b.s.Blockers(b.ctx, "prev", "2026-01-01")
	require.NoError(t, err)
	blockerUntil(t, bs, backends.BlockerNotDue, "prevtot", "2026-01-01", time.Time{})
	require.Equal(t, []any{1, "2026-01-02"}, missing("prevtot"))
	require.Equal(t, []any{0, ""}, missing("ended"))

	// A backfill before the input's start is read from the start on:
	// moving the start later moves the first due total with it.
	b.definedDataset("tot", partition.Def{Kind: partition.Daily, Start: "2025-12-25"})
	b.job("totj", "tot", "orders")
	b.addTo("orders", "customer", "2025-12-25", "bolt")
	require.Equal(t, []any{9, "2025-12-25"}, missing("tot"))
	b.definedDataset("orders", dateByCustomer("2025-12-30", nil))
	bs, err = b.s.Blockers(b.ctx, "totj", "2025-12-26")
	require.NoError(t, err)
	blockerUntil(t, bs, backends.BlockerNotDue, "tot", "2025-12-26", time.Time{})
	require.Equal(t, []any{4, "2025-12-30"}, missing("tot"))
}
