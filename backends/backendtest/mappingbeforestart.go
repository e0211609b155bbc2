package backendtest

import (
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// A lookback that ends before its output (the same day a week before,
// the day before) reads nothing at the output's days whose window lies
// before the input's start: they are claimable at once, and no input
// chunk becoming READY queues them, so findNext offers them from the
// job's declaration on (a chain of candidates, one after the other), and
// then the days whose reads become READY, as for any mapping.
var mappingBeforeStartTests = []testCase{
	{"MappingLookbackBeforeStart", (*suite).testMappingLookbackBeforeStart},
	{"MappingWindowBeforeInputStart", (*suite).testMappingWindowBeforeInputStart},
	{"MappingRollUpBeforeInputStart", (*suite).testMappingRollUpBeforeInputStart},
}

func (s *suite) testMappingLookbackBeforeStart(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("xs", partition.Def{Kind: partition.Daily, Start: "2025-12-30"})
	b.definedDataset("lastweek", partition.Def{Kind: partition.Daily, Start: "2025-12-30"})
	b.upsertJob(backends.Job{ID: "lastweekj", Inputs: []string{"xs"}, Output: "lastweek",
		InputMappings: []backends.InputMapping{mapping("xs", partition.TimeWindow, -7, -7)}})
	bs, err := b.s.Blockers(b.ctx, "lastweekj", "2025-12-31")
	require.NoError(t, err)
	require.Empty(t, bs, "the week before lies before xs' start: it reads nothing")

	// One of them claimed by dataid and resubmitted first: RESUBMIT comes
	// first, then the rest in order, days not begun included (claimable
	// as any output whose reads are READY is), none twice.
	c, err := b.s.Claim(b.ctx, "lastweekj", "2026-01-02", executor)
	require.NoError(t, err)
	b.complete(c)
	_, err = b.s.Resubmit(b.ctx, "lastweek", "2026-01-02", false)
	require.NoError(t, err)
	require.Equal(t, []string{"2026-01-02 <- []", "2025-12-30 <- []", "2025-12-31 <- []", "2026-01-01 <- []",
		"2026-01-03 <- []", "2026-01-04 <- []", "2026-01-05 <- []"}, b.drainReads("lastweekj"))
	b.publish("xs", "2025-12-30", "2025-12-31")
	require.Equal(t, []string{"2026-01-06 <- [2025-12-30]", "2026-01-07 <- [2025-12-31]"}, b.drainReads("lastweekj"))

	// Declared again unchanged: nothing is offered twice.
	b.upsertJob(backends.Job{ID: "lastweekj", Inputs: []string{"xs"}, Output: "lastweek",
		InputMappings: []backends.InputMapping{mapping("xs", partition.TimeWindow, -7, -7)}})
	require.Empty(t, b.drainReads("lastweekj"))

	// An output starting before its input, under the day before: its
	// days up to the input's start read nothing, offered when the job is
	// declared, and again for the days a change of the output's
	// definition adds before them.
	b.definedDataset("before", partition.Def{Kind: partition.Daily, Start: "2025-12-29"})
	b.upsertJob(backends.Job{ID: "beforej", Inputs: []string{"xs"}, Output: "before",
		InputMappings: []backends.InputMapping{mapping("xs", partition.TimeWindow, -1, -1)}})
	require.Equal(t, []string{"2025-12-29 <- []", "2025-12-30 <- []", "2025-12-31 <- [2025-12-30]", "2026-01-01 <- [2025-12-31]"},
		b.drainReads("beforej"))
	b.definedDataset("before", partition.Def{Kind: partition.Daily, Start: "2025-12-27"})
	require.Equal(t, []string{"2025-12-27 <- []", "2025-12-28 <- []"}, b.drainReads("beforej"))

	// A lookback that reaches the output's own day reads it: nothing is
	// offered before xs' chunk is READY.
	b.definedDataset("ys", partition.Def{Kind: partition.Daily, Start: "2025-12-30"})
	b.upsertJob(backends.Job{ID: "yj", Inputs: []string{"xs"}, Output: "ys",
		InputMappings: []backends.InputMapping{mapping("xs", partition.TimeWindow, -2, 0)}})
	require.Equal(t, []string{"2025-12-30 <- [2025-12-30]", "2025-12-31 <- [2025-12-30 2025-12-31]"}, b.drainReads("yj"))
}

// A window of the same day whose output starts before its input: the
// days before the input's start read nothing, offered from the job's
// declaration; the input's start moved later leaves more of them reading
// nothing, offered as well.
func (s *suite) testMappingWindowBeforeInputStart(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("in1", partition.Def{Kind: partition.Daily, Start: "2025-12-30"})
	b.definedDataset("out1", partition.Def{Kind: partition.Daily, Start: "2025-12-28"})
	b.upsertJob(backends.Job{ID: "j1", Inputs: []string{"in1"}, Output: "out1",
		InputMappings: []backends.InputMapping{mapping("in1", partition.TimeWindow, 0, 0)}})
	require.Equal(t, []string{"2025-12-28 <- []", "2025-12-29 <- []"}, b.drainReads("j1"))
	b.definedDataset("in1", partition.Def{Kind: partition.Daily, Start: "2026-01-01"})
	require.Equal(t, []string{"2025-12-30 <- []", "2025-12-31 <- []"}, b.drainReads("j1"))
	b.publish("in1", "2026-01-01")
	require.Equal(t, []string{"2026-01-01 <- [2026-01-01]"}, b.drainReads("j1"))
}

// A roll-up across dimensions (date × region into days, by the default
// rules or the same written as an entry) whose output starts before its
// input: the days before read nothing, claimable and offered either way
// (a DYNAMIC dimension read whole would make them not due instead).
func (s *suite) testMappingRollUpBeforeInputStart(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("sales", dimensionsDef(0, nil, dimension("date", partition.Def{Kind: partition.Daily, Start: "2025-12-30"}),
		dimension("region", partition.Def{Kind: partition.Static, Values: []string{"eu", "us"}})))
	b.definedDataset("total", partition.Def{Kind: partition.Daily, Start: "2025-12-28"})
	b.definedDataset("total2", partition.Def{Kind: partition.Daily, Start: "2025-12-28"})
	b.job("roll", "total", "sales")
	b.upsertJob(backends.Job{ID: "roll2", Inputs: []string{"sales"}, Output: "total2", InputMappings: []backends.InputMapping{
		{Dataset: "sales", Mapping: partition.Mapping{Kind: partition.TimeWindow, Dimension: "date"}}}})
	for _, job := range []string{"roll", "roll2"} {
		bs, err := b.s.Blockers(b.ctx, job, "2025-12-28")
		require.NoError(t, err)
		require.Empty(t, bs, job)
		require.Equal(t, []string{"2025-12-28 <- []", "2025-12-29 <- []"}, b.drainReads(job), job)
	}
	b.publish("sales", "2025-12-30|eu", "2025-12-30|us")
	for _, job := range []string{"roll", "roll2"} {
		require.Equal(t, []string{"2025-12-30 <- [2025-12-30|eu 2025-12-30|us]"}, b.drainReads(job), job)
	}
}
