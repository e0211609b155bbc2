package backendtest

import (
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// The mapping tests of findNext (lookbacks, roll-ups, fan-outs, LATEST
// and ALL reads, and the sweeps that find their outputs), of the events
// of mapped reads, and of the backfill of a new mapping.

// testMappingFindNextLookback: findNext finds the outputs whose window is
// complete, lowest first, and a late input makes exactly its seven outputs
// claimable when it arrives.
func (s *suite) testMappingFindNextLookback(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.lookbackJob()
	all := dayRange("2025-01-01", "2025-01-20")
	for _, i := range []int{5, 0, 19, 12, 3, 1, 2, 4, 6, 7, 9, 10, 11, 13, 14, 15, 16, 17, 18} { // every day but 2025-01-09
		b.publish("raw", all[i])
	}
	// Each output claimable is queued once: a day is in seven windows, but
	// only the windows it completes queue their output.
	n, err := b.s.QueueLength(b.ctx, "roll")
	require.NoError(t, err)
	require.Equal(t, 8+5, n)
	require.Equal(t, append(dayRange("2025-01-01", "2025-01-08"), dayRange("2025-01-16", "2025-01-20")...), b.drain("roll"))
	b.publish("raw", "2025-01-09")
	require.Equal(t, dayRange("2025-01-09", "2025-01-15"), b.drain("roll"))
	require.Empty(t, b.drain("roll"))
	// A failed output comes back; the resubmitted one first.
	_, err = b.s.Resubmit(b.ctx, "roll7", "2025-01-18", false)
	require.NoError(t, err)
	require.Equal(t, []string{"2025-01-18"}, b.drain("roll"))
}

// testMappingPublishRange: publishRange over a dataset read through a
// window queues each output once its window is complete.
func (s *suite) testMappingPublishRange(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.lookbackJob()
	b.upsertJob(backends.Job{ID: "weekly", Output: "week", Inputs: []string{"raw"},
		InputMappings: []backends.InputMapping{mapping("raw", partition.TimeWindow, 0, 0)}})
	res, err := b.s.PublishRange(b.ctx, "raw", "2025-01-01", "2025-01-12")
	require.NoError(t, err)
	require.Equal(t, 12, res.Changed)
	require.Equal(t, dayRange("2025-01-01", "2025-01-12"), b.drain("roll"))
	require.Equal(t, []string{"2025-W01", "2025-W02"}, b.drain("weekly"))
}

// testMappingFindNextRollUpAndFanOut: the last day of a week makes the week
// a candidate; a day makes each of its hours one.
func (s *suite) testMappingFindNextRollUpAndFanOut(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.upsertJob(backends.Job{ID: "weekly", Output: "week", Inputs: []string{"raw"},
		InputMappings: []backends.InputMapping{mapping("raw", partition.TimeWindow, 0, 0)}})
	b.upsertJob(backends.Job{ID: "hourly", Output: "hour", Inputs: []string{"raw"},
		InputMappings: []backends.InputMapping{mapping("raw", partition.TimeWindow, 0, 0)}})
	b.publish("raw", dayRange("2026-12-21", "2027-01-02")...)
	require.Equal(t, []string{"2026-W52"}, b.drain("weekly"))
	b.publish("raw", "2027-01-03")
	require.Equal(t, []string{"2026-W53"}, b.drain("weekly"))
	hours := b.drain("hourly")
	require.Len(t, hours, 14*24)
	require.Equal(t, "2026-12-21T00", hours[0])
	require.Equal(t, "2027-01-03T23", hours[len(hours)-1])
}

// testMappingFindNextLatestAndAll: a snapshot or a member of an ALL input
// arriving makes the outputs waiting for it candidates.
func (s *suite) testMappingFindNextLatestAndAll(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.upsertJob(backends.Job{ID: "enrich", Output: "roll7", Inputs: []string{"raw", "dim", "region"},
		InputMappings: []backends.InputMapping{mapping("dim", partition.Latest, 0, 0), mapping("region", partition.All, 0, 0)}})
	b.publish("raw", dayRange("2025-02-01", "2025-02-03")...)
	b.publish("region", "eu", "us")
	require.Empty(t, b.drain("enrich"), "no snapshot yet")
	b.publish("dim", "2025-01-20")
	require.Equal(t, dayRange("2025-02-01", "2025-02-03"), b.drain("enrich"))
	for _, d := range dayRange("2025-02-01", "2025-02-03") {
		require.Equal(t, backends.StatusDone, b.readStatus("dim", "2025-01-20", "enrich", d))
	}
	// A region resubmitted and published again: every output waiting on it
	// is a candidate once more.
	b.publish("raw", "2025-02-04")
	_, err := b.s.Resubmit(b.ctx, "region", "us", false)
	require.NoError(t, err)
	require.Empty(t, b.drain("enrich"))
	b.publish("region", "us")
	require.Equal(t, []string{"2025-02-04"}, b.drain("enrich"))
}

// testMappingLatestHistory: a first snapshot arriving after years of
// input makes every output waiting for it claimable, lowest first, however
// many: the reverse of LATEST has no bound, and one candidate (a sweep)
// walks it, rather than one per output written with the snapshot. Late
// snapshots behind outputs already claimed walk past them and leave
// nothing queued.
func (s *suite) testMappingLatestHistory(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.upsertJob(backends.Job{ID: "enrich", Output: "roll7", Inputs: []string{"raw", "dim"},
		InputMappings: []backends.InputMapping{mapping("dim", partition.Latest, 0, 0)}})
	days := dayRange("2025-01-01", "2025-07-19") // 200 days: two pages of a sweep's step
	_, err := b.s.PublishRange(b.ctx, "raw", days[0], days[len(days)-1])
	require.NoError(t, err)
	_, d := b.next("enrich")
	require.Empty(t, d, "no snapshot yet")
	b.publish("dim", "2025-01-01")
	n, err := b.s.QueueLength(b.ctx, "enrich")
	require.NoError(t, err)
	require.Equal(t, 2, n, "two sweeps (one for RESUBMIT outputs), not one candidate per output")
	var got []string
	for range len(days) + 1 {
		c, d := b.next("enrich")
		if c == nil {
			break
		}
		got = append(got, d)
	}
	require.Equal(t, days, got)

	// Every output is RUNNING: late snapshots start sweeps (the lowest of
	// a transaction covers the others), which claim nothing and end.
	_, err = b.s.PublishRange(b.ctx, "dim", "2025-02-01", "2025-02-10")
	require.NoError(t, err)
	n, err = b.s.QueueLength(b.ctx, "enrich")
	require.NoError(t, err)
	require.Positive(t, n)
	require.LessOrEqual(t, n, 20, "two sweeps per transaction at most, not a candidate per output")
	_, d = b.next("enrich")
	require.Empty(t, d)
	n, err = b.s.QueueLength(b.ctx, "enrich")
	require.NoError(t, err)
	require.Zero(t, n)
}

// testMappingSweepResubmitFirst: outputs that wait for an ALL input's
// chunk are offered, once it is READY again, RESUBMIT ones first, then the
// others, lowest first (SPEC §3 findNext), though nothing queued them in
// that order: the chunk starts a sweep for each.
func (s *suite) testMappingSweepResubmitFirst(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.upsertJob(backends.Job{ID: "enrich", Output: "roll7", Inputs: []string{"raw", "region"},
		InputMappings: []backends.InputMapping{mapping("region", partition.All, 0, 0)}})
	b.publish("raw", "2025-01-02", "2025-01-03")
	b.publish("region", "eu", "us")
	require.Equal(t, []string{"2025-01-02", "2025-01-03"}, b.drain("enrich"))
	_, err := b.s.Resubmit(b.ctx, "region", "us", false)
	require.NoError(t, err)
	_, err = b.s.Resubmit(b.ctx, "roll7", "2025-01-03", false)
	require.NoError(t, err)
	b.publish("raw", "2025-01-01")
	require.Empty(t, b.drain("enrich"), "both wait for region/us")
	b.publish("region", "us")
	require.Equal(t, []string{"2025-01-03", "2025-01-01"}, b.drain("enrich"))
}

// testMappingEventsReadFor: the events of a mapped read's INPUT rows name
// the output dataid each was read for (the rows' readFor), so that the log
// tells the seven reads of one day by a lookback apart.
func (s *suite) testMappingEventsReadFor(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.lookbackJob()
	b.publish("raw", dayRange("2025-01-02", "2025-01-08")...)
	c := b.claim("roll", "2025-01-08")
	b.complete(c)
	got := map[string][]string{} // raw dataid -> readFor of its INPUT events
	for _, e := range b.events(backends.EventFilter{Dataset: "raw", Job: "roll"}) {
		require.Equal(t, backends.RoleInput, e.Role)
		if e.DataID != "2025-01-02" && e.DataID != "2025-01-08" {
			continue
		}
		got[e.DataID] = append(got[e.DataID], e.ReadFor)
	}
	// The claim of 2025-01-08 read 2025-01-02..08: 2025-01-02 for
	// 2025-01-08 (RUNNING, then DONE), 2025-01-08 for itself (no readFor).
	for _, rf := range got["2025-01-08"] {
		require.Empty(t, rf)
	}
	require.NotEmpty(t, got["2025-01-08"])
	require.Contains(t, got["2025-01-02"], "2025-01-08")
	for _, rf := range got["2025-01-02"] {
		require.NotEmpty(t, rf, "a read of 2025-01-02 for another day names that day")
	}
}

// testMappingBackfill: a job with mappings defined over data already READY
// claims what it can at once.
func (s *suite) testMappingBackfill(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.publish("raw", dayRange("2025-01-01", "2025-01-10")...)
	b.lookbackJob()
	require.Equal(t, dayRange("2025-01-01", "2025-01-10"), b.drain("roll"))
	b.upsertJob(backends.Job{ID: "weekly", Output: "week", Inputs: []string{"raw"},
		InputMappings: []backends.InputMapping{mapping("raw", partition.TimeWindow, 0, 0)}})
	require.Equal(t, []string{"2025-W01"}, b.drain("weekly"), "2025-W01 runs from 2024-12-30, before raw's start: it reads 2025-01-01..05")
}
