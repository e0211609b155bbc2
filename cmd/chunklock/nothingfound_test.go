package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// TestNothingFoundSaysWhy: events that match nothing say when the
// dataset or job is not on the server or the dataid is not expected;
// blockers say of an input chunk its dataset does not expect that it is
// never published.
func TestNothingFoundSaysWhy(t *testing.T) {
	t.Parallel()
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	ctx := t.Context()
	daily := &partition.Def{Kind: partition.Daily, Start: "2026-01-01"}
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "orders", Location: "/o/{dataid}", Partitions: daily}))
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "report", Location: "/r/{dataid}", Partitions: daily}))
	_, err := c.UpsertJob(ctx, backends.Job{ID: "sum", Inputs: []string{"orders"}, Output: "report"})
	require.NoError(t, err)
	cli := func(args ...string) (int, string, string) {
		var stdout, stderr lockedBuffer
		code := run(ctx, append([]string{"chunklock", args[0], "--url", url}, args[1:]...), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	_, _, errs := cli("events", "--dataset", "ordrs")
	require.Equal(t, "no events: the server has no dataset \"ordrs\" (`chunklock status` lists them)\n", errs)
	_, _, errs = cli("events", "--job", "reconcil")
	require.Equal(t, "no events: the server has no job \"reconcil\"\n", errs)
	_, _, errs = cli("events", "--dataset", "orders", "--dataid", "2026-13-45")
	require.Equal(t, "no events: \"2026-13-45\" is not an expected dataid of orders (partitions DAILY from 2026-01-01)\n", errs)
	_, _, errs = cli("events", "--dataset", "orders", "--dataid", "2026-01-05")
	require.Equal(t, "no events\n", errs, "an expected chunk with no events yet")

	// A DAILY output refuses the dataid on the server; an output without a
	// definition reading a DAILY input lists the input, said never to come.
	code, out, errs := cli("blockers", "--job", "sum", "--dataid", "2026-13-01")
	require.NotEqual(t, 0, code)
	require.Empty(t, out)
	require.Contains(t, errs, `is not an expected dataid of dataset "report"`)
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "free", Location: "/f/{dataid}"}))
	_, err = c.UpsertJob(ctx, backends.Job{ID: "copy", Inputs: []string{"orders"}, Output: "free"})
	require.NoError(t, err)
	code, out, errs = cli("blockers", "--job", "copy", "--dataid", "2026-13-01")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, `("2026-13-01" is not an expected dataid of orders (partitions DAILY from 2026-01-01): no such chunk can exist)`)
	code, out, errs = cli("blockers", "--job", "copy", "--dataid", "2026-01-05")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "INPUT_NOT_READY")
	require.NotContains(t, out, "no such chunk")
}
