package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// TestNextNothingToClaim: with nothing to claim, next exits 3 and prints
// nothing on stdout (so that `claim=$(chunklock next ...) || exit` stops),
// and a claim operation given the empty token that follows says so.
func TestNextNothingToClaim(t *testing.T) {
	t.Parallel()
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	next := func(format string) []string {
		return []string{"chunklock", "next", "--url", url, "--job", "j", "--format", format}
	}

	var stdout, stderr lockedBuffer
	require.Equal(t, exitOK, run(t.Context(), next("env"), &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), "export CHUNKLOCK_DATAID='1'\n")

	for _, format := range []string{"env", "json"} {
		var stdout, stderr lockedBuffer
		code := run(t.Context(), next(format), &stdout, &stderr)
		require.Equal(t, exitNothing, code, format)
		require.Empty(t, stdout.String(), format)
		require.Equal(t, "nothing to do: job j has no claimable chunk now (see `chunklock status --job j`)\n", stderr.String(), format)
	}

	// What of the job itself holds claims back is named: its
	// maxConcurrent reached, then a pause.
	one := 1
	_, err := c.UpsertJob(t.Context(), backends.Job{ID: "j", Inputs: []string{"in"}, Output: "out", MaxConcurrent: one})
	require.NoError(t, err)
	require.NoError(t, c.Publish(t.Context(), "in", []string{"2"}))
	stdout, stderr = lockedBuffer{}, lockedBuffer{}
	require.Equal(t, exitNothing, run(t.Context(), next("env"), &stdout, &stderr), stderr.String())
	require.Equal(t, "nothing to do: job j has no claimable chunk now: its 1 live claim(s) are its maxConcurrent (see `chunklock status --job j`)\n", stderr.String())
	require.NoError(t, c.PauseJob(t.Context(), "j"))
	stdout, stderr = lockedBuffer{}, lockedBuffer{}
	require.Equal(t, exitNothing, run(t.Context(), next("env"), &stdout, &stderr), stderr.String())
	require.Equal(t, "nothing to do: job j has no claimable chunk now: it is paused (`chunklock resume j`) (see `chunklock status --job j`)\n", stderr.String())

	for _, op := range []string{"complete", "fail", "heartbeat", "release"} {
		for _, token := range []string{"", " \n"} {
			var stdout, stderr lockedBuffer
			code := run(t.Context(), []string{"chunklock", op, "--url", url, "--token", token}, &stdout, &stderr)
			require.Equal(t, exitError, code, op)
			require.Empty(t, stdout.String(), op)
			require.Contains(t, stderr.String(), "the claim token is empty", op)
			require.Contains(t, stderr.String(), "probably nothing was claimed", op)
			require.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %s", stderr.String())
		}
	}
}

// TestNextNamesAFullPool: a job whose pool has no free slot is told so,
// by next without a dataid (the pool and its use) and with one (the
// blocker names the pool, not the job's maxConcurrent).
func TestNextNamesAFullPool(t *testing.T) {
	t.Parallel()
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	ctx := t.Context()
	require.NoError(t, c.UpsertPool(ctx, backends.Pool{ID: "wh", Slots: 1}))
	_, err := c.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"in"}, Output: "out", Pool: "wh"})
	require.NoError(t, err)
	require.NoError(t, c.Publish(ctx, "in", []string{"2"}))
	held, err := c.FindNext(ctx, "j", "other")
	require.NoError(t, err)
	require.NotNil(t, held)

	var stdout, stderr lockedBuffer
	require.Equal(t, exitNothing, run(ctx, []string{"chunklock", "next", "--url", url, "--job", "j"}, &stdout, &stderr), stderr.String())
	require.Contains(t, stderr.String(), "its pool wh has no free slot (1 of 1 used, `chunklock pools`)")
	stdout, stderr = lockedBuffer{}, lockedBuffer{}
	require.Equal(t, exitNothing, run(ctx, []string{"chunklock", "next", "--url", url, "--job", "j", "--dataid", "2"}, &stdout, &stderr), stderr.String())
	require.Contains(t, stderr.String(), "pool wh of job j has no free slot")
	require.NotContains(t, stderr.String(), "maxConcurrent")
}

// TestNextWarnsWithoutTheJobKey: a claim of a job with secrets, made
// without its key, succeeds without them and says so on stderr; with the
// key it says nothing.
func TestNextWarnsWithoutTheJobKey(t *testing.T) {
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	ctx := t.Context()
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "sec", Location: "/sec/{dataid}"}))
	key, err := c.UpsertJob(ctx, backends.Job{ID: "k", Inputs: []string{"in"}, Output: "sec"})
	require.NoError(t, err)
	require.NotEmpty(t, key, "a new job's key")
	require.NoError(t, c.SetCredential(ctx, "k", "sec", "s3cret"))
	require.NoError(t, c.Publish(ctx, "in", []string{"2"}))

	t.Setenv("CHUNKLOCK_JOB_KEY", "")
	var stdout, stderr lockedBuffer
	require.Equal(t, exitOK, run(ctx, []string{"chunklock", "next", "--url", url, "--job", "k"}, &stdout, &stderr), stderr.String())
	require.Contains(t, stderr.String(), "warning: job k has secrets (of sec) and no key was given")
	require.NotContains(t, stdout.String(), "s3cret")

	t.Setenv("CHUNKLOCK_JOB_KEY", key)
	stdout, stderr = lockedBuffer{}, lockedBuffer{}
	require.Equal(t, exitOK, run(ctx, []string{"chunklock", "next", "--url", url, "--job", "k"}, &stdout, &stderr), stderr.String())
	require.NotContains(t, stderr.String(), "warning")
	require.Contains(t, stdout.String(), "s3cret")

	// An empty poll has nothing to leave out: no warning. A --keys-dir
	// without the job's key file is named.
	t.Setenv("CHUNKLOCK_JOB_KEY", "")
	dir := t.TempDir()
	stdout, stderr = lockedBuffer{}, lockedBuffer{}
	require.Equal(t, exitNothing, run(ctx, []string{"chunklock", "next", "--url", url, "--job", "k", "--keys-dir", dir}, &stdout, &stderr), stderr.String())
	require.NotContains(t, stderr.String(), "warning")
	require.NoError(t, c.Publish(ctx, "in", []string{"3"}))
	stdout, stderr = lockedBuffer{}, lockedBuffer{}
	require.Equal(t, exitOK, run(ctx, []string{"chunklock", "next", "--url", url, "--job", "k", "--keys-dir", dir}, &stdout, &stderr), stderr.String())
	require.Contains(t, stderr.String(), "warning: job k has secrets (of sec) and --keys-dir has no "+filepath.Join(dir, "k.key"))
}
