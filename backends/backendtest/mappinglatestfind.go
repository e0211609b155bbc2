package backendtest

import (
	"strconv"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// LATEST resolved far behind its output (the newest candidates have no
// READY chunk): every backend must pick the same snapshot, the newest
// READY input dataid not after the output (SPEC §9), as claim and blockers
// see it.

var mappingLatestFindTests = []testCase{
	{"MappingLatestFarStaleProducer", (*suite).testMappingLatestFarStaleProducer},
	{"MappingLatestFarSourceRow", (*suite).testMappingLatestFarSourceRow},
	{"MappingLatestFarInteger", (*suite).testMappingLatestFarInteger},
}

// testMappingLatestFarStaleProducer: dim was produced by job mk, which
// then moved to another output; dim is a source now, and mk's READY rows
// stay. The snapshot of an output far after them is the newest chunk
// published since (blockers and claim read dim's rows of no job), not a
// row of mk.
func (s *suite) testMappingLatestFarStaleProducer(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.definedDataset("other", dailyDef)
	b.upsertJob(backends.Job{ID: "mk", Output: "dim", Inputs: []string{"raw"}})
	b.publish("raw", "2025-03-01")
	b.run("mk", "2025-03-01")
	b.upsertJob(backends.Job{ID: "mk", Output: "other", Inputs: []string{"raw"}})
	b.publish("dim", "2025-01-05")
	b.upsertJob(backends.Job{ID: "enrich", Output: "roll7", Inputs: []string{"raw", "dim"},
		InputMappings: []backends.InputMapping{mapping("dim", partition.Latest, 0, 0)}})
	b.publish("raw", "2025-04-30") // 60 days after mk's row: past the newest 32 candidates
	b.requireSnapshot("enrich", "2025-04-30", backends.Read{Dataset: "dim", DataID: "2025-01-05"},
		"dim/2025-01-05 is READY and the newest READY chunk of dim before 2025-04-30")
}

// requireSnapshot checks that nothing blocks job's output dataid and that
// its claim reads snapshot through its second input (LATEST); why says why.
func (b *bundle) requireSnapshot(job, dataid string, snapshot backends.Read, why string) {
	b.t.Helper()
	bs, err := b.s.Blockers(b.ctx, job, dataid)
	require.NoError(b.t, err)
	require.Empty(b.t, bs, why)
	c := b.claim(job, dataid)
	require.Equal(b.t, snapshot, c.Reads[1])
}

// testMappingLatestFarSourceRow: the same the other way round: dim was a
// source with a chunk published, then job mk became its producer; the
// published row stays, and the snapshot is mk's newest READY chunk.
func (s *suite) testMappingLatestFarSourceRow(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.publish("dim", "2025-03-01")
	b.upsertJob(backends.Job{ID: "mk", Output: "dim", Inputs: []string{"raw"}})
	b.publish("raw", "2025-01-05")
	b.run("mk", "2025-01-05")
	b.upsertJob(backends.Job{ID: "enrich", Output: "roll7", Inputs: []string{"raw", "dim"},
		InputMappings: []backends.InputMapping{mapping("dim", partition.Latest, 0, 0)}})
	b.publish("raw", "2025-04-30")
	b.requireSnapshot("enrich", "2025-04-30", backends.Read{Dataset: "dim", DataID: "2025-01-05"},
		"dim/2025-01-05 is READY (mk's) and the newest READY chunk of dim before 2025-04-30")
}

// testMappingLatestFarInteger: INTEGER datasets, the only snapshot more
// than partition.MaxMapped dataids behind the output: LATEST is still the
// newest READY dataid not after it, on every backend alike.
func (s *suite) testMappingLatestFarInteger(t *testing.T) {
	b := s.setup(t)
	ints := partition.Def{Kind: partition.Integer, Start: "1"}
	b.definedDataset("v", ints)
	b.definedDataset("snap", ints)
	b.definedDataset("out", ints)
	b.upsertJob(backends.Job{ID: "j", Output: "out", Inputs: []string{"v", "snap"},
		InputMappings: []backends.InputMapping{mapping("snap", partition.Latest, 0, 0)}})
	far := strconv.Itoa(partition.MaxMapped + 100)
	b.publish("snap", "7")
	b.publish("v", far)
	c, err := b.s.Claim(b.ctx, "j", far, executor)
	require.NoError(t, err, "snap/7 is the newest READY snap not after %s", far)
	require.Equal(t, backends.Read{Dataset: "snap", DataID: "7"}, c.Reads[1])
}
