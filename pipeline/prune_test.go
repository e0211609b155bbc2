package pipeline

import (
	"path/filepath"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// TestPipelineName: the file's `pipeline:` or --pipeline (agreeing when
// both are given), else the file's name, its folder's for pipeline.yaml;
// none for standard input, which PlanPrune then refuses.
func TestPipelineName(t *testing.T) {
	for _, c := range []struct {
		file, flag, path, want, err string
	}{
		{file: "etl", path: "x.yaml", want: "etl"},
		{flag: "etl", path: "x.yaml", want: "etl"},
		{file: "etl", flag: "etl", path: "-", want: "etl"},
		{file: "etl", flag: "other", path: "x.yaml", err: `the file names pipeline "etl" and --pipeline names "other"`},
		{flag: "No Slug", path: "x.yaml", err: "--pipeline \"No Slug\" is invalid"},
		{path: filepath.Join("a", "Sales.yml"), want: "sales"},
		{path: filepath.Join("examples", "daily-pipeline", "pipeline.yaml"), want: "daily-pipeline"},
		{path: "my pipeline.yaml", err: "cannot name the pipeline after the file"},
		{path: "-", want: ""},
	} {
		p := &Pipeline{Name: c.file}
		got, _, err := p.PipelineName(c.flag, c.path)
		if c.err != "" {
			require.ErrorContains(t, err, c.err, "%+v", c)
			continue
		}
		require.NoError(t, err, "%+v", c)
		require.Equal(t, c.want, got, "%+v", c)
	}
	_, from, err := (&Pipeline{}).PipelineName("", filepath.Join("examples", "daily-pipeline", "pipeline.yaml"))
	require.NoError(t, err)
	require.Equal(t, "the folder's name, the file being pipeline.yaml; set `pipeline: NAME` in the file to choose another", from)
	_, from, err = (&Pipeline{}).PipelineName("", "sales.yaml")
	require.NoError(t, err)
	require.Equal(t, "the file's name; set `pipeline: NAME` in the file to choose another", from)
	_, err = (&Pipeline{}).PlanPrune("", PruneState{})
	require.ErrorContains(t, err, "--prune needs a pipeline name")
}

// TestPlanPrune: only objects of the pipeline that the file no longer
// declares are deleted, jobs before datasets before pools; a pool a job
// of the file keeps naming, a dataset a kept job reads, and a dataset
// with chunks or a DYNAMIC set without DeleteChunks are refused.
func TestPlanPrune(t *testing.T) {
	p := &Pipeline{Datasets: []Dataset{{ID: "kept"}}, Jobs: []Job{{ID: "jk", Inputs: []string{"kept"}, Output: "kept2", Pool: "pk"}}}
	st := PruneState{
		Datasets: []backends.Dataset{{ID: "kept", Pipeline: "etl"}, {ID: "gone", Pipeline: "etl"}, {ID: "full", Pipeline: "etl"},
			{ID: "api"}, {ID: "theirs", Pipeline: "other"}, {ID: "read", Pipeline: "etl"},
			{ID: "files", Pipeline: "etl", Partitions: &partition.Def{Kind: partition.Dynamic}}},
		Jobs: []backends.Job{{ID: "jgone", Inputs: []string{"gone"}, Output: "full", Pool: "pgone", Pipeline: "etl"},
			{ID: "japi", Inputs: []string{"read"}, Output: "api"}},
		Pools:  []backends.Pool{{ID: "pk", Pipeline: "etl"}, {ID: "pgone", Pipeline: "etl"}, {ID: "papi"}},
		Chunks: map[string]Chunks{"full": {Total: 2}},
	}
	plan, err := p.PlanPrune("etl", st)
	require.NoError(t, err)
	var got []string
	for _, ch := range plan {
		got = append(got, ch.String())
	}
	require.Equal(t, []string{
		"delete    job        jgone",
		"delete    dataset    files REFUSED: its DYNAMIC set's values go with it; --delete-chunks deletes them with it",
		"delete    dataset    full REFUSED: it has 2 chunk(s); --delete-chunks deletes them with it",
		"delete    dataset    gone",
		`delete    dataset    read REFUSED: LOCKED: still read by job "japi", which the file does not declare`,
		"delete    pool       pgone",
		`delete    pool       pk REFUSED: LOCKED: still named by job "jk", which the file declares`,
	}, got)
	st.DeleteChunks = true
	plan, err = p.PlanPrune("etl", st)
	require.NoError(t, err)
	require.Empty(t, plan[1].Refused, "with DeleteChunks")
	require.Empty(t, plan[2].Refused, "with DeleteChunks")
}

// TestCheckOwnersSaysItOnce: a file whose objects another pipeline created
// (a copy of its file under another name) is refused in one sentence per
// pipeline, naming the first objects and how to apply it as that pipeline.
func TestCheckOwnersSaysItOnce(t *testing.T) {
	p := &Pipeline{}
	var have []backends.Dataset
	for i := range 7 {
		id := string(rune('a' + i))
		p.Datasets = append(p.Datasets, Dataset{ID: id})
		have = append(have, backends.Dataset{ID: id, Pipeline: "daily"})
	}
	err := p.CheckOwners("p3", have, nil, nil)
	require.EqualError(t, err, `pipeline "p3": 7 object(s) of the file belong to pipeline "daily" (its apply created them): `+
		`dataset "a", dataset "b", dataset "c", dataset "d", dataset "e" and 2 more. `+
		"This file applies as pipeline \"p3\": if it is \"daily\"'s file, set `pipeline: daily` in it or pass --pipeline daily; else declare each object in one pipeline file only")
	require.NoError(t, p.CheckOwners("daily", have, nil, nil))
}
