package main

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/client"
)

// TestPartitionsAddRemove: `partitions add` and `remove` send the values
// of their arguments and of --from-file (comments and blank lines
// skipped), say what they did and what they skipped, and refuse what is
// wrong before sending anything.
func TestPartitionsAddRemove(t *testing.T) {
	t.Parallel()
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	ctx := t.Context()
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "landing", Location: "/landing/{dataid}",
		Partitions: &partition.Def{Kind: partition.Dynamic}}))
	file := filepath.Join(t.TempDir(), "values.txt")
	require.NoError(t, os.WriteFile(file, []byte("# seen by the sensor\nc.csv\n\n  a.csv  \n"), 0o600))

	code, out, errs := cliRun(t, "partitions", "add", "--url", url, "landing", "b.csv", "a.csv", "--from-file", file)
	require.Equal(t, 0, code, errs)
	require.Equal(t, "added 3 value(s) of landing; 1 skipped (in the set already or listed twice): a.csv\n", out)
	ps, err := c.Partitions(ctx, client.PartitionFilter{Dataset: "landing"})
	require.NoError(t, err)
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.DataID)
	}
	require.Equal(t, []string{"a.csv", "b.csv", "c.csv"}, ids)

	code, out, errs = cliRun(t, "partitions", "remove", "--url", url, "landing", "b.csv", "zz")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "removed 1 value(s) of landing; 1 skipped (not in the set or listed twice): zz\n", out)

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"partitions", "add"}, "no dataset given"},
		{[]string{"partitions", "add", "landing"}, "no values given"},
		{[]string{"partitions", "add", "landing", "a b"}, `value "a b"`},
		{[]string{"partitions", "add", "in", "x"}, "DYNAMIC partitions only"},
		{[]string{"partitions", "remove", "landing", "--from-file", filepath.Join(t.TempDir(), "none")}, "no such file"},
	} {
		code, _, errs := cliRun(t, append(bad.args, "--url", url)...)
		require.Equal(t, 1, code, "%v", bad.args)
		require.Contains(t, errs, bad.want, "%v", bad.args)
	}
}

// TestRangeOverDynamic: a range command over a DYNAMIC dataset covers the
// values of the set in the range.
func TestRangeOverDynamic(t *testing.T) {
	t.Parallel()
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	ctx := t.Context()
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "landing", Location: "/landing/{dataid}",
		Partitions: &partition.Def{Kind: partition.Dynamic}}))
	_, err := c.AddPartitions(ctx, "landing", []string{"a", "b", "c"}, "")
	require.NoError(t, err)
	code, out, errs := cliRun(t, "hold", "--url", url, "--dataset", "landing", "--from", "b", "--to", "z", "--reason", "check")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "held 2 chunk(s) of landing; none skipped\n", out)
}
