package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/auth"
	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/server"
)

// The browser the tests drive: CHUNKLOCK_CHROMIUM, else chromium on the
// PATH (scripts/browser.sh installs it). Without one the browser tests
// skip, unless CHUNKLOCK_REQUIRE_BROWSER is set (CI sets it): then they
// fail.
var (
	browserPath string
	browserErr  error
	browserCtx  context.Context
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	browserPath = os.Getenv("CHUNKLOCK_CHROMIUM")
	if browserPath == "" {
		for _, name := range []string{"chromium", "chromium-browser"} {
			if p, err := exec.LookPath(name); err == nil {
				browserPath = p
				break
			}
		}
	}
	if browserPath == "" {
		browserErr = fmt.Errorf("no chromium: install it with scripts/browser.sh or set CHUNKLOCK_CHROMIUM")
		return m.Run()
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browserPath),
		chromedp.NoSandbox, // the tests may run as root
		chromedp.DisableGPU,
		chromedp.WindowSize(1400, 1000),
		// No name resolves: a page can reach 127.0.0.1 only. The Fetch
		// interception in newTab records and refuses anything else.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	if err := chromedp.Do(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "ui: starting %s: %v\n", browserPath, err)
		return 1
	}
	browserCtx = ctx
	return m.Run()
}

func needBrowser(t *testing.T) {
	t.Helper()
	if browserErr != nil {
		if os.Getenv("CHUNKLOCK_REQUIRE_BROWSER") != "" {
			t.Fatalf("CHUNKLOCK_REQUIRE_BROWSER is set: %v", browserErr)
		}
		t.Skip(browserErr)
	}
}

// tab is one browser tab whose every request to a host other than
// 127.0.0.1 is recorded and refused; the test fails if there was one.
type tab struct {
	ctx     context.Context
	mu      sync.Mutex
	outside []string
	// expectOutside is set by the test of the guard itself.
	expectOutside bool
}

func newTab(t *testing.T) *tab {
	t.Helper()
	needBrowser(t)
	ctx, cancel := chromedp.NewContext(browserCtx)
	tb := &tab{ctx: ctx}
	// Open the tab, then watch every request it makes.
	require.NoError(t, chromedp.Do(ctx))
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			tb.allowed(e.Request.URL)
		case *network.EventWebSocketCreated:
			tb.allowed(e.URL)
		}
	}))
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			if tb.allowed(ev.Request.URL) {
				_, _ = chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
			} else {
				_, _ = chromedp.Call(ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
			}
		}
	}()
	_, err := chromedp.Call(ctx, network.Enable, network.EnableParams{})
	require.NoError(t, err)
	_, err = chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}})
	require.NoError(t, err)
	t.Cleanup(func() {
		cancel()
		tb.mu.Lock()
		defer tb.mu.Unlock()
		if len(tb.outside) > 0 && !tb.expectOutside {
			t.Errorf("the page sent requests beyond 127.0.0.1: %q", tb.outside)
		}
	})
	return tb
}

// allowed tells whether a request URL stays on 127.0.0.1, recording it
// when it does not. Inline data (data:, blob:, about:) is no request.
func (tb *tab) allowed(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		tb.record(raw)
		return false
	}
	switch u.Scheme {
	case "data", "blob", "about":
		return true
	case "http", "https", "ws", "wss":
		if u.Hostname() == "127.0.0.1" {
			return true
		}
	}
	tb.record(raw)
	return false
}

func (tb *tab) record(u string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.outside = append(tb.outside, u)
}

// do runs steps in the tab, each step bounded by a minute.
func (tb *tab) do(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, time.Minute)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, steps...))
}

// poll waits until the JavaScript expression is truthy and returns its
// value as a string (JSON for anything but a string).
func (tb *tab) poll(t *testing.T, expr string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Poll[any](expr, chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil {
		body, _ := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 2000) : ''`))
		t.Fatalf("waiting for %s: %v\nthe page shows:\n%s", expr, err, body)
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// eval returns the value of a JavaScript expression.
func eval[T any](t *testing.T, tb *tab, expr string) T {
	t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, "evaluating %s", expr)
	return v
}

// screenshot writes the page to CHUNKLOCK_SCREENSHOTS (default: a
// directory of the test's own) as name.png.
func (tb *tab) screenshot(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv("CHUNKLOCK_SCREENSHOTS")
	if dir == "" {
		dir = screenshotDir(t)
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := filepath.Join(dir, name+".png")
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)
	return path
}

var (
	shotsOnce sync.Once
	shotsDir  string
)

func screenshotDir(t *testing.T) string {
	shotsOnce.Do(func() {
		d, err := os.MkdirTemp("", "chunklock-ui-screenshots-")
		require.NoError(t, err)
		shotsDir = d
	})
	return shotsDir
}

// stack is a chunklock server (memory store) over HTTP on 127.0.0.1.
type stack struct {
	url    string
	tokens map[string]string // by role name: admin, reader, runner
	store  backends.Store
}

// newStack serves a fresh memory store with an admin, a reader and a
// runner token (the runner may operate every job in runnerJobs); with open
// it runs without tokens instead.
func newStack(t *testing.T, open bool, runnerJobs ...string) *stack {
	t.Helper()
	cfg := server.DefaultConfig()
	b := memory.New()
	t.Cleanup(func() { _ = b.Close() })
	cfg.Store, cfg.Keyring = engine.New(b), age.New()
	s := &stack{tokens: map[string]string{}, store: cfg.Store}
	if !open {
		var file strings.Builder
		for _, e := range []struct {
			name string
			role auth.Role
			jobs []string
		}{{"admin", auth.RoleAdmin, nil}, {"reader", auth.RoleReader, nil}, {"runner", auth.RoleRunner, runnerJobs}} {
			tok, entry, err := auth.NewToken(e.name, e.role, e.jobs)
			require.NoError(t, err)
			s.tokens[e.name] = tok
			fmt.Fprintf(&file, "- name: %s\n  sha256: %s\n  role: %s\n", entry.Name, entry.SHA256, entry.Role)
			if len(e.jobs) > 0 {
				fmt.Fprintf(&file, "  jobs: [%s]\n", strings.Join(e.jobs, ", "))
			}
		}
		parsed, err := auth.ParseTokens([]byte(file.String()))
		require.NoError(t, err)
		cfg.Tokens = parsed
	}
	srv, err := server.New(cfg)
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	s.url = hs.URL
	return s
}

type gqlError struct {
	Message    string `json:"message"`
	Extensions struct {
		Code string `json:"code"`
	} `json:"extensions"`
}

// gql runs one operation as role ("" on an open server) and returns its
// data and errors.
func (s *stack) gql(t *testing.T, role, query string, vars map[string]any) (map[string]any, []gqlError) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, s.url+"/graphql", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if tok := s.tokens[role]; tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Data   map[string]any `json:"data"`
		Errors []gqlError     `json:"errors"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.Data, out.Errors
}

// must runs an operation that must succeed.
func (s *stack) must(t *testing.T, role, query string, vars map[string]any) map[string]any {
	t.Helper()
	data, errs := s.gql(t, role, query, vars)
	require.Empty(t, errs, "%s", query)
	return data
}
