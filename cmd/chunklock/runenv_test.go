package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/client"
)

// olderServer makes a server answer as one that predates the rule on env
// names would: env is added to the jobs and claims of every answer to a
// request whose query contains match.
func olderServer(match string, env ...client.EnvVar) func(http.Handler) http.Handler {
	extra, _ := json.Marshal(env)
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if r.Header.Get("Upgrade") != "" || !bytes.Contains(body, []byte(match)) {
				h.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			out := bytes.ReplaceAll(rec.Body.Bytes(), []byte(`"env":[]`), append([]byte(`"env":`), extra...))
			out = bytes.ReplaceAll(out, []byte(`"env":[{`), append(append([]byte(`"env":`), extra[:len(extra)-1]...), []byte(`,{`)...))
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.Header().Del("Content-Length")
			w.WriteHeader(rec.Code)
			_, _ = w.Write(out)
		})
	}
}

// hookEnv is a BASH_ENV that would run a script (its Value, an executable)
// leaving the file hook-ran behind in dir, on the host of any runner that
// passed it on to a bash job.
func hookEnv(t *testing.T, dir string) client.EnvVar {
	t.Helper()
	hook := filepath.Join(dir, "hook.sh")
	require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\ntouch "+filepath.Join(dir, "hook-ran")+"\n"), 0o755))
	return client.EnvVar{Name: "BASH_ENV", Value: hook}
}

// requireOnlyHook checks that dir holds hook.sh alone: neither the job
// process nor the hook ran.
func requireOnlyHook(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "neither the job process nor the BASH_ENV hook may run")
}

// TestRunRefusesJobEnvAtStart: a runner refuses, before claiming anything,
// a job whose env a server older than the rule on env names still holds.
func TestRunRefusesJobEnvAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url, api := serveMemory(t, olderServer("job(id:", hookEnv(t, dir)))
	var stdout, stderr lockedBuffer
	code := run(t.Context(), []string{"chunklock", "run", "--url", url, "--job", "j", "--", "bash", "-c", "touch " + filepath.Join(dir, "started")}, &stdout, &stderr)
	require.Equal(t, exitError, code)
	require.Contains(t, stderr.String(), `chunklock: job j: the runner refuses its env: env name "BASH_ENV" is not allowed: shells run code`)
	require.Contains(t, stderr.String(), "nothing was claimed")
	requireOnlyHook(t, dir)
	rows, err := api.Chunks(t.Context(), client.ChunkFilter{Dataset: "out"})
	require.NoError(t, err)
	require.Empty(t, rows, "nothing was claimed")
}

// TestRunRefusesClaimEnv: a claim that brings a refused env (the job's env
// changed after the runner started) is failed with the variable's name as
// the reason, the job process is not started, and the runner stops serving
// the job.
func TestRunRefusesClaimEnv(t *testing.T) {
	t.Parallel()
	for _, loop := range []bool{false, true} {
		dir := t.TempDir()
		url, api := serveMemory(t, olderServer("findNext", hookEnv(t, dir), client.EnvVar{Name: "CHUNKLOCK_URL", Value: "http://elsewhere"}))
		args := []string{"chunklock", "run", "--url", url, "--job", "j"}
		if loop {
			args = append(args, "--loop")
		}
		var stdout, stderr lockedBuffer
		code := run(t.Context(), append(args, "--", "bash", "-c", "touch "+filepath.Join(dir, "started")), &stdout, &stderr)
		require.Equal(t, exitError, code, "loop %v", loop)
		require.Contains(t, stderr.String(), `env name "BASH_ENV" is not allowed`, "loop %v", loop)
		require.Contains(t, stderr.String(), `env name "CHUNKLOCK_URL" is not allowed: CHUNKLOCK_* names are the runner's own variables`, "loop %v", loop)
		require.Contains(t, stderr.String(), "the claim on j 1 was failed with this reason and the job process not started", "loop %v", loop)
		if loop {
			require.Contains(t, stderr.String(), "no job left to serve")
		}
		requireOnlyHook(t, dir)
		rows, err := api.Chunks(t.Context(), client.ChunkFilter{Dataset: "out"})
		require.NoError(t, err)
		require.Len(t, rows, 1, "one claim, failed: the runner did not claim again")
		require.Equal(t, "FAILED", rows[0].Status)
		require.Contains(t, rows[0].Reason, `env name "BASH_ENV" is not allowed`, "operators see why in the chunk's status")
	}
}

// TestNextRefusesClaimEnv: next fails such a claim and prints no exports,
// so that no `eval` sets the variable in a shell.
func TestNextRefusesClaimEnv(t *testing.T) {
	t.Parallel()
	url, api := serveMemory(t, olderServer("findNext", client.EnvVar{Name: "LD_PRELOAD", Value: "/tmp/evil.so"}))
	var stdout, stderr lockedBuffer
	code := run(t.Context(), []string{"chunklock", "next", "--url", url, "--job", "j", "--format", "env"}, &stdout, &stderr)
	require.Equal(t, exitError, code)
	require.Empty(t, stdout.String())
	require.Contains(t, stderr.String(), `env name "LD_PRELOAD" is not allowed: it changes how processes load code (names starting with LD_); the claim on j 1 was failed with this reason`)
	rows, err := api.Chunks(t.Context(), client.ChunkFilter{Dataset: "out"})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, "FAILED", rows[0].Status)
	require.Contains(t, rows[0].Reason, "LD_PRELOAD")
}

// TestStatusNamesRefusedJobEnv: a stored job whose env the rule refuses
// (stored by a server older than the rule, or one that allows more) is
// named by `chunklock status`, with the name, why, and what to do; the
// names given to --env-allow, as to the runners, are not.
func TestStatusNamesRefusedJobEnv(t *testing.T) {
	t.Parallel()
	url, _ := serveMemory(t, olderServer("jobs {", client.EnvVar{Name: "TAR_OPTIONS", Value: "--checkpoint-action=exec=sh"}))
	status := func(args ...string) string {
		t.Helper()
		var stdout, stderr lockedBuffer
		code := run(t.Context(), append([]string{"chunklock", "status", "--url", url}, args...), &stdout, &stderr)
		require.Equal(t, 0, code, stderr.String())
		return stdout.String()
	}
	out := status()
	require.Contains(t, out, "\njob j: runners refuse its env: env name \"TAR_OPTIONS\" is not allowed: tools read command-line options from it")
	require.Contains(t, out, "runners claim nothing for such a job: remove the name from its env (the pipeline file, then `chunklock apply`)")
	require.Contains(t, status("--job", "j"), `env name "TAR_OPTIONS" is not allowed`)
	require.NotContains(t, status("--env-allow", "TAR_OPTIONS"), "TAR_OPTIONS", "allowed as on the runners")

	plain, _ := serveMemory(t, func(h http.Handler) http.Handler { return h })
	var stdout, stderr lockedBuffer
	require.Equal(t, 0, run(t.Context(), []string{"chunklock", "status", "--url", plain}, &stdout, &stderr), stderr.String())
	require.NotContains(t, stdout.String(), "refuse")
}

// TestRunEnvAllow: a runner refuses a job whose env names TAR_OPTIONS,
// which makes tar run any command, before claiming; given --env-allow
// TAR_OPTIONS by its operator, it passes the variable on to the job.
func TestRunEnvAllow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hook := hookEnv(t, dir).Value
	pwned := filepath.Join(dir, "hook-ran")
	url, api := serveMemory(t, olderServer("env { name value }", client.EnvVar{Name: "TAR_OPTIONS", Value: "--checkpoint=1 --checkpoint-action=exec=" + hook}))
	args := []string{"chunklock", "run", "--url", url, "--job", "j"}
	tar := []string{"--", "tar", "-cf", filepath.Join(dir, "out.tar"), "-C", dir, "hook.sh"}

	var stdout, stderr lockedBuffer
	require.Equal(t, exitError, run(t.Context(), append(args, tar...), &stdout, &stderr))
	require.Contains(t, stderr.String(), `chunklock: job j: the runner refuses its env: env name "TAR_OPTIONS" is not allowed: tools read command-line options from it`)
	require.Contains(t, stderr.String(), "nothing was claimed")
	require.NoFileExists(t, pwned)

	stdout, stderr = lockedBuffer{}, lockedBuffer{}
	require.Equal(t, exitOK, run(t.Context(), append(append(args, "--env-allow", "TAR_OPTIONS"), tar...), &stdout, &stderr), stderr.String())
	require.FileExists(t, pwned, "the allowed variable reached tar")
	rows, err := api.Chunks(t.Context(), client.ChunkFilter{Dataset: "out"})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, "READY", rows[0].Status)
}
