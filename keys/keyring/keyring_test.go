package keyring_test

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/keys/keyring"
	"github.com/chunklock/chunklock/keys/vault"
)

func env(m map[string]string) keyring.Option {
	return keyring.WithGetenv(func(k string) string { return m[k] })
}

func TestAgeIsTheDefault(t *testing.T) {
	for _, u := range []string{"", "age", "age://", " "} {
		k, err := keyring.Open(u, env(nil))
		require.NoError(t, err, u)
		require.Equal(t, "age", k.Kind(), u)
	}
}

func TestVaultURL(t *testing.T) {
	k, err := keyring.Open("vault://vault.example:8200?mount=ck/transit&prefix=ck-&timeout=3s&retries=0&namespace=team",
		env(map[string]string{"VAULT_TOKEN": "hvs.server", "VAULT_NAMESPACE": "ignored"}))
	require.NoError(t, err)
	require.Equal(t, "vault", k.Kind())
	cfg := k.(*vault.Keyring).Config()
	require.Equal(t, "https://vault.example:8200", cfg.Address)
	require.Equal(t, "ck/transit", cfg.Mount)
	require.Equal(t, "ck-", cfg.Prefix)
	require.Equal(t, 3*time.Second, cfg.Timeout)
	require.Equal(t, 0, cfg.Retries)
	require.Equal(t, "team", cfg.Namespace)
	require.Equal(t, "ck-job-1", k.(*vault.Keyring).KeyName("job-1"))

	k, err = keyring.Open("vault://127.0.0.1:8200?tls=false", env(map[string]string{"VAULT_TOKEN": "hvs.server"}))
	require.NoError(t, err)
	cfg = k.(*vault.Keyring).Config()
	require.Equal(t, "http://127.0.0.1:8200", cfg.Address)
	require.Equal(t, vault.DefaultMount, cfg.Mount)
	require.Equal(t, vault.DefaultPrefix, cfg.Prefix)
	require.Nil(t, cfg.TLS)

	_, err = keyring.Open("vault://127.0.0.1:8200", env(map[string]string{"VAULT_TOKEN": "hvs.server", "VAULT_CACERT": "/nonexistent/ca.pem"}))
	require.ErrorContains(t, err, "CA")
}

// TLS: the CA from VAULT_CACERT verifies the server; without it the
// connection is refused as UNAVAILABLE.
func TestVaultTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"data":{"ciphertext":"vault:v1:AAAA"}}`))
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	host := strings.TrimPrefix(srv.URL, "https://")

	k, err := keyring.Open("vault://"+host+"?retries=0", env(map[string]string{"VAULT_TOKEN": "hvs.server", "VAULT_CACERT": ca}))
	require.NoError(t, err)
	_, err = k.Encrypt(context.Background(), "job-1", "chunklock-job-1", []byte("secret"))
	require.NoError(t, err)

	k, err = keyring.Open("vault://"+host+"?retries=0", env(map[string]string{"VAULT_TOKEN": "hvs.server"}))
	require.NoError(t, err)
	_, err = k.Encrypt(context.Background(), "job-1", "chunklock-job-1", []byte("secret"))
	require.Equal(t, backends.CodeUnavailable, backends.CodeOf(err), "%v", err)
}

// vault:// without a host uses VAULT_ADDR, and the token always comes from
// VAULT_TOKEN: the keyring sends it to that address.
func TestVaultFromEnvironment(t *testing.T) {
	var token string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token = r.Header.Get("X-Vault-Token")
		_, _ = w.Write([]byte(`{"data":{"ciphertext":"vault:v1:AAAA"}}`))
	}))
	defer srv.Close()
	k, err := keyring.Open("vault://", env(map[string]string{"VAULT_ADDR": srv.URL, "VAULT_TOKEN": "hvs.from-env"}))
	require.NoError(t, err)
	c, err := k.Encrypt(context.Background(), "job-1", "chunklock-job-1", []byte("secret"))
	require.NoError(t, err)
	require.Equal(t, "vault:v1:AAAA", string(c))
	require.Equal(t, "hvs.from-env", token)
}

func TestBadURLs(t *testing.T) {
	full := map[string]string{"VAULT_TOKEN": "hvs.server", "VAULT_ADDR": "https://v:8200"}
	for u, want := range map[string]string{
		"vault://v:8200?mount=transit":        "",
		"vault://v:8200?mout=transit":         "unknown vault URL parameter",
		"vault://v:8200?tls=maybe":            "tls=",
		"vault://v:8200?timeout=-1s":          "timeout=",
		"vault://v:8200?retries=x":            "retries=",
		"vault://v:8200?prefix=UP-":           "prefix",
		"vault://v:8200?prefix=a&prefix=b":    "given 2 times",
		"vault://v:8200/some/path":            "path",
		"vault://?tls=false":                  "contradicts",
		"kms://x":                             "unknown keyring",
		"age://x?y=1":                         "takes no parameters",
		"vault://root:hvs.SECRETTOKEN@v:8200": "must not carry credentials",
	} {
		_, err := keyring.Open(u, env(full))
		if want == "" {
			require.NoError(t, err, u)
			continue
		}
		require.ErrorContains(t, err, want, u)
		require.NotContains(t, err.Error(), "SECRETTOKEN")
	}
	_, err := keyring.Open("vault://v:8200", env(nil))
	require.ErrorContains(t, err, "VAULT_TOKEN")
	_, err = keyring.Open("vault://", env(map[string]string{"VAULT_TOKEN": "t"}))
	require.ErrorContains(t, err, "VAULT_ADDR")
	require.False(t, strings.Contains(err.Error(), "hvs."))
}
