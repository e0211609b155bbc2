package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// TestGraphSaysWhenNoChunkIsThere: graph --dataid draws the chunks at the
// dataid and their edges; at a dataid no chunk of the part shown is read or
// written at (a date given for a dataset whose dataids are tuples, say) it
// still prints the graph, and says on stderr why it has no edges.
func TestGraphSaysWhenNoChunkIsThere(t *testing.T) {
	t.Parallel()
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	code, out, errs := cliRun(t, "graph", "--url", url, "--job", "j", "--dataid", "1")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "digraph")
	require.Contains(t, out, "->")
	require.Empty(t, errs)

	// A job writing date × region, asked for a date alone.
	ctx := t.Context()
	days := partition.Def{Kind: partition.Daily, Start: "2026-01-01"}
	regions := partition.Def{Kind: partition.Dimensional, Dimensions: []partition.Dimension{
		{Name: "date", Def: days},
		{Name: "region", Def: partition.Def{Kind: partition.Static, Values: []string{"eu", "us"}}},
	}}
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "days", Location: "/d/{dataid}", Partitions: &days}))
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "regs", Location: "/r/{region}/{date}", Partitions: &regions}))
	_, err := c.UpsertJob(ctx, backends.Job{ID: "split", Inputs: []string{"days"}, Output: "regs"})
	require.NoError(t, err)
	code, out, errs = cliRun(t, "graph", "--url", url, "--job", "split", "--dataid", "2026-01-15")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "digraph")
	require.Contains(t, errs, "no chunk at dataid 2026-01-15 is read or written here")
	code, _, errs = cliRun(t, "graph", "--url", url, "--job", "split", "--dataid", "2026-01-15|eu")
	require.Equal(t, 0, code, errs)
	require.Empty(t, errs)

	// The whole pipeline at a date: j reads and writes its chunks, split
	// none (its output's are tuples): split is named.
	code, _, errs = cliRun(t, "graph", "--url", url, "--dataid", "2026-01-15")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "chunklock graph: job(s) split read or write no chunk at dataid 2026-01-15: their datasets name chunks otherwise (a tuple such as 2026-01-15|eu, a week such as 2026-W03); `chunklock chunks --dataset D` lists them\n", errs)
}
