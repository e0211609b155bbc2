package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/webhook"
)

// TestServeWebhooks: webhooks and their secret file come from the config
// file (a list of URLs); a HOLD made through GraphQL reaches both, signed
// with the secret, and /metrics counts the deliveries. The secret is never
// printed.
func TestServeWebhooks(t *testing.T) {
	const secret = "s3cret-for-webhooks"
	type hit struct {
		body []byte
		sig  string
	}
	var mu sync.Mutex
	hits := map[string][]hit{}
	receiver := func(name string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			defer mu.Unlock()
			hits[name] = append(hits[name], hit{b, r.Header.Get(webhook.HeaderSignature)})
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	one, two := receiver("one"), receiver("two")
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(secretFile, []byte(secret+"\n"), 0o600))
	cfg := filepath.Join(dir, "chunklock.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("store: \"memory:\"\nlisten: 127.0.0.1:0\n"+
		"webhook:\n  - "+one.URL+"/hook\n  - "+two.URL+"/hook?token=abc\n"+
		"webhook-secret-file: "+secretFile+"\n"), 0o600))

	url, stderr, stop := startServe(t, "--config", cfg)
	require.Contains(t, stderr.String(), "alerts to webhook "+one.URL+"/hook\n")
	require.Contains(t, stderr.String(), "alerts to webhook "+two.URL+"/hook\n", "the query is not shown")
	// Alerts reach a webhook from the moment a replica delivers it.
	require.Eventually(t, func() bool {
		d := delivering(getBody(t, url+"/metrics"))
		return len(d) == 2 && strings.HasSuffix(d[0], "} 1") && strings.HasSuffix(d[1], "} 1")
	}, 30*time.Second, 20*time.Millisecond)

	res := postGraphQL(t, url, "", `mutation { upsertDataset(input: {id: "src"}) { id } }`)
	require.Nil(t, res["errors"], "%v", res)
	res = postGraphQL(t, url, "", `mutation { hold(dataset: "src", dataid: "2026-01-01", reason: "bad feed") { status } }`)
	require.Nil(t, res["errors"], "%v", res)

	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(hits["one"]) == 1 && len(hits["two"]) == 1
	}, 30*time.Second, 10*time.Millisecond)
	mu.Lock()
	for _, name := range []string{"one", "two"} {
		h := hits[name][0]
		require.True(t, webhook.Verify([]byte(secret), h.body, h.sig), "%s: the signature verifies with the secret of the file", name)
		require.Contains(t, string(h.body), `"kind":"hold","dataset":"src","dataid":"2026-01-01"`)
	}
	mu.Unlock()
	// The delivery is counted once the receiver's answer is back, a moment
	// after the receiver has the alert.
	require.Eventually(t, func() bool {
		return strings.Contains(getBody(t, url+"/metrics"),
			`chunklock_webhook_alerts_delivered_total{kind="hold",webhook="`+one.URL+`/hook"} 1`)
	}, 30*time.Second, 10*time.Millisecond)
	require.Equal(t, 0, stop(), stderr.String())
	require.NotContains(t, stderr.String(), secret)
	require.NotContains(t, stderr.String(), "token=abc")
}

// delivering returns the chunklock_webhook_delivering samples of a
// /metrics page.
func delivering(metrics string) []string {
	var out []string
	for _, l := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(l, "chunklock_webhook_delivering{") {
			out = append(out, l)
		}
	}
	return out
}

// TestServeWebhookNeedsSecret: a webhook without a secret is refused.
func TestServeWebhookNeedsSecret(t *testing.T) {
	var stderr syncBuffer
	code := run(context.Background(), []string{"chunklock", "serve", "--store", "memory:", "--listen", "127.0.0.1:0",
		"--webhook", "http://127.0.0.1:1/hook"}, io.Discard, &stderr)
	require.NotEqual(t, 0, code)
	require.Contains(t, stderr.String(), "--webhook needs a secret")
}

// TestServeBadWebhookSecretChangesNothing: a webhook setting serve refuses
// is refused before the store is opened: no data directory is made.
func TestServeBadWebhookSecretChangesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.secret")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	data := filepath.Join(dir, "data")
	var stdout, stderr lockedBuffer
	code := run(t.Context(), []string{"chunklock", "serve", "--data-dir", data, "--listen", "127.0.0.1:0",
		"--webhook", "http://127.0.0.1:9/hook", "--webhook-secret-file", empty}, &stdout, &stderr)
	require.Equal(t, 1, code, stderr.String())
	require.Contains(t, stderr.String(), "--webhook-secret-file "+empty+" is empty")
	_, err := os.Stat(data)
	require.True(t, os.IsNotExist(err), "serve made %s", data)
}
