package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v3"
	"gopkg.in/yaml.v3"

	"github.com/chunklock/chunklock/auth"
	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
	"github.com/chunklock/chunklock/backends/open"
)

// The tests serve "memory:" stores, which need no data directory or ports;
// every other --store value goes to backends/open.
func init() {
	real := openStore
	openStore = func(ctx context.Context, storeURL string, opts open.Options) (backends.Store, error) {
		if storeURL == "memory:" {
			return engine.New(memory.New(), engine.WithEnvAllow(opts.EnvAllow)), nil
		}
		return real(ctx, storeURL, opts)
	}
}

// syncBuffer is a bytes.Buffer safe to read while the server writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServe runs `chunklock serve args...` in-process and returns the
// playground URL it prints, its stderr, and a function that stops it (as
// SIGTERM would) and returns its exit code.
func startServe(t *testing.T, args ...string) (url string, stderr *syncBuffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	stderr = &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"chunklock", "serve"}, args...), io.Discard, stderr) }()
	re := regexp.MustCompile(`playground at (http://\S+)/\n`)
	require.Eventually(t, func() bool {
		select {
		case code := <-done:
			done <- code
			return true
		default:
		}
		return re.MatchString(stderr.String())
	}, 20*time.Second, 10*time.Millisecond)
	m := re.FindStringSubmatch(stderr.String())
	require.NotNil(t, m, "serve did not start: %s", stderr.String())
	return m[1], stderr, func() int {
		cancel()
		return <-done
	}
}

func postGraphQL(t *testing.T, url, token, query string) map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"query": query})
	req, err := http.NewRequest(http.MethodPost, url+"/graphql", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}

func TestServeOpenOnLoopback(t *testing.T) {
	url, stderr, stop := startServe(t, "--listen", "127.0.0.1:0", "--store", "memory:")
	require.Contains(t, stderr.String(), "chunklock runs OPEN")
	for path, want := range map[string]string{"/healthz": "ok\n", "/readyz": "ready\n"} {
		resp, err := http.Get(url + path)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, want, string(b), path)
	}
	out := postGraphQL(t, url, "", `mutation { upsertDataset(input: {id: "a"}) { id } }`)
	require.Equal(t, map[string]any{"upsertDataset": map[string]any{"id": "a"}}, out["data"])
	resp, err := http.Get(url + "/metrics")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(b), "chunklock_lease_expiries_total")
	require.Equal(t, 0, stop(), stderr.String())
	require.Contains(t, stderr.String(), "shutting down")
}

func TestServeUnknownStore(t *testing.T) {
	var stderr bytes.Buffer
	require.Equal(t, 1, run(t.Context(), []string{"chunklock", "serve", "--listen", "127.0.0.1:0", "--store", "mysql://u:hunter2@db/x"}, io.Discard, &stderr))
	require.Contains(t, stderr.String(), `scheme "mysql" is unknown`)
	require.NotContains(t, stderr.String(), "hunter2")
}

// TestServeQueryBounds: the query bound flags reach the server, which
// refuses values too low for ordinary queries, and applies the others.
func TestServeQueryBounds(t *testing.T) {
	for flag, want := range map[string]string{
		"--max-tokens":     "max tokens 10 is below",
		"--max-selections": "max selections 10 is below",
		"--max-aliases":    "max aliases 10 is below",
	} {
		var stderr bytes.Buffer
		require.Equal(t, 1, run(t.Context(), []string{"chunklock", "serve", "--listen", "127.0.0.1:0", "--store", "memory:", flag, "10"}, io.Discard, &stderr), flag)
		require.Contains(t, stderr.String(), want, flag)
	}
	url, stderr, stop := startServe(t, "--listen", "127.0.0.1:0", "--store", "memory:", "--max-aliases", "30")
	out := postGraphQL(t, url, "", "{"+strings.Repeat(" a: __typename", 30)+" }")
	require.Nil(t, out["errors"])
	var aliases strings.Builder
	for i := range 31 {
		fmt.Fprintf(&aliases, " a%d: __typename", i)
	}
	out = postGraphQL(t, url, "", "{"+aliases.String()+" }")
	require.Contains(t, fmt.Sprint(out["errors"]), "more than 30 aliases")
	require.Equal(t, 0, stop(), stderr.String())
}

// TestServeEnvAllow: the server refuses a job whose env names a variable
// of a refused family (TAR_OPTIONS runs commands through tar), unless
// --env-allow (or CHUNKLOCK_ENV_ALLOW, or env-allow in --config) names it;
// it never allows the runner's own CHUNKLOCK_*.
func TestServeEnvAllow(t *testing.T) {
	const define = `mutation { upsertDataset(input: {id: "out", location: "/out/{dataid}"}) { id } }`
	job := func(name string) string {
		return `mutation { upsertJob(input: {id: "j", output: "out", env: [{name: "MODE", value: "full"}, {name: "` + name + `", value: "v"}]}) { job { id } } }`
	}
	code := func(out map[string]any) any {
		errs, _ := out["errors"].([]any)
		if len(errs) == 0 {
			return nil
		}
		return errs[0].(map[string]any)["extensions"].(map[string]any)["code"]
	}

	url, stderr, stop := startServe(t, "--listen", "127.0.0.1:0", "--store", "memory:")
	require.Nil(t, postGraphQL(t, url, "", define)["errors"])
	out := postGraphQL(t, url, "", job("TAR_OPTIONS"))
	require.Equal(t, "INVALID_ARGUMENT", code(out), "%v", out)
	require.Contains(t, fmt.Sprint(out["errors"]), `job "j": env name "TAR_OPTIONS" is not allowed: tools read command-line options from it`)
	require.Contains(t, fmt.Sprint(out["errors"]), "--env-allow TAR_OPTIONS")
	require.Equal(t, 0, stop(), stderr.String())

	url, stderr, stop = startServe(t, "--listen", "127.0.0.1:0", "--store", "memory:", "--env-allow", "TAR_OPTIONS,HTTPS_PROXY")
	require.Contains(t, stderr.String(), "chunklock: job env names allowed beyond the rule: HTTPS_PROXY,TAR_OPTIONS (runners refuse them unless they are given them too: chunklock run --env-allow)")
	require.Nil(t, postGraphQL(t, url, "", define)["errors"])
	out = postGraphQL(t, url, "", job("TAR_OPTIONS"))
	require.Nil(t, out["errors"], "%v", out)
	require.Equal(t, "INVALID_ARGUMENT", code(postGraphQL(t, url, "", job("ALL_PROXY"))), "only the names allowed")
	require.Equal(t, 0, stop(), stderr.String())

	config := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(config, []byte("env-allow: [RSYNC_RSH]\n"), 0o600))
	url, stderr, stop = startServe(t, "--listen", "127.0.0.1:0", "--store", "memory:", "--config", config)
	require.Nil(t, postGraphQL(t, url, "", define)["errors"])
	require.Nil(t, postGraphQL(t, url, "", job("RSYNC_RSH"))["errors"], "env-allow in the config file")
	require.Equal(t, 0, stop(), stderr.String())

	var errOut bytes.Buffer
	require.Equal(t, 1, run(t.Context(), []string{"chunklock", "serve", "--listen", "127.0.0.1:0", "--store", "memory:", "--env-allow", "CHUNKLOCK_URL"}, io.Discard, &errOut))
	require.Contains(t, errOut.String(), `--env-allow "CHUNKLOCK_URL": CHUNKLOCK_* names are the runner's own variables and cannot be allowed`)
}

func TestServeRefusesOpenOffLoopback(t *testing.T) {
	var stderr bytes.Buffer
	code := run(t.Context(), []string{"chunklock", "serve", "--listen", "0.0.0.0:0", "--store", "memory:"}, io.Discard, &stderr)
	require.Equal(t, 1, code)
	require.Contains(t, stderr.String(), "refusing to run without authentication")
}

func TestServeWithTokens(t *testing.T) {
	dir := t.TempDir()
	var entry, tokenOut bytes.Buffer
	require.Equal(t, 0, run(t.Context(), []string{"chunklock", "token", "new", "--name", "ops", "--role", "admin"}, &entry, &tokenOut))
	token := strings.TrimSpace(strings.SplitN(tokenOut.String(), "\n", 2)[1])
	require.True(t, strings.HasPrefix(token, auth.TokenPrefix), tokenOut.String())
	require.NotContains(t, entry.String(), token, "the tokens file gets the hash only")
	tokens := filepath.Join(dir, "tokens.yaml")
	require.NoError(t, os.WriteFile(tokens, entry.Bytes(), 0o600))

	// Off loopback is fine with tokens.
	url, stderr, stop := startServe(t, "--listen", "0.0.0.0:0", "--store", "memory:", "--tokens-file", tokens)
	require.NotContains(t, stderr.String(), "OPEN")
	require.Contains(t, url, "http://localhost:")
	out := postGraphQL(t, url, "", `{ datasets { id } }`)
	require.Equal(t, "UNAUTHENTICATED", out["errors"].([]any)[0].(map[string]any)["extensions"].(map[string]any)["code"])
	out = postGraphQL(t, url, token, `{ datasets { id } }`)
	require.Equal(t, map[string]any{"datasets": []any{}}, out["data"])
	require.Equal(t, 0, stop())

	// A tokens file without tokens is refused.
	empty := filepath.Join(dir, "empty.yaml")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	var errOut bytes.Buffer
	require.Equal(t, 1, run(t.Context(), []string{"chunklock", "serve", "--listen", "127.0.0.1:0", "--store", "memory:", "--tokens-file", empty}, io.Discard, &errOut))
	require.Contains(t, errOut.String(), "has no tokens")
}

func TestTokenNew(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(t.Context(), []string{"chunklock", "token", "new", "--name", "nightly", "--role", "runner", "--job", "ja", "--job", "jb"}, &stdout, &stderr))
	var entries []auth.Entry
	require.NoError(t, yaml.Unmarshal(stdout.Bytes(), &entries))
	require.Len(t, entries, 1)
	require.Equal(t, []string{"ja", "jb"}, entries[0].Jobs)
	ts, err := auth.ParseTokens(stdout.Bytes())
	require.NoError(t, err)
	token := strings.TrimSpace(strings.SplitN(stderr.String(), "\n", 2)[1])
	p, ok := ts.Authenticate(token)
	require.True(t, ok)
	require.Equal(t, auth.RoleRunner, p.Role)

	stderr.Reset()
	require.Equal(t, 1, run(t.Context(), []string{"chunklock", "token", "new", "--name", "x", "--role", "reader", "--job", "ja"}, io.Discard, &stderr))
	require.Contains(t, stderr.String(), "only runner tokens list jobs")
}

// TestSettingsPrecedence: flags > environment > config file > defaults.
func TestSettingsPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "chunklock.yaml")
	require.NoError(t, os.WriteFile(file, []byte("listen: 127.0.0.1:1111\nstore: memory\nreaper-interval: 9s\nintrospection: false\nmax-depth: 20\n"), 0o600))
	t.Setenv("CHUNKLOCK_REAPER_INTERVAL", "7s")
	t.Setenv("CHUNKLOCK_MAX_DEPTH", "30")

	var got *cli.Command
	cmd := serveCommand()
	cmd.Action = func(_ context.Context, c *cli.Command) error { got = c; return nil }
	root := &cli.Command{Name: "chunklock", Commands: []*cli.Command{cmd}, Writer: io.Discard, ErrWriter: io.Discard}
	require.NoError(t, root.Run(t.Context(), []string{"chunklock", "serve", "--config", file, "--max-depth", "40"}))
	require.Equal(t, "127.0.0.1:1111", got.String("listen"), "from the file")
	require.Equal(t, "memory", got.String("store"), "from the file")
	require.Equal(t, 7*time.Second, got.Duration("reaper-interval"), "the environment beats the file")
	require.Equal(t, int64(40), got.Int64("max-depth"), "a flag beats the environment")
	require.False(t, got.Bool("introspection"), "from the file")
	require.Equal(t, 30*time.Second, got.Duration("request-timeout"), "the default")

	require.NoError(t, os.WriteFile(file, []byte("lisen: 127.0.0.1:1\n"), 0o600))
	var stderr bytes.Buffer
	require.Equal(t, 1, run(t.Context(), []string{"chunklock", "serve", "--config", file}, io.Discard, &stderr))
	require.Contains(t, stderr.String(), `unknown setting "lisen"`)
}

// TestServeHelp: --help explains every flag with its environment variable
// and its default.
func TestServeHelp(t *testing.T) {
	var stdout bytes.Buffer
	require.Equal(t, 0, run(t.Context(), []string{"chunklock", "serve", "--help"}, &stdout, io.Discard))
	for _, f := range serveCommand().Flags {
		name := f.Names()[0]
		line := ""
		for _, l := range strings.Split(stdout.String(), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "--"+name+" ") {
				line = l
			}
		}
		require.NotEmpty(t, line, "--%s is not in the help", name)
		require.Contains(t, line, "(default: ", "--%s shows no default", name)
		require.Contains(t, line, "[$CHUNKLOCK_"+strings.ToUpper(strings.ReplaceAll(name, "-", "_"))+"]", "--%s shows no environment variable", name)
	}
}
