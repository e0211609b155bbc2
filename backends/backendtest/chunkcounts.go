package backendtest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

var chunkCountTests = []testCase{
	{"ChunkCounts", (*suite).testChunkCounts},
	{"ChunkCountsPaging", (*suite).testChunkCountsPaging},
}

// recount counts a dataset's chunks by status from its rows: the OUTPUT
// rows of job, read through Chunks.
func (b *bundle) recount(dataset, job string) backends.ChunkCount {
	b.t.Helper()
	c := backends.ChunkCount{Dataset: dataset}
	for _, r := range listRows(b.t, b, backends.ChunkFilter{Dataset: dataset, Role: backends.RoleOutput, First: backends.MaxPageSize}) {
		if r.Job == job {
			c.Add(r.Status, 1)
		}
	}
	return c
}

func (b *bundle) chunkCounts(dataset string) backends.ChunkCount {
	b.t.Helper()
	c, err := b.s.ChunkCounts(b.ctx, dataset)
	require.NoError(b.t, err, "chunk counts of %s", dataset)
	return c
}

// testChunkCounts: a dataset's chunks are counted by status, each status
// an operation leaves counted where it belongs; only the producer's OUTPUT
// rows count (not the INPUT rows of its consumers).
func (s *suite) testChunkCounts(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2", "3", "4", "5", "6")
	b.run("ja", "1")
	b.run("ja", "2")
	b.run("jb", "2")
	b.claim("ja", "3")
	b.fail(b.claim("ja", "4"), "bad input")
	_, err := b.s.Hold(b.ctx, "a", "5", "frozen")
	require.NoError(t, err)
	_, err = b.s.Resubmit(b.ctx, "a", "1", false)
	require.NoError(t, err)

	require.Equal(t, backends.ChunkCount{Dataset: "src", Total: 6, Ready: 6}, b.chunkCounts("src"))
	require.Equal(t, backends.ChunkCount{Dataset: "a", Total: 5, Running: 1, Ready: 1, Failed: 1, Resubmit: 1, Hold: 1}, b.chunkCounts("a"))
	require.Equal(t, backends.ChunkCount{Dataset: "b", Total: 1, Ready: 1}, b.chunkCounts("b"))
	for _, d := range []string{"src", "a", "b"} {
		require.Equal(t, b.recount(d, map[string]string{"src": "", "a": "ja", "b": "jb"}[d]), b.chunkCounts(d), "counts of %s against a recount", d)
	}
	_, err = b.s.ChunkCounts(b.ctx, "nosuch")
	requireCode(t, err, backends.CodeNotFound)
}

// testChunkCountsPaging: a dataset of more chunks than a page of rows is
// counted whole, and apart from the datasets whose rows sort around it.
func (s *suite) testChunkCountsPaging(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("seq", partition.Def{Kind: partition.Integer, Start: "0", End: "1499"})
	b.datasets("seq-a", "se")
	res, err := b.s.PublishRange(b.ctx, "seq", "0", "1499")
	require.NoError(t, err)
	require.Equal(t, 1500, res.Changed)
	b.publish("se", "1", "2")
	b.publish("seq-a", "1")
	_, err = b.s.Hold(b.ctx, "seq", "1200", "frozen")
	require.NoError(t, err)
	require.Equal(t, backends.ChunkCount{Dataset: "seq", Total: 1500, Ready: 1499, Hold: 1}, b.chunkCounts("seq"))
	require.Equal(t, backends.ChunkCount{Dataset: "se", Total: 2, Ready: 2}, b.chunkCounts("se"))
	require.Equal(t, b.recount("seq", ""), b.chunkCounts("seq"), "counts against a recount")
}
