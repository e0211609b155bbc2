package backendtest

import (
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// Lost candidates of jobs with mappings: outputs whose every mapped input
// chunk is READY, that claim accepts, and that findNext must offer
// (SPEC §3 findNext, §9).

var mappingLossTests = []testCase{
	{"MappingLatestOnlyNewDay", (*suite).testMappingLatestOnlyNewDay},
	{"MappingLatestUndefinedOutput", (*suite).testMappingLatestUndefinedOutput},
}

// testMappingLatestOnlyNewDay: a job whose only input is a LATEST snapshot
// gets a candidate for every output whose window has started when the
// snapshot arrives; an output whose window starts later must be offered
// too once it is due, as it is claimable.
func (s *suite) testMappingLatestOnlyNewDay(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("dim", partition.Def{Kind: partition.Daily, Start: "2025-12-25"})
	b.definedDataset("snap", partition.Def{Kind: partition.Daily, Start: "2025-12-25"})
	b.upsertJob(backends.Job{ID: "snapshot", Output: "snap", Inputs: []string{"dim"},
		InputMappings: []backends.InputMapping{mapping("dim", partition.Latest, 0, 0)}})
	b.publish("dim", "2025-12-25")
	require.Equal(t, dayRange("2025-12-25", "2026-01-01"), b.drain("snapshot"))
	b.clock.Advance(24 * time.Hour) // 2026-01-02 starts
	// claim accepts it: every mapped input chunk is READY...
	st, err := b.s.Blockers(b.ctx, "snapshot", "2026-01-02")
	require.NoError(t, err)
	require.Empty(t, st, "2026-01-02 is claimable")
	// ...so findNext must offer it.
	require.Equal(t, []string{"2026-01-02"}, b.drain("snapshot"), "findNext never offers an output whose window started after the snapshot")
}

// testMappingLatestUndefinedOutput: a LATEST mapping from an output without
// a partition definition to an unbounded daily input would have every
// output read the newest READY dataid of the whole input, which nothing
// can list: the upsert refuses it, naming the input, rather than accept a
// job whose every claim and findNext would fail. A bounded input is
// accepted, and its newest READY dataid is read.
func (s *suite) testMappingLatestUndefinedOutput(t *testing.T) {
	b := s.setup(t)
	b.datasets("raw", "out")
	b.definedDataset("dim", dailyDef)
	job := backends.Job{ID: "j", Output: "out", Inputs: []string{"raw", "dim"},
		InputMappings: []backends.InputMapping{mapping("dim", partition.Latest, 0, 0)}}
	_, err := b.s.UpsertJob(b.ctx, job)
	requireCode(t, err, backends.CodeInvalidArgument)
	require.Contains(t, err.Error(), `input "dim"`)
	require.Contains(t, err.Error(), "bounded partition definition")
	_, err = b.s.Job(b.ctx, "j")
	requireCode(t, err, backends.CodeNotFound, "nothing stored")

	bounded := dailyDef
	bounded.End = "2025-12-31"
	b.definedDataset("dim", bounded)
	b.upsertJob(job)
	b.publish("dim", "2025-01-15", "2025-01-20")
	b.publish("raw", "2025-02-01")
	c, err := b.s.FindNext(b.ctx, "j", executor)
	require.NoError(t, err)
	require.NotNil(t, c)
	require.Equal(t, "2025-02-01", c.DataID)
	require.Contains(t, c.Reads, backends.Read{Dataset: "dim", DataID: "2025-01-20"})
}
