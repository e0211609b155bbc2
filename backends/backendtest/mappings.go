package backendtest

import (
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// Tests of partition mappings (SPEC §9): how a job's output dataids map to
// the dataids of the inputs it reads.

var mappingTests = []testCase{
	{"MappingsStored", (*suite).testMappingsStored},
	{"MappingsRefused", (*suite).testMappingsRefused},
	{"MappingsDefinitionChange", (*suite).testMappingsDefinitionChange},
}

var (
	dailyDef  = partition.Def{Kind: partition.Daily, Start: "2025-01-01"}
	weeklyDef = partition.Def{Kind: partition.Weekly, Start: "2025-W01"}
	hourlyDef = partition.Def{Kind: partition.Hourly, Start: "2025-01-01T00"}
	regions   = partition.Def{Kind: partition.Static, Values: []string{"eu", "us"}}
)

func mapping(dataset string, kind partition.MappingKind, start, end int) backends.InputMapping {
	return backends.InputMapping{Dataset: dataset, Mapping: partition.Mapping{Kind: kind, StartOffset: start, EndOffset: end}}
}

// mappedDatasets defines the datasets of the mapping tests: daily sources
// raw and dim, a static source region, and daily roll7, weekly week and
// hourly hour outputs.
func (b *bundle) mappedDatasets() {
	b.t.Helper()
	b.definedDataset("raw", dailyDef)
	b.definedDataset("dim", dailyDef)
	b.definedDataset("region", regions)
	b.definedDataset("roll7", dailyDef)
	b.definedDataset("week", weeklyDef)
	b.definedDataset("hour", hourlyDef)
}

func (s *suite) testMappingsStored(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	// Given in another order than the inputs, with an empty kind: stored in
	// input order, the kind spelled out.
	stored := b.upsertJob(backends.Job{ID: "roll", Output: "roll7", Inputs: []string{"raw", "dim", "region"},
		InputMappings: []backends.InputMapping{
			mapping("region", partition.All, 0, 0),
			mapping("dim", "", 0, 0),
			mapping("raw", partition.TimeWindow, -6, 0),
		}})
	want := []backends.InputMapping{
		mapping("raw", partition.TimeWindow, -6, 0),
		mapping("dim", partition.Identity, 0, 0),
		mapping("region", partition.All, 0, 0),
	}
	require.Equal(t, want, stored.InputMappings)
	got, err := b.s.Job(b.ctx, "roll")
	require.NoError(t, err)
	require.Equal(t, want, got.InputMappings)
	require.Equal(t, partition.Mapping{Kind: partition.TimeWindow, StartOffset: -6}, got.Mapping("raw"))
	require.Equal(t, partition.Mapping{Kind: partition.Identity}, got.Mapping("nope"))
	require.True(t, got.Mapped())

	// A job without mappings stores none, and is not mapped.
	plain := b.job("plain", "week")
	require.Empty(t, plain.InputMappings)
	require.NotNil(t, plain.InputMappings)
	require.False(t, plain.Mapped())

	// Replacing the mappings replaces them; none removes them.
	b.upsertJob(backends.Job{ID: "roll", Output: "roll7", Inputs: []string{"raw"}})
	got, err = b.s.Job(b.ctx, "roll")
	require.NoError(t, err)
	require.Empty(t, got.InputMappings)
	jobs, err := b.s.Jobs(b.ctx)
	require.NoError(t, err)
	for _, j := range jobs {
		require.NotNil(t, j.InputMappings, "job %s", j.ID)
	}
}

func (s *suite) testMappingsRefused(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.datasets("plain")
	for _, tc := range []struct {
		name   string
		job    backends.Job
		detail string
	}{
		{"a dataset that is not an input", backends.Job{ID: "j", Output: "roll7", Inputs: []string{"raw"},
			InputMappings: []backends.InputMapping{mapping("dim", partition.TimeWindow, 0, 0)}}, "not one of its inputs"},
		{"an input twice", backends.Job{ID: "j", Output: "roll7", Inputs: []string{"raw"},
			InputMappings: []backends.InputMapping{mapping("raw", partition.TimeWindow, 0, 0), mapping("raw", partition.Identity, 0, 0)}}, "twice"},
		{"an unknown kind", backends.Job{ID: "j", Output: "roll7", Inputs: []string{"raw"},
			InputMappings: []backends.InputMapping{mapping("raw", "SIDEWAYS", 0, 0)}}, "unknown mapping kind"},
		{"TIME_WINDOW without a time definition on the input", backends.Job{ID: "j", Output: "roll7", Inputs: []string{"plain"},
			InputMappings: []backends.InputMapping{mapping("plain", partition.TimeWindow, -6, 0)}}, "TIME_WINDOW needs time partitions"},
		{"TIME_WINDOW without a time definition on the output", backends.Job{ID: "j", Output: "plain", Inputs: []string{"raw"},
			InputMappings: []backends.InputMapping{mapping("raw", partition.TimeWindow, -6, 0)}}, "TIME_WINDOW needs time partitions"},
		{"startOffset after endOffset", backends.Job{ID: "j", Output: "roll7", Inputs: []string{"raw"},
			InputMappings: []backends.InputMapping{mapping("raw", partition.TimeWindow, 1, 0)}}, "startOffset 1 is after endOffset 0"},
		{"offsets on LATEST", backends.Job{ID: "j", Output: "roll7", Inputs: []string{"raw"},
			InputMappings: []backends.InputMapping{mapping("raw", partition.Latest, -1, 0)}}, "TIME_WINDOW mappings only"},
		{"ALL of an unbounded input", backends.Job{ID: "j", Output: "roll7", Inputs: []string{"raw"},
			InputMappings: []backends.InputMapping{mapping("raw", partition.All, 0, 0)}}, "bounded partition definition"},
		{"IDENTITY between kinds", backends.Job{ID: "j", Output: "week", Inputs: []string{"raw"},
			InputMappings: []backends.InputMapping{mapping("raw", partition.Identity, 0, 0)}}, "use TIME_WINDOW"},
	} {
		_, err := b.s.UpsertJob(b.ctx, tc.job)
		requireCode(t, err, backends.CodeInvalidArgument, tc.name)
		require.Contains(t, err.Error(), tc.detail, tc.name)
		_, err = b.s.ValidateJob(b.ctx, tc.job)
		requireCode(t, err, backends.CodeInvalidArgument, tc.name)
		_, err = b.s.Job(b.ctx, "j")
		requireCode(t, err, backends.CodeNotFound, "%s: nothing stored", tc.name)
	}
	// What worked before mappings still works: a job reading a weekly
	// input into a daily output one to one, with no mapping named.
	b.job("j", "roll7", "week")
}

func (s *suite) testMappingsDefinitionChange(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.upsertJob(backends.Job{ID: "roll", Output: "roll7", Inputs: []string{"raw"},
		InputMappings: []backends.InputMapping{mapping("raw", partition.TimeWindow, -6, 0)}})
	// Taking the time definition off either side would leave the lookback
	// meaningless: refused, and the definitions stay.
	for _, id := range []string{"raw", "roll7"} {
		_, err := b.s.UpsertDataset(b.ctx, backends.Dataset{ID: id, Location: "dt={dataid}/"})
		requireCode(t, err, backends.CodeInvalidArgument, id)
		require.Contains(t, err.Error(), `job "roll"`)
		d, err := b.s.Dataset(b.ctx, id)
		require.NoError(t, err)
		require.NotNil(t, d.Partitions, id)
	}
	// Another time definition is fine.
	b.definedDataset("raw", partition.Def{Kind: partition.Daily, Start: "2024-01-01", Timezone: "Europe/Berlin"})
}
