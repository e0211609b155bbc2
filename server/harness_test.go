package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/auth"
	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/etcd/embedded"
	"github.com/chunklock/chunklock/internal/teststores"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/server"
)

// storeKind opens n Store handles sharing one database, as n server
// replicas would.
type storeKind = teststores.Kind

// storeKinds is every backend the end-to-end tests run on.
var storeKinds = teststores.Kinds("server")

// forEachStore runs f once per store kind, as subtests.
func forEachStore(t *testing.T, f func(t *testing.T, kind storeKind)) {
	for _, k := range storeKinds {
		t.Run(k.Name, func(t *testing.T) { f(t, k) })
	}
}

// TestMain stops the shared embedded etcd member after the tests.
func TestMain(m *testing.M) { teststores.Main(m) }

func testEtcd(t *testing.T) *embedded.Server { return teststores.Etcd(t) }
func testDSN(t *testing.T) string            { return teststores.PostgresDSN(t) }
func freshSchema(t *testing.T) string        { return teststores.FreshSchema(t, "server") }

// Principals of the tokens file every authenticated stack uses.
const (
	admin   = "admin"
	reader  = "reader"
	runnerA = "runner-a" // may operate job ja
	runnerB = "runner-b" // may operate job jb
	nobody  = ""         // no Authorization header
)

// stack is one server over HTTP.
type stack struct {
	t      *testing.T
	url    string
	srv    *server.Server
	store  backends.Store
	tokens map[string]string
	logs   *bytes.Buffer
	// cfgTokens is the parsed tokens file, for replicas.
	cfgTokens *auth.Tokens
}

type stackOption func(*server.Config)

func withConfig(f func(*server.Config)) stackOption { return f }

// newStack serves store over httptest with fresh test tokens (admin,
// reader, runner-a for job ja, runner-b for job jb).
func newStack(t *testing.T, store backends.Store, opts ...stackOption) *stack {
	t.Helper()
	tokens := map[string]string{}
	var file strings.Builder
	for _, e := range []struct {
		name string
		role auth.Role
		jobs []string
	}{{admin, auth.RoleAdmin, nil}, {reader, auth.RoleReader, nil}, {runnerA, auth.RoleRunner, []string{"ja"}}, {runnerB, auth.RoleRunner, []string{"jb"}}} {
		tok, entry, err := auth.NewToken(e.name, e.role, e.jobs)
		require.NoError(t, err)
		tokens[e.name] = tok
		fmt.Fprintf(&file, "- name: %s\n  sha256: %s\n  role: %s\n", entry.Name, entry.SHA256, entry.Role)
		if len(e.jobs) > 0 {
			fmt.Fprintf(&file, "  jobs: [%s]\n", strings.Join(e.jobs, ", "))
		}
	}
	parsed, err := auth.ParseTokens([]byte(file.String()))
	require.NoError(t, err)
	cfg := server.DefaultConfig()
	cfg.Store, cfg.Keyring, cfg.Tokens = store, age.New(), parsed
	return serveStack(t, cfg, tokens, opts...)
}

// newReplica serves store as another replica of s: same tokens, same
// settings otherwise default.
func newReplica(t *testing.T, store backends.Store, s *stack, opts ...stackOption) *stack {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Store, cfg.Keyring, cfg.Tokens = store, age.New(), s.cfgTokens
	return serveStack(t, cfg, s.tokens, opts...)
}

// newOpenStack serves store with no tokens: every request is anonymous.
func newOpenStack(t *testing.T, store backends.Store, opts ...stackOption) *stack {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Store, cfg.Keyring = store, age.New()
	return serveStack(t, cfg, map[string]string{}, opts...)
}

func serveStack(t *testing.T, cfg server.Config, tokens map[string]string, opts ...stackOption) *stack {
	logs := &bytes.Buffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(&lockedWriter{w: logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := server.New(cfg)
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &stack{t: t, url: hs.URL, srv: srv, store: cfg.Store, tokens: tokens, logs: logs, cfgTokens: cfg.Tokens}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// gqlError is one entry of a response's errors.
type gqlError struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

// response is a GraphQL response as a client sees it.
type response struct {
	Status int
	Data   map[string]json.RawMessage `json:"data"`
	Errors []gqlError                 `json:"errors"`
	Body   string                     `json:"-"`
}

// code returns the extensions.code of the only error, failing otherwise.
func (r response) code(t *testing.T) string {
	t.Helper()
	require.Len(t, r.Errors, 1, "want exactly one error; body: %s", r.Body)
	code, _ := r.Errors[0].Extensions["code"].(string)
	return code
}

// field decodes data[name] into v.
func (r response) field(t *testing.T, name string, v any) {
	t.Helper()
	raw, ok := r.Data[name]
	require.True(t, ok, "no data.%s in %s", name, r.Body)
	require.NoError(t, json.Unmarshal(raw, v), "data.%s: %s", name, raw)
}

type request struct {
	who      string
	query    string
	vars     map[string]any
	jobKey   string
	method   string
	rawBody  string
	ctype    string
	noAssert bool
	// timeout, when set, bounds the whole exchange, so that a server that
	// hangs fails the test instead of stalling it.
	timeout time.Duration
}

// send sends a request and returns the response.
func (s *stack) send(r request) response {
	s.t.Helper()
	var body io.Reader
	method := r.method
	if method == "" {
		method = http.MethodPost
	}
	target := s.url + "/graphql"
	if method == http.MethodPost {
		if r.rawBody != "" {
			body = strings.NewReader(r.rawBody)
		} else {
			b, err := json.Marshal(map[string]any{"query": r.query, "variables": r.vars})
			require.NoError(s.t, err)
			body = bytes.NewReader(b)
		}
	}
	req, err := http.NewRequest(method, target, body)
	require.NoError(s.t, err)
	if method == http.MethodGet && r.query != "" {
		q := req.URL.Query()
		q.Set("query", r.query)
		if r.vars != nil {
			b, _ := json.Marshal(r.vars)
			q.Set("variables", string(b))
		}
		req.URL.RawQuery = q.Encode()
	}
	ctype := r.ctype
	if ctype == "" {
		ctype = "application/json"
	}
	req.Header.Set("Content-Type", ctype)
	if r.who != nobody {
		tok, ok := s.tokens[r.who]
		if !ok {
			tok = r.who // a literal token (or garbage) to send as is
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if r.jobKey != "" {
		req.Header.Set(auth.JobKeyHeader, r.jobKey)
	}
	resp, err := (&http.Client{Timeout: r.timeout}).Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	out := response{Status: resp.StatusCode, Body: string(raw)}
	require.NoError(s.t, json.Unmarshal(raw, &out), "response is not JSON: %s", raw)
	require.Less(s.t, resp.StatusCode, 500, "the server answered %d: %s", resp.StatusCode, raw)
	for _, e := range out.Errors {
		require.NotEmpty(s.t, e.Extensions["code"], "an error without extensions.code: %s", raw)
	}
	return out
}

// ok runs a query as who and requires it to succeed.
func (s *stack) ok(who, query string, vars map[string]any) response {
	s.t.Helper()
	r := s.send(request{who: who, query: query, vars: vars})
	require.Empty(s.t, r.Errors, "unexpected errors: %s", r.Body)
	return r
}

// fails runs a query as who and returns the code of its only error.
func (s *stack) fails(who, query string, vars map[string]any) string {
	s.t.Helper()
	return s.send(request{who: who, query: query, vars: vars}).code(s.t)
}

// vars builds a variables map from alternating names and values.
func vars(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}
