package main

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/client"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// cliRun runs the chunklock command line and returns its exit code,
// stdout and stderr.
func cliRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr lockedBuffer
	code := run(t.Context(), append([]string{"chunklock"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestRangeCommands: hold and resubmit over a range of existing chunks
// print a summary that groups the skipped chunks by reason; a second run
// changes nothing more; wrong flag combinations are refused clearly.
func TestRangeCommands(t *testing.T) {
	t.Parallel()
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	ctx := t.Context()
	require.NoError(t, c.Publish(ctx, "in", []string{"2", "3", "4", "5", "6", "7", "8", "9"}))
	for _, d := range []string{"2", "4", "6", "7", "8", "9"} {
		_, err := c.Claim(ctx, "j", d, "e")
		require.NoError(t, err)
	}

	code, out, errs := cliRun(t, "hold", "--url", url, "--dataset", "out", "--from", "1", "--to", "9", "--reason", "audit")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "held 0 chunk(s) of out; skipped 6:")
	require.Contains(t, out, "6 × LOCKED: chunk out/{dataid} is RUNNING")
	require.Contains(t, out, "2, 4, 6, 7, 8 and 1 more")

	// One chunk, its dataid after the flags.
	code, out, errs = cliRun(t, "resubmit", "--url", url, "--dataset", "in", "3")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "in ")
	require.Contains(t, out, "RESUBMIT")

	code, out, errs = cliRun(t, "hold", "--url", url, "--dataset", "in", "--range", "1..9", "--reason", "audit")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "held 9 chunk(s) of in; none skipped\n", out)
	code, out, errs = cliRun(t, "hold", "--url", url, "--dataset", "in", "--from", "1", "--to", "9", "--reason", "audit")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "held 0 chunk(s) of in; 9 on HOLD already; none skipped\n", out)

	code, out, errs = cliRun(t, "resubmit", "--url", url, "--dataset", "in", "--from", "3", "--to", "5", "--cascade")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "resubmitted 2 chunk(s) of in; skipped 1:", "4 is read by a live claim")
	require.Contains(t, out, "1 × LOCKED: cannot invalidate what was computed from in/{dataid}")
	require.Contains(t, out, "what was computed from them is RESUBMIT too, downstream: `chunklock status` counts it by dataset")

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"hold", "--dataset", "in"}, "no chunk given"},
		{[]string{"hold", "--dataset", "in", "1", "2"}, "one chunk at a time"},
		{[]string{"hold", "--dataset", "in", "--dataid", "1", "2"}, "one chunk at a time"},
		{[]string{"hold", "--dataset", "in", "--from", "1"}, "give both --from and --to"},
		{[]string{"hold", "--dataset", "in", "--dataid", "1", "--from", "1", "--to", "2"}, "not both"},
		{[]string{"resubmit", "--dataset", "in", "--from", "2", "--to", "10", "--range", "1..2"}, "not both"},
		{[]string{"resubmit", "--dataset", "in", "--from", "10", "--to", "9"}, "is after --to"},
		{[]string{"resubmit", "--dataset", "in", "--range", "10"}, "want FROM..TO"},
		{[]string{"publish", "--dataset", "in", "--from", "1", "--to", "2", "3"}, "give no dataids"},
		{[]string{"publish", "--dataset", "in", "--from", "1", "--to", "2"}, "no partition definition"},
	} {
		code, _, errs := cliRun(t, append(bad.args, "--url", url)...)
		require.NotEqual(t, 0, code, strings.Join(bad.args, " "))
		require.Contains(t, errs, bad.want, strings.Join(bad.args, " "))
	}
}

func TestRangeCommandsHelp(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"publish", "resubmit", "hold"} {
		code, out, _ := cliRun(t, name, "--help")
		require.Equal(t, 0, code)
		for _, want := range []string{"--from", "--to", "--range", "Ranges:", "10,000", "skipped", "again"} {
			require.Contains(t, out, want, name)
		}
	}
}

// TestRangeCommandsPaged: over a dataset with a partition definition, a
// range longer than one call takes is sent in calls of 10,000 expected
// dataids, with a progress line after each.
func TestRangeCommandsPaged(t *testing.T) {
	t.Parallel()
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	ctx := t.Context()
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "days", Location: "/d/{dataid}",
		Partitions: &partition.Def{Kind: partition.Daily, Start: "2000-01-01"}}))
	_, err := c.Hold(ctx, "days", "2020-02-29", "bad file")
	require.NoError(t, err)
	// 2000-01-01 to 2030-12-31: 11,323 days.
	code, out, errs := cliRun(t, "publish", "--url", url, "--dataset", "days", "--from", "1999-01-01", "--to", "2030-12-31")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "days: 1 of 2 calls done, up to 2027-05-18: 9999 published, 0 unchanged, 1 skipped\n"+
		"days: 2 of 2 calls done, up to 2030-12-31: 11322 published, 0 unchanged, 1 skipped\n", errs)
	require.Contains(t, out, "published 11322 chunk(s) of days; skipped 1:\n")
	require.Contains(t, out, "1 × LOCKED: chunk days/{dataid} is on HOLD; resubmit it before publishing\n      2020-02-29\n")
	code, out, errs = cliRun(t, "publish", "--url", url, "--dataset", "days", "--from", "2000-01-01", "--to", "2030-12-31")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "published 0 chunk(s) of days; 11322 READY already; skipped 1:")
	// Nothing expected in the range: one call, nothing done.
	code, out, errs = cliRun(t, "publish", "--url", url, "--dataset", "days", "--from", "1990-01-01", "--to", "1990-12-31")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "published 0 chunk(s) of days; none skipped\n", out)
	require.Equal(t, "(days expects no dataid in 1990-01-01..1990-12-31: its definition runs from 2000-01-01 to no end)\n", errs)
}

func TestDefPages(t *testing.T) {
	t.Parallel()
	def := partition.Def{Kind: partition.Integer, Start: "5", End: "15"}
	pages, err := defPages(def, "0", "100", 4)
	require.NoError(t, err)
	require.Equal(t, [][2]string{{"5", "8"}, {"9", "12"}, {"13", "15"}}, pages)
	pages, err = defPages(def, "9", "12", 4)
	require.NoError(t, err)
	require.Equal(t, [][2]string{{"9", "12"}}, pages)
	pages, err = defPages(def, "20", "30", 4)
	require.NoError(t, err)
	require.Empty(t, pages)
	_, err = defPages(partition.Def{Kind: partition.Daily, Start: "2026-01-01"}, "5", "6", 4)
	require.ErrorContains(t, err, "DAILY")
	var ids []string
	for i := range 10 {
		ids = append(ids, strconv.Itoa(i))
	}
	pages, err = defPages(partition.Def{Kind: partition.Static, Values: ids}, "0", "9", 5)
	require.NoError(t, err)
	require.Equal(t, [][2]string{{"0", "4"}, {"5", "9"}}, pages)
}

func TestSplitPages(t *testing.T) {
	t.Parallel()
	ids := []string{"2", "3", "5", "8", "13"}
	require.Equal(t, [][2]string{{"1", "3"}, {"5", "8"}, {"13", "20"}}, splitPages(ids, "1", "20", 2))
	require.Equal(t, [][2]string{{"1", "20"}}, splitPages(ids, "1", "20", 5))
	require.Empty(t, splitPages(nil, "1", "20", 5))
}

// TestRangeCommandsExistingPaged: without a partition definition, a range
// of more chunks than one call takes is sent in calls of 10,000 chunks.
func TestRangeCommandsExistingPaged(t *testing.T) {
	t.Parallel()
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	ctx := t.Context()
	var ids []string
	for i := 1; i <= 10_005; i++ {
		ids = append(ids, strconv.Itoa(i))
	}
	require.NoError(t, c.Publish(ctx, "in", ids))
	code, out, errs := cliRun(t, "hold", "--url", url, "--dataset", "in", "--from", "0", "--to", "99999")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "in: 1 of 2 calls done, up to 10000: 10000 held, 0 unchanged, 0 skipped\n"+
		"in: 2 of 2 calls done, up to 99999: 10005 held, 0 unchanged, 0 skipped\n", errs)
	require.Equal(t, "held 10005 chunk(s) of in; none skipped\n", out)
}

// TestSliceCommands: --slice on publish and chunks keeps the tuples of a
// dataset with dimensions whose values are listed (values after a comma
// included), between values of the first dimension.
func TestSliceCommands(t *testing.T) {
	t.Parallel()
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	def := partition.Def{Kind: partition.Dimensional, Dimensions: []partition.Dimension{
		{Name: "date", Def: partition.Def{Kind: partition.Daily, Start: "2020-01-01", End: "2020-01-03"}},
		{Name: "region", Def: partition.Def{Kind: partition.Static, Values: []string{"us", "eu", "apac"}}},
	}}
	require.NoError(t, c.UpsertDataset(t.Context(), backends.Dataset{ID: "feeds", Location: "/feeds/{region}/{date}", Partitions: &def}))

	code, out, errs := cliRun(t, "publish", "--url", url, "--dataset", "feeds", "--slice", "region=eu,us", "--from", "2020-01-02", "--to", "2020-01-03")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "published 4 chunk(s) of feeds; none skipped\n", out)
	// Nothing in the range: the hint names the slice, on stderr.
	code, out, errs = cliRun(t, "publish", "--url", url, "--dataset", "feeds", "--slice", "region=eu,us", "--from", "2019-01-01", "--to", "2019-01-05")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "published 0 chunk(s) of feeds; none skipped\n", out)
	require.Equal(t, "(nothing of feeds in 2019-01-01..2019-01-05 within the slice region=eu,us; its dimension date starts at 2020-01-01)\n", errs)
	code, out, errs = cliRun(t, "chunks", "--url", url, "--dataset", "feeds", "--slice", "region=eu,apac", "--limit", "0")
	require.Equal(t, 0, code, errs)
	for _, line := range []string{"2020-01-01|eu    .", "2020-01-01|apac  .", "2020-01-02|eu    #", "2020-01-03|eu    #", "2020-01-03|apac  ."} {
		require.Contains(t, out, line)
	}
	require.NotContains(t, out, "|us")
	code, out, errs = cliRun(t, "chunks", "--url", url, "--dataset", "feeds", "--missing", "--slice", "region=us")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "2020-01-01|us")
	require.NotContains(t, out, "2020-01-02|us")
	code, _, errs = cliRun(t, "publish", "--url", url, "--dataset", "feeds", "--slice", "region", "--from", "2020-01-01", "--to", "2020-01-01")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "want DIMENSION=V1,V2")
	// A value the STATIC dimension does not list is a typo: refused, with
	// the values, before anything changes (eu stays as it was).
	for _, op := range []string{"hold", "resubmit", "publish"} {
		code, _, errs = cliRun(t, op, "--url", url, "--dataset", "feeds", "--slice", "region=eu,mars", "--from", "2020-01-02", "--to", "2020-01-02")
		require.NotEqual(t, 0, code, op)
		require.Contains(t, errs, `"mars" is not a value of dimension region (its values: us, eu, apac); nothing was changed`, op)
	}
	code, out, errs = cliRun(t, "chunks", "--url", url, "--dataset", "feeds", "--slice", "region=eu", "--from", "2020-01-02", "--to", "2020-01-02", "--limit", "0")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "2020-01-02|eu  #", "the refused hold changed nothing")
	code, _, errs = cliRun(t, "chunks", "--url", url, "--dataset", "feeds", "--slice", "date=2020-01-01")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "bound it with from and to")

	// Without --dataset a slice shows the datasets that have its
	// dimensions; a STATIC value none of them has is refused, naming theirs.
	require.NoError(t, c.UpsertDataset(t.Context(), backends.Dataset{ID: "days", Partitions: &partition.Def{Kind: partition.Daily, Start: "2020-01-01"}}))
	for _, missing := range []bool{false, true} {
		args := []string{"chunks", "--url", url, "--slice", "region=us", "--limit", "0"}
		if missing {
			args = append(args, "--missing")
		}
		code, out, errs = cliRun(t, args...)
		require.Equal(t, 0, code, errs)
		require.Contains(t, out, "2020-01-01|us")
		require.NotContains(t, out, "days")
	}
	code, _, errs = cliRun(t, "chunks", "--url", url, "--slice", "region=mars")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, `"mars" is not a value of dimension region (its values: us, eu, apac)`)
	code, _, errs = cliRun(t, "chunks", "--url", url, "--slice", "customer=acme")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "no dataset shown has the dimension(s) customer")
}

// TestPublishTakesDataidFlags: publish names its chunks with --dataid as
// the other chunk commands do, or after the flags.
func TestPublishTakesDataidFlags(t *testing.T) {
	t.Parallel()
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	code, out, errs := cliRun(t, "publish", "--url", url, "--dataset", "in", "--dataid", "5", "--dataid", "6", "7")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "published 3 chunk(s) of in\n", out)
	rows, err := c.Chunks(t.Context(), client.ChunkFilter{Dataset: "in", Role: "OUTPUT"})
	require.NoError(t, err)
	got := map[string]string{}
	for _, r := range rows {
		got[r.DataID] = r.Status
	}
	require.Equal(t, map[string]string{"1": "READY", "5": "READY", "6": "READY", "7": "READY"}, got)
	code, _, errs = cliRun(t, "publish", "--url", url, "--dataset", "in", "--dataid", "5", "--from", "1", "--to", "2")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "give no dataids")
}
