package server_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/keys"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/keys/vault"
)

// Claim operations that select every secret of the claim.
const (
	claimSecretsQ = `mutation($job: String!, $id: String!, $ex: String!) { claim(job: $job, dataid: $id, executor: $ex) {
		token dataid output { dataset secret } inputs { dataset secret } } }`
	forceSecretsQ = `mutation($job: String!, $id: String!, $ex: String!) { force(job: $job, dataid: $id, executor: $ex) {
		token dataid output { dataset secret } inputs { dataset secret } } }`
	claimsSecretsQ = `query($job: String) { claims(job: $job) { job dataid output { dataset secret } inputs { dataset secret } } }`
)

// keyringEnv is a keyring the end-to-end key tests run with: age, or Vault
// on a real server (one per top-level test, shared by its subtests).
type keyringEnv struct {
	name        string
	vault       *vaultServer
	serverToken string
}

// forEachKeyring runs f with the age keyring, then with the Vault keyring.
func forEachKeyring(t *testing.T, f func(t *testing.T, e keyringEnv)) {
	t.Run("age", func(t *testing.T) { f(t, keyringEnv{name: age.Kind}) })
	t.Run("vault", func(t *testing.T) {
		v := startVault(t)
		f(t, keyringEnv{name: vault.Kind, vault: v, serverToken: v.setup()})
	})
}

// stack serves store with the environment's keyring as the default one.
func (e keyringEnv) stack(t *testing.T, store backends.Store) *stack {
	if e.vault == nil {
		return newStack(t, store)
	}
	return newVaultStack(t, store, e.vault.keyring(e.serverToken))
}

// foreignKeys returns well-formed keys that are not job ja's key (nor
// anybody's, for some).
func (e keyringEnv) foreignKeys(t *testing.T) map[string]string {
	if e.vault == nil {
		_, stranger, err := age.New().CreateJobKey(t.Context(), "ja")
		require.NoError(t, err)
		return map[string]string{"a fresh age identity": stranger, "garbage": "not-a-key"}
	}
	return map[string]string{
		"a Vault token without the job's policy": e.vault.mint(map[string]any{"policies": []string{"default"}}),
		"the job policy without the job's alias": e.vault.mint(map[string]any{"policies": []string{vault.JobPolicyName(vault.DefaultPrefix)}, "no_default_policy": true}),
		"the server's own Vault token":           e.serverToken,
	}
}

// jobSecrets are the secrets of define()'s jobs, by job and dataset: ja
// reads a and writes b, jb reads b and writes c.
type jobSecrets map[string]map[string]string

// all lists every secret.
func (j jobSecrets) all() []string {
	var out []string
	for _, m := range j {
		for _, s := range m {
			out = append(out, s)
		}
	}
	return out
}

// setSecrets gives ja and jb a distinctive secret for each dataset they use.
func (s *stack) setSecrets() jobSecrets {
	s.t.Helper()
	sec := jobSecrets{
		"ja": {"a": "Pw-ja-a-" + randHex(8), "b": "Pw-ja-b-" + randHex(8)},
		"jb": {"b": "Pw-jb-b-" + randHex(8), "c": "Pw-jb-c-" + randHex(8)},
	}
	for job, m := range sec {
		for d, v := range m {
			s.ok(admin, setCredentialQ, vars("job", job, "d", d, "s", v))
		}
	}
	return sec
}

// requireSecrets checks a claim's secrets against the job's.
func requireSecrets(t *testing.T, want map[string]string, c *claimDoc) {
	t.Helper()
	require.NotNil(t, c, "no claim")
	got := map[string]string{}
	for _, a := range append([]access{c.Output}, c.Inputs...) {
		require.NotNil(t, a.Secret, "no secret for dataset %s", a.Dataset)
		got[a.Dataset] = *a.Secret
	}
	require.Equal(t, want, got)
}

// claimState is what a claim would change: the job's live claims and
// events.
type claimState struct {
	Claims []string
	Events int
}

func (s *stack) claimState(job string) claimState {
	s.t.Helper()
	ctx := context.Background()
	claims, err := s.store.Claims(ctx, job)
	require.NoError(s.t, err)
	var st claimState
	for _, c := range claims {
		st.Claims = append(st.Claims, c.DataID)
	}
	f := backends.EventFilter{Job: job, First: 100}
	for {
		page, err := s.store.Events(ctx, f)
		require.NoError(s.t, err)
		st.Events += len(page.Events)
		if !page.HasNextPage || len(page.Events) == 0 {
			return st
		}
		f.After = page.Events[len(page.Events)-1].Seq
	}
}

// allEvents returns every event of the store, printed.
func (s *stack) allEvents() string {
	s.t.Helper()
	var b strings.Builder
	f := backends.EventFilter{First: 100}
	for {
		page, err := s.store.Events(context.Background(), f)
		require.NoError(s.t, err)
		for _, e := range page.Events {
			fmt.Fprintf(&b, "%+v\n", e)
		}
		if !page.HasNextPage || len(page.Events) == 0 {
			return b.String()
		}
		f.After = page.Events[len(page.Events)-1].Seq
	}
}

// metricsText scrapes /metrics.
func (s *stack) metricsText() string {
	s.t.Helper()
	resp, err := http.Get(s.url + "/metrics")
	require.NoError(s.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	require.Equal(s.t, http.StatusOK, resp.StatusCode)
	return string(b)
}

var (
	base64Run = regexp.MustCompile(`[A-Za-z0-9+/_-]{12,}={0,2}`)
	hexRun    = regexp.MustCompile(`[0-9a-fA-F]{16,}`)
)

// revealed tells how text reveals secret: as is, in base64 or hex, or
// inside any base64 or hex run of text once decoded (a bytea column in a
// PostgreSQL dump, a []byte in JSON). "" when it does not.
func revealed(text, secret string) string {
	forms := []struct{ how, form string }{
		{"as is", secret},
		{"in escaped JSON", strings.Trim(fmt.Sprintf("%q", secret), `"`)},
		{"in base64", base64.StdEncoding.EncodeToString([]byte(secret))},
		{"in raw base64", base64.RawStdEncoding.EncodeToString([]byte(secret))},
		{"in URL base64", base64.RawURLEncoding.EncodeToString([]byte(secret))},
		{"in hex", hex.EncodeToString([]byte(secret))},
		{"in upper hex", strings.ToUpper(hex.EncodeToString([]byte(secret)))},
	}
	for _, f := range forms {
		if strings.Contains(text, f.form) {
			return f.how
		}
	}
	for _, run := range base64Run.FindAllString(text, -1) {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(run); err == nil && strings.Contains(string(b), secret) {
				return "in a base64 run, decoded"
			}
		}
	}
	for _, run := range hexRun.FindAllString(text, -1) {
		for _, r := range []string{run, run[1:]} {
			if b, err := hex.DecodeString(r[:len(r)/2*2]); err == nil && strings.Contains(string(b), secret) {
				return "in a hex run, decoded"
			}
		}
	}
	return ""
}

// requireNoSecret fails when text (named what) reveals one of secrets.
// The message names the secret's position, never the secret.
func requireNoSecret(t *testing.T, what, text string, secrets ...string) {
	t.Helper()
	for i, s := range secrets {
		if how := revealed(text, s); how != "" {
			t.Fatalf("%s reveals secret %d of %d (%s)", what, i+1, len(secrets), how)
		}
	}
}

// countingKeyring counts Decrypt calls.
type countingKeyring struct {
	keys.Keyring
	decrypts atomic.Int32
}

func (c *countingKeyring) Decrypt(ctx context.Context, job, public, jobKey string, ciphertexts [][]byte) ([][]byte, error) {
	c.decrypts.Add(1)
	return c.Keyring.Decrypt(ctx, job, public, jobKey, ciphertexts)
}

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
