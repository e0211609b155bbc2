package vault_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/keys/keystest"
	"github.com/chunklock/chunklock/keys/vault"
)

const (
	fakeServerToken = "hvs.fake-server-token-0123456789"
	fakeJobToken    = "hvs.fake-job-token-9876543210abcd"
	fakeCiphertext  = "vault:v1:c2VjcmV0LWNpcGhlcnRleHQtYnl0ZXM="
)

// fake answers every request with status and body, recording what it saw.
type fake struct {
	status int
	body   string

	mu      sync.Mutex
	tokens  []string
	paths   []string
	bodies  []string
	request atomic.Int32
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.request.Add(1)
	b := make([]byte, r.ContentLength)
	_, _ = r.Body.Read(b)
	f.mu.Lock()
	f.tokens = append(f.tokens, r.Header.Get("X-Vault-Token"))
	f.paths = append(f.paths, r.URL.Path)
	f.bodies = append(f.bodies, string(b))
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.status)
	_, _ = w.Write([]byte(f.body))
}

func fakeKeyring(t *testing.T, addr string, retries int) *vault.Keyring {
	t.Helper()
	cfg := vault.DefaultConfig()
	cfg.Address, cfg.Token = addr, fakeServerToken
	cfg.Timeout = 2 * time.Second
	cfg.Retries = retries
	cfg.RetryWaitMin, cfg.RetryWaitMax = 10*time.Millisecond, 20*time.Millisecond
	k, err := vault.New(cfg)
	require.NoError(t, err)
	return k
}

var fakeSecrets = [][]byte{[]byte(fakeServerToken), []byte(fakeJobToken), []byte(fakeCiphertext), []byte("plaintext-secret-value")}

// Decrypt sends the job's token (never the server's), the batch in one
// request, and maps Vault's answers to codes.
func TestDecryptAnswers(t *testing.T) {
	t.Setenv("VAULT_TOKEN", "hvs.from-the-environment")
	plain := base64.StdEncoding.EncodeToString([]byte("plaintext-secret-value"))
	batch := func(items ...string) string {
		b, _ := json.Marshal(map[string]any{"data": map[string]any{"batch_results": json.RawMessage("[" + strings.Join(items, ",") + "]")}})
		return string(b)
	}
	for _, tc := range []struct {
		name   string
		status int
		body   string
		code   backends.Code
	}{
		{"ok", 200, batch(`{"plaintext":"`+plain+`"}`, `{"plaintext":"`+plain+`"}`), ""},
		{"forbidden", 403, `{"errors":["1 error occurred:\n\t* permission denied\n\n"]}`, backends.CodeForbidden},
		{"sealed", 503, `{"errors":["Vault is sealed"]}`, backends.CodeUnavailable},
		{"rate limited", 429, `{"errors":["request path \"transit/decrypt\": rate limit quota exceeded"]}`, backends.CodeUnavailable},
		{"proxy error page", 502, `<html>bad gateway</html>`, backends.CodeUnavailable},
		{"no key", 400, `{"errors":["encryption key not found"]}`, backends.CodeNotFound},
		{"retired version", 400, batch(`{"plaintext":"`+plain+`"}`, `{"error":"ciphertext or signature version is disallowed by policy (too old)"}`), backends.CodeForbidden},
		{"other key", 400, batch(`{"error":"cipher: message authentication failed"}`, `{"error":"cipher: message authentication failed"}`), backends.CodeForbidden},
		{"invalid", 400, batch(`{"error":"invalid ciphertext: could not decode base64"}`, `{"plaintext":"`+plain+`"}`), backends.CodeInvalidArgument},
		{"unknown item error", 400, batch(`{"error":"something else"}`, `{"plaintext":"`+plain+`"}`), backends.CodeInternal},
		{"short batch", 200, batch(`{"plaintext":"` + plain + `"}`), backends.CodeInternal},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			f := &fake{status: tc.status, body: tc.body}
			srv := httptest.NewServer(f)
			defer srv.Close()
			k := fakeKeyring(t, srv.URL, 0)
			got, err := k.Decrypt(context.Background(), "job-1", "chunklock-job-1", fakeJobToken, [][]byte{[]byte(fakeCiphertext), []byte(fakeCiphertext)})
			if tc.code == "" {
				require.NoError(t, err)
				require.Equal(t, [][]byte{[]byte("plaintext-secret-value"), []byte("plaintext-secret-value")}, got)
			} else {
				keystest.RequireCode(t, err, tc.code, fakeSecrets...)
				require.Nil(t, got)
			}
			require.EqualValues(t, 1, f.request.Load())
			require.Equal(t, []string{fakeJobToken}, f.tokens)
			require.Equal(t, []string{"/v1/transit/decrypt/chunklock-job-1"}, f.paths)
			require.JSONEq(t, `{"batch_input":[{"ciphertext":"`+fakeCiphertext+`"},{"ciphertext":"`+fakeCiphertext+`"}]}`, f.bodies[0])
		})
	}
}

// Transient answers are retried (Retries times) before UNAVAILABLE;
// Encrypt uses the server's token, not VAULT_TOKEN from the environment.
func TestEncryptRetriesThenUnavailable(t *testing.T) {
	t.Setenv("VAULT_TOKEN", "hvs.from-the-environment")
	f := &fake{status: 503, body: `{"errors":["Vault is sealed"]}`}
	srv := httptest.NewServer(f)
	defer srv.Close()
	k := fakeKeyring(t, srv.URL, 2)
	_, err := k.Encrypt(context.Background(), "job-1", "chunklock-job-1", []byte("plaintext-secret-value"))
	keystest.RequireCode(t, err, backends.CodeUnavailable, fakeSecrets...)
	require.EqualValues(t, 3, f.request.Load())
	for _, tok := range f.tokens {
		require.Equal(t, fakeServerToken, tok)
	}

	// A refusal of the server's own token is the operator's to fix: INTERNAL.
	f2 := &fake{status: 403, body: `{"errors":["permission denied"]}`}
	srv2 := httptest.NewServer(f2)
	defer srv2.Close()
	_, err = fakeKeyring(t, srv2.URL, 2).Encrypt(context.Background(), "job-1", "chunklock-job-1", []byte("plaintext-secret-value"))
	keystest.RequireCode(t, err, backends.CodeInternal, fakeSecrets...)
	require.Contains(t, err.Error(), "ServerPolicy")
	require.EqualValues(t, 1, f2.request.Load(), "a 403 is not retried")
}

// A Vault that accepts connections but never answers: the keyring's timeout
// bounds the call and the answer is UNAVAILABLE.
func TestHungVaultIsUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	var conns sync.WaitGroup
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() { defer conns.Done(); <-done; c.Close() }()
		}
	}()
	cfg := vault.DefaultConfig()
	cfg.Address, cfg.Token = "http://"+l.Addr().String(), fakeServerToken
	cfg.Timeout = 300 * time.Millisecond
	k, err := vault.New(cfg)
	require.NoError(t, err)
	start := time.Now()
	_, err = k.Decrypt(context.Background(), "job-1", "chunklock-job-1", fakeJobToken, [][]byte{[]byte(fakeCiphertext)})
	keystest.RequireCode(t, err, backends.CodeUnavailable, fakeSecrets...)
	t.Logf("UNAVAILABLE after %v: %v", time.Since(start), err)
}

// Nothing unreachable, refused before any request: wrong public part,
// missing key, garbage ciphertext.
func TestRefusedLocally(t *testing.T) {
	f := &fake{status: 500}
	srv := httptest.NewServer(f)
	defer srv.Close()
	k := fakeKeyring(t, srv.URL, 0)
	ctx := context.Background()
	_, err := k.Decrypt(ctx, "job-1", "chunklock-job-2", fakeJobToken, [][]byte{[]byte(fakeCiphertext)})
	keystest.RequireCode(t, err, backends.CodeInvalidArgument, fakeSecrets...)
	_, err = k.Decrypt(ctx, "job-1", "chunklock-job-1", "", [][]byte{[]byte(fakeCiphertext)})
	keystest.RequireCode(t, err, backends.CodeForbidden, fakeSecrets...)
	_, err = k.Decrypt(ctx, "job-1", "chunklock-job-1", fakeJobToken, [][]byte{[]byte("vault:v1:not base64!")})
	keystest.RequireCode(t, err, backends.CodeInvalidArgument, fakeSecrets...)
	_, err = k.Encrypt(ctx, "job-1", "other-job-1", []byte("plaintext-secret-value"))
	keystest.RequireCode(t, err, backends.CodeInvalidArgument, fakeSecrets...)
	got, err := k.Decrypt(ctx, "job-1", "chunklock-job-1", fakeJobToken, nil)
	require.NoError(t, err)
	require.Empty(t, got)
	require.EqualValues(t, 0, f.request.Load())
}

func TestKeyVersion(t *testing.T) {
	for in, want := range map[string]int{
		"vault:v1:AAAA":  1,
		"vault:v12:AAAA": 12,
		"vault:v0:AAAA":  0,
		"vault:v1:":      0,
		"vault:vx:AAAA":  0,
		"vault:v1:A!AA":  0,
		"vault:v1AAAA":   0,
		"age-encryption": 0,
		"":               0,
	} {
		got, err := vault.KeyVersion([]byte(in))
		if want == 0 {
			require.Error(t, err, in)
		} else {
			require.NoError(t, err, in)
			require.Equal(t, want, got, in)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	good := vault.DefaultConfig()
	good.Address, good.Token = "https://vault.example:8200", "hvs.x"
	require.NoError(t, good.Validate())
	for name, mod := range map[string]func(*vault.Config){
		"no address":          func(c *vault.Config) { c.Address = "" },
		"not a URL":           func(c *vault.Config) { c.Address = "vault.example:8200" },
		"credentials in URL":  func(c *vault.Config) { c.Address = "https://user:pw@vault.example" },
		"no token":            func(c *vault.Config) { c.Token = "" },
		"token with newline":  func(c *vault.Config) { c.Token = "hvs.x\n" },
		"bad mount":           func(c *vault.Config) { c.Mount = "trans it" },
		"empty prefix":        func(c *vault.Config) { c.Prefix = "" },
		"glob in prefix":      func(c *vault.Config) { c.Prefix = "chunklock-*" },
		"uppercase prefix":    func(c *vault.Config) { c.Prefix = "Chunklock-" },
		"no timeout":          func(c *vault.Config) { c.Timeout = 0 },
		"negative retries":    func(c *vault.Config) { c.Retries = -1 },
		"retries and no wait": func(c *vault.Config) { c.RetryWaitMin = 0 },
	} {
		c := good
		mod(&c)
		require.Error(t, c.Validate(), name)
		_, err := vault.New(c)
		require.Error(t, err, name)
	}
}

// The server's policy never grants decrypt and names the configured mount
// and prefix only.
func TestServerPolicyText(t *testing.T) {
	p := vault.ServerPolicy("ck-", "/kv-transit/")
	require.Contains(t, p, `path "kv-transit/decrypt/ck-*" {
  capabilities = ["deny"]
}`)
	require.Contains(t, p, `path "kv-transit/encrypt/ck-*" {
  capabilities = ["update"]
}`)
	require.Contains(t, p, `path "auth/token/create/ck-job" {`)
	require.NotContains(t, p, "sys/policies")
	require.NotContains(t, p, `"sudo"`)
	for _, line := range strings.Split(p, "\n") {
		if strings.HasPrefix(line, "path ") {
			require.Regexp(t, `^path "(kv-transit/[a-z+/]+/ck-\*|auth/token/create/ck-job)" \{$`, line)
		}
	}
	tpl := vault.JobPolicyTemplate("ck-", "kv-transit", "auth_token_1234")
	require.Contains(t, tpl, `path "kv-transit/decrypt/{{identity.entity.aliases.auth_token_1234.name}}"`)
}
