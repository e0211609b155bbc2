package ui_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestPagesServeNoOutsideAsset: /, /ui and their assets come from the
// server itself, under a policy that lets a page load nothing from another
// origin.
func TestPagesServeNoOutsideAsset(t *testing.T) {
	s := newStack(t, true)
	for _, path := range []string{"/", "/ui", "/ui/", "/assets/playground.js", "/assets/playground.css", "/assets/dashboard.js", "/assets/dashboard.css", "/assets/layout.js"} {
		resp, err := http.Get(s.url + path)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'self'", path)
		if strings.HasSuffix(path, "/") || path == "/ui" {
			require.Contains(t, resp.Header.Get("Content-Type"), "text/html", path)
			for _, attr := range []string{`src="http`, `href="http`, `src="//`, `href="//`} {
				require.NotContains(t, string(body), attr, path)
			}
		}
	}
	resp, err := http.Get(s.url + "/assets/nothing.js")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// TestPlaygroundOffline: the playground loads, runs a query and shows the
// schema in its Docs pane while every request beyond 127.0.0.1 is refused
// (newTab fails the test if the page tried one).
func TestPlaygroundOffline(t *testing.T) {
	s := newStack(t, true)
	s.must(t, "", `mutation { upsertDataset(input: {id: "offline-check"}) { id } }`, nil)
	tb := newTab(t)
	q := url.QueryEscape(`{ viewer { name role } datasets { id } }`)
	tb.do(t,
		chromedp.Navigate(s.url+"/?query="+q),
		chromedp.WaitVisible(chromedp.CSS(`.graphiql-execute-button`)),
		chromedp.Click(chromedp.CSS(`.graphiql-execute-button`)),
	)
	result := tb.poll(t, `(() => { const t = (document.querySelector('.result-window') || {}).innerText || ''; return t.includes('offline-check') && t })()`)
	tb.screenshot(t, "playground")
	tb.do(t,
		chromedp.Click(chromedp.CSS(`button[aria-label="Show Documentation Explorer"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.graphiql-doc-explorer`)),
	)
	docs := tb.poll(t, `(() => { const t = (document.querySelector('.graphiql-doc-explorer') || {}).innerText || ''; return t.includes('Query') && t })()`)
	require.Contains(t, result, `"anonymous"`)
	require.Contains(t, docs, "Root Types")

	// The editor opens on its introduction, every line of it in sight (a
	// server of its own: the editor keeps the last query per origin).
	fresh := newStack(t, true)
	intro := newTab(t)
	intro.do(t, chromedp.Navigate(fresh.url+"/"), chromedp.WaitVisible(chromedp.CSS(`.graphiql-execute-button`)))
	text := intro.poll(t, `(() => { const t = (document.querySelector('.graphiql-query-editor') || {}).innerText || ''; return t.includes('websocket') && t })()`)
	require.Contains(t, text, "lists every field")
	intro.screenshot(t, "playground-intro")
}

// TestGuardRefusesOutsideRequests: the tabs' guard sees and refuses a
// request to another host, so the tests above would fail on one.
func TestGuardRefusesOutsideRequests(t *testing.T) {
	s := newStack(t, true)
	tb := newTab(t)
	tb.expectOutside = true
	tb.do(t, chromedp.Navigate(s.url+"/healthz"))
	// Outside the page's own policy: a script that fetches another host.
	got := tb.poll(t, `fetch('http://outside.invalid/x').then(() => 'sent', e => 'refused: ' + e.message)`)
	require.Contains(t, got, "refused")
	tb.mu.Lock()
	defer tb.mu.Unlock()
	require.Contains(t, tb.outside, "http://outside.invalid/x")
}
