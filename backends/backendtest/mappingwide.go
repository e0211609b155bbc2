package backendtest

import (
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// Wide mappings (issue 23): a TIME_WINDOW whose claims would read more
// input dataids than a claim may (partition.MaxMapped), or one of whose
// input dataids would be read by more outputs than one publish may queue,
// is refused when it is upserted, and a refused upsert stores nothing, on
// every backend.

var mappingWideTests = []testCase{
	{"MappingWideRefusedStoresNothing", (*suite).testMappingWideRefusedStoresNothing},
	{"MappingWideDefinitionRefused", (*suite).testMappingWideDefinitionRefused},
}

// requireRefusedJob upserts (and validates) j, which must be refused as
// INVALID_ARGUMENT saying detail, and checks that nothing of it is stored:
// no job, no backfill record.
func (b *bundle) requireRefusedJob(j backends.Job, detail string) {
	b.t.Helper()
	_, err := b.s.UpsertJob(b.ctx, j)
	_, found := b.s.Job(b.ctx, j.ID)
	require.Error(b.t, found, "upsert of %s answered %v, and stored it", j.ID, err)
	requireCode(b.t, found, backends.CodeNotFound)
	requireCode(b.t, err, backends.CodeInvalidArgument, "upsert %s", j.ID)
	require.Contains(b.t, err.Error(), detail)
	_, err = b.s.ValidateJob(b.ctx, j)
	requireCode(b.t, err, backends.CodeInvalidArgument, "validate %s", j.ID)
	require.Contains(b.t, err.Error(), detail)
	r, err := b.s.Record(b.ctx, "backfill/"+j.ID)
	require.NoError(b.t, err)
	require.Zero(b.t, r.Version, "a refused upsert of %s wrote its backfill record", j.ID)
}

func windowJob(id, output, input string, start int) backends.Job {
	return backends.Job{ID: id, Output: output, Inputs: []string{input},
		InputMappings: []backends.InputMapping{mapping(input, partition.TimeWindow, start, 0)}}
}

func (s *suite) testMappingWideRefusedStoresNothing(t *testing.T) {
	b := s.setup(t)
	for _, id := range []string{"hsrc", "hempty", "hout"} {
		b.definedDataset(id, hourlyDef)
	}
	b.publish("hsrc", "2025-01-01T00", "2025-01-01T01")
	// 10,001 hours a claim: one more than a claim may read. Refused
	// whether the input has READY chunks (the job's backfill would list
	// them) or not.
	for _, in := range []string{"hsrc", "hempty"} {
		b.requireRefusedJob(windowJob("wide", "hout", in, -partition.MaxMapped), "10001 input dataids")
	}
	// A month read by every hour of the 15 months after it: 10,000 and
	// more outputs for one publish to queue.
	b.definedDataset("msrc", partition.Def{Kind: partition.Monthly, Start: "2025-01"})
	b.publish("msrc", "2025-01")
	b.requireRefusedJob(windowJob("fan", "hout", "msrc", -14), "output dataids")

	// Nothing of them stands in the way: publishing their inputs works,
	// and the jobs come in at a width a claim may read.
	b.publish("hsrc", "2025-01-01T02")
	b.publish("hempty", "2025-01-01T00")
	b.publish("msrc", "2025-02")
	b.upsertJob(windowJob("wide", "hout", "hsrc", -2))
	c := b.claim("wide", "2025-01-01T02")
	require.Equal(t, readsOf("hsrc", "2025-01-01T00", "2025-01-01T01", "2025-01-01T02"), c.Reads)
}

// testMappingWideDefinitionRefused: a dataset definition that would make a
// stored job's mapping too wide is refused as the job would be, and the
// definition stays.
func (s *suite) testMappingWideDefinitionRefused(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("dsrc", dailyDef)
	b.definedDataset("dout", dailyDef)
	b.upsertJob(windowJob("roll", "dout", "dsrc", -13))
	// Monthly input: each daily output reads 14 months, each month is read
	// by about 426 days. Fine.
	monthly := partition.Def{Kind: partition.Monthly, Start: "2025-01"}
	b.definedDataset("dsrc", monthly)
	// Hourly output: each month would be read by the hours of 14 months,
	// over 10,000 of them.
	_, err := b.s.UpsertDataset(b.ctx, backends.Dataset{ID: "dout", URL: "s3://lake/dout", Location: "dt={dataid}/", Partitions: &hourlyDef})
	requireCode(t, err, backends.CodeInvalidArgument)
	require.Contains(t, err.Error(), `job "roll"`)
	require.Contains(t, err.Error(), "output dataids")
	d, err := b.s.Dataset(b.ctx, "dout")
	require.NoError(t, err)
	require.Equal(t, dailyDef.Normalized(), *d.Partitions)
	b.publish("dsrc", "2025-01")
}
