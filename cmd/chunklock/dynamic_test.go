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

// TestPartitionsAddToDimension: `partitions add --dimension D` adds to a
// DYNAMIC dimension, --from expects the values from that dataid of the
// time dimension on, and the client reads the dataset back with them
// without ever sending them in an upsert.
func TestPartitionsAddToDimension(t *testing.T) {
	t.Parallel()
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	ctx := t.Context()
	def := partition.Def{Kind: partition.Dimensional, Dimensions: []partition.Dimension{
		{Name: "date", Def: partition.Def{Kind: partition.Daily, Start: "2020-01-01", End: "2020-01-03"}},
		{Name: "customer", Def: partition.Def{Kind: partition.Dynamic}},
	}}
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "orders", Location: "/{customer}/{date}", Partitions: &def}))
	code, out, errs := cliRun(t, "partitions", "add", "--url", url, "orders", "acme", "--dimension", "customer", "--from", "2020-01-02")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "added 1 value(s) of orders\n", out)
	ps, err := c.Partitions(ctx, client.PartitionFilter{Dataset: "orders"})
	require.NoError(t, err)
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.DataID)
	}
	require.Equal(t, []string{"2020-01-02|acme", "2020-01-03|acme"}, ids)

	// Read back and upserted again (what a tool doing read-modify-write
	// does): the values stay.
	got, err := c.DatasetPartitions(ctx, "orders")
	require.NoError(t, err)
	require.Equal(t, []string{"acme"}, partition.MemberValues(got.Dimensions[1].Members))
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "orders", Location: "/{customer}/{date}", Partitions: got}))
	again, err := c.DatasetPartitions(ctx, "orders")
	require.NoError(t, err)
	require.Equal(t, []string{"acme"}, partition.MemberValues(again.Dimensions[1].Members))

	// A --from before the time dimension's start: expected from the start,
	// and the add says so.
	code, out, errs = cliRun(t, "partitions", "add", "--url", url, "orders", "early", "--dimension", "customer", "--from", "2019-06-01")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "added 1 value(s) of orders\n"+
		"expected from 2020-01-01, the start of dimension date: --from 2019-06-01 is before it, and nothing before the start is expected\n", out)
	ps, err = c.Partitions(ctx, client.PartitionFilter{Dataset: "orders", Slice: []partition.Slice{{Dimension: "customer", Values: []string{"early"}}}})
	require.NoError(t, err)
	require.Len(t, ps, 3, "2020-01-01 to 2020-01-03")

	code, _, errs = cliRun(t, "partitions", "add", "--url", url, "orders", "beta")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "name the DYNAMIC dimension the values are of (dimension: customer)")
	code, _, errs = cliRun(t, "partitions", "add", "--url", url, "orders", "beta", "--dimension", "customer", "--from", "2020-13-01")
	require.Equal(t, 1, code)
	require.Contains(t, errs, `from "2020-13-01"`)
	code, _, errs = cliRun(t, "partitions", "add", "--url", url, "orders", "ok1", "my file", "--dimension", "customer")
	require.Equal(t, 1, code)
	require.Contains(t, errs, `value "my file" (nothing was sent: fix it or leave it out): dataid "my file" has an invalid character, ' ' at character 3`)
}

// TestStatusByValue: status names the values behind of each DYNAMIC or
// STATIC dimension, one line a dimension; --by lists every value, --behind
// only those behind; --by without --dataset, and --behind without --by,
// are refused.
func TestStatusByValue(t *testing.T) {
	t.Parallel()
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	ctx := t.Context()
	deadline := 3600
	def := partition.Spec{DeadlineSeconds: &deadline, Dimensions: []partition.DimensionSpec{
		{Name: "date", Kind: partition.Daily, Start: "2020-01-01", End: "2020-01-10"},
		{Name: "customer", Kind: partition.Dynamic},
	}}
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "orders", Location: "/{customer}/{date}", Partitions: def.Def()}))
	_, err := c.AddPartitionsFrom(ctx, "orders", []string{"acme", "beta", "zed"}, "customer", "2020-01-01")
	require.NoError(t, err)
	require.NoError(t, c.Publish(ctx, "orders", []string{"2020-01-01|acme", "2020-01-02|acme"}))
	_, err = c.SlicedRange(ctx, backends.RangeRequest{Op: backends.RangePublish, Dataset: "orders", From: "2020-01-01", To: "2020-01-10", Slice: []partition.Slice{{Dimension: "customer", Values: []string{"beta"}}}})
	require.NoError(t, err)

	code, out, errs := cliRun(t, "status", "--url", url)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "BEHIND BY VALUE\norders by customer: 2 of 3 behind: zed (10 missing from 2020-01-01|zed, 10 late); acme (8 missing from 2020-01-03|acme, 8 late)\n")
	code, out, errs = cliRun(t, "status", "--url", url, "--dataset", "orders", "--by", "customer", "--behind")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "CUSTOMER  MISSING  LATE  OLDEST MISSING   OLDEST LATE      EXPECTED FROM\n"+
		"zed       10       10    2020-01-01|zed   2020-01-01|zed   2020-01-01\n"+
		"acme      8        8     2020-01-03|acme  2020-01-03|acme  2020-01-01\n"+
		"2 of 3 values behind\n", out)
	code, out, _ = cliRun(t, "status", "--url", url, "--dataset", "orders", "--by", "customer")
	require.Equal(t, 0, code)
	require.Contains(t, out, "beta      0        0     -")
	code, _, errs = cliRun(t, "status", "--url", url, "--by", "customer")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "give --dataset too")
	code, _, errs = cliRun(t, "status", "--url", url, "--behind")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "--behind applies with --by")
}
