package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPauseResumeDelete: chunklock pause, resume and delete act on the
// server and say what they did; refusals carry the server's code and
// reason, and misuse says how to call them.
func TestPauseResumeDelete(t *testing.T) {
	t.Parallel()
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	cli := func(args ...string) (int, string, string) {
		var stdout, stderr lockedBuffer
		code := run(t.Context(), append([]string{"chunklock"}, args...), &stdout, &stderr)
		return code, strings.TrimSpace(stdout.String()), stderr.String()
	}
	code, out, errs := cli("pause", "--url", url, "j")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "paused job j", out)
	j, err := c.Job(t.Context(), "j")
	require.NoError(t, err)
	require.True(t, j.Paused)
	code, out, errs = cli("resume", "--url", url, "j")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "resumed job j", out)

	code, _, errs = cli("delete", "--url", url, "dataset", "out")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "LOCKED")
	require.Contains(t, errs, `job "j" writes it`)
	// A live claim: refused, naming its chunk and what to do, without the
	// wording of a claim's blockers.
	claim, err := c.FindNext(t.Context(), "j", "exec")
	require.NoError(t, err)
	require.NotNil(t, claim)
	code, _, errs = cli("delete", "--url", url, "job", "j")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, `LOCKED: job "j" has 1 live claim(s), on out/1: pause it so that it claims no more, and delete it again once they end (or release them)`)
	require.Contains(t, errs, "`chunklock status` lists the live claims, `chunklock pause j` stops new ones")
	require.NotContains(t, errs, "producers may write")
	// Paused already: it is not told to pause it.
	code, _, errs = cli("pause", "--url", url, "j")
	require.Equal(t, 0, code, errs)
	code, _, errs = cli("delete", "--url", url, "job", "j")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, `LOCKED: job "j" has 1 live claim(s), on out/1: it is paused and claims no more; delete it again once they end (or release them)`)
	require.NotContains(t, errs, "pause j")
	require.NoError(t, c.Release(t.Context(), claim.Token))
	code, out, errs = cli("delete", "--url", url, "job", "j")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "deleted job j", out)
	code, _, errs = cli("delete", "--url", url, "dataset", "in")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "1 chunk(s)")
	require.Contains(t, errs, "--delete-chunks")
	code, out, errs = cli("delete", "--url", url, "dataset", "in", "--delete-chunks")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "deleted dataset in", out)

	code, _, errs = cli("delete", "--url", url, "table", "x")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "not job, dataset or pool")
	code, _, errs = cli("delete", "--url", url, "pool", "p", "--delete-chunks")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "datasets only")
	code, _, errs = cli("pause", "--url", url)
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "usage: chunklock pause JOB")
}

// TestApplyLeavesAPausedJobPaused: apply of a file that changes a paused
// job, without saying paused, keeps it paused; a file that says paused
// decides (SPEC §11).
func TestApplyLeavesAPausedJobPaused(t *testing.T) {
	t.Parallel()
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	cli := func(args ...string) (int, string, string) {
		var stdout, stderr lockedBuffer
		code := run(t.Context(), append([]string{"chunklock"}, args...), &stdout, &stderr)
		return code, strings.TrimSpace(stdout.String()), stderr.String()
	}
	apply := func(job string) {
		t.Helper()
		file := filepath.Join(t.TempDir(), "p.yaml")
		require.NoError(t, os.WriteFile(file, []byte(`
datasets:
  - {id: in, location: "/in/{dataid}"}
  - {id: out, location: "/out/{dataid}"}
jobs:
  - `+job+"\n"), 0o600))
		code, _, errs := cli("apply", "--url", url, "-f", file, "--keys-dir", t.TempDir())
		require.Equal(t, 0, code, errs)
	}
	paused := func() bool {
		j, err := c.Job(t.Context(), "j")
		require.NoError(t, err)
		return j.Paused
	}
	code, _, errs := cli("pause", "--url", url, "j")
	require.Equal(t, 0, code, errs)
	apply(`{id: j, inputs: [in], output: out, description: changed}`)
	require.True(t, paused(), "a file without paused leaves the job paused")
	apply(`{id: j, inputs: [in], output: out, description: changed again, paused: false}`)
	require.False(t, paused(), "a file that says paused: false resumes it")
	apply(`{id: j, inputs: [in], output: out, paused: true}`)
	require.True(t, paused())
}
