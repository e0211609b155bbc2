package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
