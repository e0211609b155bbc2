package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/client"
	"github.com/chunklock/chunklock/internal/teststores"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/server"
)

func TestExpandRange(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{
		"2026-01-30..2026-02-02":       {"2026-01-30", "2026-01-31", "2026-02-01", "2026-02-02"},
		"8..11":                        {"8", "9", "10", "11"},
		"008..011":                     {"008", "009", "010", "011"},
		"5..5":                         {"5"},
		"2026-01-31T22..2026-02-01T01": {"2026-01-31T22", "2026-01-31T23", "2026-02-01T00", "2026-02-01T01"},
	} {
		got, err := expandRange(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"1-5", "5..1", "2026-01-02..2026-01-01", "a..b", "2026-01-01..7", "0..100000", "2026-01-01T05..2026-01-01T04", "2026-01-01T05..2026-01-02"} {
		_, err := expandRange(in)
		require.Error(t, err, in)
	}
}

func TestExplain(t *testing.T) {
	t.Parallel()
	cmd := nextCommand()
	require.NoError(t, cmd.Set("url", "http://127.0.0.1:1"))
	refused := &client.Error{Code: backends.CodeUnavailable, Message: "cannot reach", Err: syscall.ECONNREFUSED}
	require.EqualError(t, explain(cmd, refused),
		"http://127.0.0.1:1: connection refused. Is `chunklock serve` running at http://127.0.0.1:1? Set --url or CHUNKLOCK_URL")
	locked := &client.Error{Code: backends.CodeLocked, Message: "cannot claim", Blockers: []backends.Blocker{
		{Dataset: "in", DataID: "7", Kind: backends.BlockerInputNotReady, Status: backends.StatusFailed}}}
	require.EqualError(t, explain(cmd, locked), "LOCKED: cannot claim; blocked by:\n  INPUT_NOT_READY  input chunk in 7 is FAILED, not READY")
	require.EqualError(t, explain(cmd, context.Canceled), "interrupted")
	other := errors.New("plain")
	require.Equal(t, other, explain(cmd, other))
}

// lockedBuffer is a bytes.Buffer safe to read while a command writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveMemory serves a fresh in-memory store, open, through wrap, with
// datasets in and out, job j from in to out and chunk 1 of in published.
func serveMemory(t *testing.T, wrap func(http.Handler) http.Handler) (string, *client.Client) {
	t.Helper()
	return serveMemoryOn(t, nil, wrap)
}

// serveMemoryOn is serveMemory on a given listener (nil: a new one).
func serveMemoryOn(t *testing.T, ln net.Listener, wrap func(http.Handler) http.Handler) (string, *client.Client) {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Store, cfg.Keyring = teststores.Memory(nil), age.New()
	srv, err := server.New(cfg)
	require.NoError(t, err)
	hs := httptest.NewUnstartedServer(wrap(srv.Handler()))
	if ln != nil {
		_ = hs.Listener.Close()
		hs.Listener = ln
	}
	hs.Start()
	t.Cleanup(hs.Close)
	c, err := client.New(hs.URL)
	require.NoError(t, err)
	ctx := t.Context()
	for _, d := range []string{"in", "out"} {
		require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: d, Location: "/" + d + "/{dataid}"}))
	}
	_, err = c.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"in"}, Output: "out"})
	require.NoError(t, err)
	require.NoError(t, c.Publish(ctx, "in", []string{"1"}))
	return hs.URL, c
}

// TestRunLoopWaitsForNewChunks: an idle `run --loop --idle-wait` picks up
// a chunk published while it waits, through the events subscription or,
// when the server refuses websockets, by polling.
func TestRunLoopWaitsForNewChunks(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		wrap func(http.Handler) http.Handler
		log  string
	}{
		"subscription": {func(h http.Handler) http.Handler { return h }, ""},
		"polling": {func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Upgrade") != "" {
					http.Error(w, "no websockets here", http.StatusServiceUnavailable)
					return
				}
				h.ServeHTTP(w, r)
			})
		}, "events subscription unavailable"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url, api := serveMemory(t, c.wrap)
			var stdout, stderr lockedBuffer
			done := make(chan int, 1)
			go func() {
				done <- run(t.Context(), []string{"chunklock", "run", "--url", url, "--job", "j", "--loop", "--idle-wait", "3s", "--",
					"sh", "-c", `echo "did $CHUNKLOCK_DATAID"`}, &stdout, &stderr)
			}()
			deadline := time.Now().Add(20 * time.Second)
			for !strings.Contains(stderr.String(), "idle: waiting") {
				require.True(t, time.Now().Before(deadline), "the runner never went idle:\n%s", stderr.String())
				time.Sleep(20 * time.Millisecond)
			}
			require.NoError(t, api.Publish(t.Context(), "in", []string{"2"}))
			select {
			case code := <-done:
				require.Equal(t, 0, code, stderr.String())
			case <-time.After(30 * time.Second):
				t.Fatalf("the runner did not finish:\n%s", stderr.String())
			}
			require.Equal(t, "did 1\ndid 2\n", stdout.String(), stderr.String())
			require.Contains(t, stderr.String(), c.log)
			require.Contains(t, stderr.String(), "nothing left to do: 2 completed, 0 failed, 0 lost")
		})
	}
}

// TestRunRetriesAnUnreachableServer: a runner started before its server
// retries with backoff, then works once the server is up.
func TestRunRetriesAnUnreachableServer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), []string{"chunklock", "run", "--url", "http://" + addr, "--job", "j", "--loop", "--retry-for", "1m", "--",
			"sh", "-c", `echo "did $CHUNKLOCK_DATAID"`}, &stdout, &stderr)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stderr.String(), "retrying in") {
		require.True(t, time.Now().Before(deadline), "the runner did not retry:\n%s", stderr.String())
		time.Sleep(20 * time.Millisecond)
	}
	ln, err = net.Listen("tcp", addr)
	require.NoError(t, err, "the port was taken meanwhile")
	serveMemoryOn(t, ln, func(h http.Handler) http.Handler { return h })
	select {
	case code := <-done:
		require.Equal(t, 0, code, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("the runner did not finish:\n%s", stderr.String())
	}
	require.Equal(t, "did 1\n", stdout.String(), stderr.String())
	require.Contains(t, stderr.String(), "connection refused")
}

// TestClientCommandsHelp: every command explains itself with an example.
func TestClientCommandsHelp(t *testing.T) {
	t.Parallel()
	for _, c := range clientCommands() {
		var stdout, stderr lockedBuffer
		require.Equal(t, 0, run(t.Context(), []string{"chunklock", c.Name, "--help"}, &stdout, &stderr), c.Name)
		require.Contains(t, stdout.String(), "Example", c.Name)
		require.Contains(t, stdout.String(), "CHUNKLOCK_URL", c.Name)
		require.Contains(t, stdout.String(), "chunklock "+c.Name, c.Name)
	}
	var stdout, stderr lockedBuffer
	require.Equal(t, 0, run(t.Context(), []string{"chunklock", "next", "--help"}, &stdout, &stderr))
	require.Contains(t, stdout.String(), "3  nothing to do", "next documents its exit codes")
}

// TestLockRenewUnlock: lock prints an id, renew extends the lock for its
// holder only, unlock removes it.
func TestLockRenewUnlock(t *testing.T) {
	t.Parallel()
	url, _ := serveMemory(t, func(h http.Handler) http.Handler { return h })
	cli := func(args ...string) (int, string, string) {
		var stdout, stderr lockedBuffer
		code := run(t.Context(), append([]string{"chunklock"}, args...), &stdout, &stderr)
		return code, strings.TrimSpace(stdout.String()), stderr.String()
	}
	code, id, errs := cli("lock", "--url", url, "--client", "ops", "--resource", "s3://lake/x", "--ttl", "1m")
	require.Equal(t, 0, code, errs)
	require.NotEmpty(t, id)
	code, _, errs = cli("renew", "--url", url, "--id", id, "--client", "ops", "--ttl", "2h")
	require.Equal(t, 0, code, errs)
	require.Contains(t, errs, "WRITE lock on s3://lake/x for ops until")
	code, _, errs = cli("renew", "--url", url, "--id", id, "--client", "someone-else")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "FORBIDDEN")
	code, _, errs = cli("renew", "--url", url, "--id", id, "--client", "ops", "--ttl", "200h")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "at most 604800 seconds")
	code, _, errs = cli("unlock", "--url", url, "--id", id, "--client", "ops")
	require.Equal(t, 0, code, errs)
	code, _, errs = cli("renew", "--url", url, "--id", id, "--client", "ops")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "NOT_FOUND")
}

// TestEveryCommandHasAnExample: the README says each command's --help has
// an example; so does each command and subcommand of the whole tree.
func TestEveryCommandHasAnExample(t *testing.T) {
	t.Parallel()
	var walk func(path []string, cmds []*cli.Command)
	walk = func(path []string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Hidden || c.Name == "help" {
				continue
			}
			p := append(slices.Clone(path), c.Name)
			var stdout, stderr lockedBuffer
			require.Equal(t, 0, run(t.Context(), append(append([]string{"chunklock"}, p...), "--help"), &stdout, &stderr), "%v", p)
			// NAME and USAGE name the command; an example names it again.
			assert.GreaterOrEqual(t, strings.Count(stdout.String(), "chunklock "+strings.Join(p, " ")), 3, "%v --help shows an example:\n%s", p, stdout.String())
			walk(p, c.Commands)
		}
	}
	walk(nil, app(io.Discard, io.Discard).Commands)
}
