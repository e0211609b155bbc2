package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// TestHistory: chunklock history lists the catalog's changes newest first
// as a table, filtered and limited, the value before cut and "(created)"
// for creations; misuse says how to call it, and --help explains it.
func TestHistory(t *testing.T) {
	t.Parallel()
	url, _ := serveMemory(t, func(h http.Handler) http.Handler { return h })
	cli := func(args ...string) (int, string, string) {
		var stdout, stderr lockedBuffer
		code := run(t.Context(), append([]string{"chunklock"}, args...), &stdout, &stderr)
		return code, strings.TrimSpace(stdout.String()), stderr.String()
	}
	code, _, errs := cli("pause", "--url", url, "j")
	require.Equal(t, 0, code, errs)
	code, _, errs = cli("resume", "--url", url, "j")
	require.Equal(t, 0, code, errs)

	code, out, errs := cli("history", "--url", url)
	require.Equal(t, 0, code, errs)
	lines := strings.Split(out, "\n")
	require.Len(t, lines, 6, out) // a header, resume, pause, upsertJob j, upsertDataset out and in
	require.Regexp(t, `^TIME\s+ACTOR\s+OPERATION\s+OBJECT\s+BEFORE$`, lines[0])
	require.Regexp(t, `^\S+\s+anonymous\s+resumeJob\s+job j\s+\{.*\.\.\.$`, lines[1], "open mode's actor; the value before cut")
	require.Contains(t, lines[2], "pauseJob")
	require.Regexp(t, `upsertJob\s+job j\s+\(created\)$`, lines[3])
	require.Regexp(t, `upsertDataset\s+dataset in\s+\(created\)$`, lines[5])

	code, out, errs = cli("history", "--url", url, "--job", "j", "--limit", "2")
	require.Equal(t, 0, code, errs)
	lines = strings.Split(out, "\n")
	require.Len(t, lines, 3, out)
	require.Contains(t, lines[1], "resumeJob")
	require.Contains(t, lines[2], "pauseJob")
	code, out, errs = cli("history", "--url", url, "--dataset", "out")
	require.Equal(t, 0, code, errs)
	require.Len(t, strings.Split(out, "\n"), 2, out)
	code, out, errs = cli("history", "--url", url, "--actor", "alice")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "no catalog changes", out)

	code, _, errs = cli("history", "--url", url, "--limit", "0")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "--limit must be at least 1")
	code, _, errs = cli("history", "--url", url, "extra")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "usage: chunklock history")
	code, out, _ = cli("history", "--help")
	require.Equal(t, 0, code)
	require.Contains(t, out, "newest first")
	require.Contains(t, out, "--actor")
}

// TestHistoryOfValues: an addPartitions or removePartitions is shown as the
// values it changed (its record holds the change, not the set before).
func TestHistoryOfValues(t *testing.T) {
	t.Parallel()
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	ctx := t.Context()
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "files", Location: "/f/{dataid}", Partitions: &partition.Def{Kind: partition.Dynamic}}))
	_, err := c.AddPartitions(ctx, "files", []string{"a.csv", "b.csv"}, "")
	require.NoError(t, err)
	_, err = c.RemovePartitions(ctx, "files", []string{"b.csv"}, "")
	require.NoError(t, err)
	var stdout, stderr lockedBuffer
	require.Equal(t, 0, run(ctx, []string{"chunklock", "history", "--url", url, "--dataset", "files"}, &stdout, &stderr), stderr.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Regexp(t, `removePartitions\s+dataset files\s+removed 1 value \(b\.csv\)$`, lines[1])
	require.Regexp(t, `addPartitions\s+dataset files\s+added 2 values \(a\.csv, b\.csv\)$`, lines[2])
}
