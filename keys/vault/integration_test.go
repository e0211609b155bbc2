package vault_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/vault/api"
	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/keys/keystest"
	"github.com/chunklock/chunklock/keys/vault"
	"github.com/chunklock/chunklock/keys/vault/vaulttest"
)

// The same cases as the age keyring, against a real Vault server, with the
// server's token made from ServerPolicy.
func TestConformance(t *testing.T) {
	k := newKeyring(t)
	c := root(t)
	keystest.Run(t, keystest.Harness{
		Keyring: k,
		ForeignKeys: func(t *testing.T, job keystest.Job) map[string]string {
			// A job token minted again for the same job, then revoked.
			_, revoked, err := k.CreateJobKey(context.Background(), job.ID)
			require.NoError(t, err)
			_, err = c.Logical().Write("auth/token/revoke", map[string]any{"token": revoked})
			require.NoError(t, err)
			return map[string]string{
				"the server's own token":                 devServerT,
				"a token without the job's policy":       mintToken(t, c, map[string]any{"policies": []string{"default"}}),
				"the job policy without the job's alias": mintToken(t, c, map[string]any{"policies": []string{vault.JobPolicyName(vault.DefaultPrefix)}, "no_default_policy": true}),
				"a revoked job token":                    revoked,
			}
		},
	})
}

// countingTransport counts requests per URL path.
type countingTransport struct {
	decrypts atomic.Int32
	next     http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.Contains(r.URL.Path, "/decrypt/") {
		c.decrypts.Add(1)
	}
	return c.next.RoundTrip(r)
}

// All of a claim's credentials are decrypted in one request.
func TestDecryptIsOneRoundTrip(t *testing.T) {
	ct := &countingTransport{next: http.DefaultTransport}
	k := newKeyring(t, func(c *vault.Config) { c.HTTPClient = &http.Client{Transport: ct} })
	j := keystest.NewJob(t, k)
	plain := [][]byte{keystest.Secret("a"), keystest.Secret("b"), keystest.Secret("c")}
	cipher := keystest.Encrypt(t, k, j, plain...)
	got, err := k.Decrypt(context.Background(), j.ID, j.Public, j.Key, cipher)
	require.NoError(t, err)
	require.Equal(t, plain, got)
	require.EqualValues(t, 1, ct.decrypts.Load())
}

// The server's token, made from ServerPolicy, does everything the server
// needs (the other tests use it) and nothing that reveals a secret.
func TestServerTokenCannotDecrypt(t *testing.T) {
	k := newKeyring(t)
	ctx := context.Background()
	j := keystest.NewJob(t, k)
	p := keystest.Secret("server")
	c := keystest.Encrypt(t, k, j, p)
	secrets := keystest.Secrets([]keystest.Job{j}, [][]byte{p}, c, devServerT)

	_, err := k.Decrypt(ctx, j.ID, j.Public, devServerT, c)
	keystest.RequireCode(t, err, backends.CodeForbidden, secrets...)

	srv, err := api.NewClient(&api.Config{Address: dev.Addr})
	require.NoError(t, err)
	srv.SetToken(devServerT)
	key := j.Public
	refused := map[string]func() error{
		"decrypt": func() error {
			_, err := srv.Logical().Write("transit/decrypt/"+key, map[string]any{"ciphertext": string(c[0])})
			return err
		},
		"datakey": func() error {
			_, err := srv.Logical().Write("transit/datakey/plaintext/"+key, nil)
			return err
		},
		"export": func() error {
			_, err := srv.Logical().Read("transit/export/encryption-key/" + key)
			return err
		},
		"backup": func() error {
			_, err := srv.Logical().Read("transit/backup/" + key)
			return err
		},
		"write a policy": func() error {
			_, err := srv.Logical().Write("sys/policies/acl/chunklock-job-evil", map[string]any{"policy": `path "*" { capabilities = ["sudo"] }`})
			return err
		},
		"create a token outside the role": func() error {
			_, err := srv.Logical().Write("auth/token/create", map[string]any{"policies": []string{"chunklock-job"}})
			return err
		},
		"mint a token with another policy": func() error {
			_, err := srv.Logical().Write("auth/token/create/chunklock-job", map[string]any{"policies": []string{"chunklock-server"}, "entity_alias": key})
			return err
		},
		"mint a token with the default policy": func() error {
			_, err := srv.Logical().Write("auth/token/create/chunklock-job", map[string]any{"policies": []string{"default"}, "entity_alias": key})
			return err
		},
		"mint a token bound to a foreign alias": func() error {
			_, err := srv.Logical().Write("auth/token/create/chunklock-job", map[string]any{"policies": []string{"chunklock-job"}, "entity_alias": "alice"})
			return err
		},
	}
	for name, call := range refused {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			err := call()
			var re *api.ResponseError
			require.ErrorAs(t, err, &re)
			require.Contains(t, []int{http.StatusForbidden, http.StatusBadRequest}, re.StatusCode, "%v", err)
		})
	}

	// What Vault itself says the server token may do on the decrypt path.
	caps, err := root(t).Logical().Write("sys/capabilities", map[string]any{
		"token": devServerT,
		"paths": []string{"transit/decrypt/" + key, "transit/encrypt/" + key, "transit/rewrap/" + key, "transit/keys/" + key + "/rotate"},
	})
	require.NoError(t, err)
	require.Equal(t, []any{"deny"}, caps.Data["transit/decrypt/"+key])
	require.Equal(t, []any{"update"}, caps.Data["transit/encrypt/"+key])
	require.Equal(t, []any{"update"}, caps.Data["transit/rewrap/"+key])
	require.ElementsMatch(t, []any{"create", "read", "update"}, caps.Data["transit/keys/"+key+"/rotate"])
}

// A job token's effective policy is Policy(job): decrypt with its own key,
// nothing else.
func TestJobTokenPolicy(t *testing.T) {
	k := newKeyring(t)
	a, b := keystest.NewJob(t, k), keystest.NewJob(t, k)
	policy := k.Policy(a.ID)
	require.Contains(t, policy, `path "transit/decrypt/`+a.Public+`"`)
	require.Contains(t, policy, `capabilities = ["update"]`)
	require.Equal(t, 1, strings.Count(policy, "path "), policy)

	c := root(t)
	paths := map[string][]any{
		"transit/decrypt/" + a.Public:               {"update"},
		"transit/decrypt/" + b.Public:               {"deny"},
		"transit/decrypt/" + a.Public + "x":         {"deny"},
		"transit/encrypt/" + a.Public:               {"deny"},
		"transit/rewrap/" + a.Public:                {"deny"},
		"transit/keys/" + a.Public:                  {"deny"},
		"transit/export/encryption-key/" + a.Public: {"deny"},
		"auth/token/lookup-self":                    {"deny"},
		"sys/policies/acl/x":                        {"deny"},
	}
	list := make([]string, 0, len(paths))
	for p := range paths {
		list = append(list, p)
	}
	caps, err := c.Logical().Write("sys/capabilities", map[string]any{"token": a.Key, "paths": list})
	require.NoError(t, err)
	for p, want := range paths {
		require.Equal(t, want, caps.Data[p], "capabilities of job %s's token on %s", a.ID, p)
	}

	look, err := c.Logical().Write("auth/token/lookup", map[string]any{"token": a.Key})
	require.NoError(t, err)
	require.Equal(t, []any{vault.JobPolicyName(vault.DefaultPrefix)}, look.Data["policies"])
	require.Equal(t, true, look.Data["orphan"])
	require.Equal(t, "service", look.Data["type"])
}

// Rotation: old ciphertexts rewrap (inside Vault) to the new version and
// decrypt to the same plaintext; once older versions are retired, old
// ciphertexts are refused and rewrapped ones still work.
func TestRotateRewrapRetire(t *testing.T) {
	k := newKeyring(t)
	ctx := context.Background()
	j := keystest.NewJob(t, k)
	plain := [][]byte{keystest.Secret("one"), keystest.Secret("two")}
	old := keystest.Encrypt(t, k, j, plain...)
	for _, c := range old {
		v, err := vault.KeyVersion(c)
		require.NoError(t, err)
		require.Equal(t, 1, v)
	}
	secrets := keystest.Secrets([]keystest.Job{j}, plain, old)

	v, err := k.Rotate(ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, 2, v)
	v, err = k.Rotate(ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, 3, v)
	info, err := k.KeyInfo(ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, vault.KeyInfo{Latest: 3, MinDecryption: 1}, info)

	// Old ciphertexts still decrypt before rewrapping; new ones use v3.
	got, err := k.Decrypt(ctx, j.ID, j.Public, j.Key, old)
	require.NoError(t, err)
	require.Equal(t, plain, got)
	fresh := keystest.Encrypt(t, k, j, keystest.Secret("three"))
	v, err = vault.KeyVersion(fresh[0])
	require.NoError(t, err)
	require.Equal(t, 3, v)

	rewrapped, err := k.Rewrap(ctx, j.ID, old)
	require.NoError(t, err)
	require.Len(t, rewrapped, len(old))
	for i, c := range rewrapped {
		v, err := vault.KeyVersion(c)
		require.NoError(t, err)
		require.Equal(t, 3, v, "rewrapped ciphertext %d", i)
		require.NotEqual(t, old[i], c)
	}
	got, err = k.Decrypt(ctx, j.ID, j.Public, j.Key, rewrapped)
	require.NoError(t, err)
	require.Equal(t, plain, got)

	// Retire versions 1 and 2.
	require.NoError(t, k.SetMinDecryptionVersion(ctx, j.ID, 3))
	info, err = k.KeyInfo(ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, vault.KeyInfo{Latest: 3, MinDecryption: 3}, info)

	_, err = k.Decrypt(ctx, j.ID, j.Public, j.Key, old)
	keystest.RequireCode(t, err, backends.CodeForbidden, append(secrets, rewrapped...)...)
	require.Contains(t, err.Error(), "retired key version")
	_, err = k.Decrypt(ctx, j.ID, j.Public, j.Key, [][]byte{rewrapped[0], old[1]})
	keystest.RequireCode(t, err, backends.CodeForbidden, append(secrets, rewrapped...)...)
	_, err = k.Rewrap(ctx, j.ID, old)
	keystest.RequireCode(t, err, backends.CodeForbidden, append(secrets, rewrapped...)...)

	got, err = k.Decrypt(ctx, j.ID, j.Public, j.Key, rewrapped)
	require.NoError(t, err)
	require.Equal(t, plain, got)

	// Bad versions and unknown jobs.
	err = k.SetMinDecryptionVersion(ctx, j.ID, 9)
	keystest.RequireCode(t, err, backends.CodeInvalidArgument)
	err = k.SetMinDecryptionVersion(ctx, j.ID, 0)
	keystest.RequireCode(t, err, backends.CodeInvalidArgument)
	_, err = k.Rotate(ctx, "no-such-job-"+randHex(4))
	keystest.RequireCode(t, err, backends.CodeNotFound)
	_, err = k.KeyInfo(ctx, "no-such-job-"+randHex(4))
	keystest.RequireCode(t, err, backends.CodeNotFound)
	_, err = k.Rewrap(ctx, "no-such-job-"+randHex(4), rewrapped)
	keystest.RequireCode(t, err, backends.CodeNotFound, rewrapped...)
}

// Re-creating a job key mints a new token for the same transit key: both
// tokens read the job's secrets.
func TestCreateJobKeyAgainReissuesToken(t *testing.T) {
	k := newKeyring(t)
	ctx := context.Background()
	j := keystest.NewJob(t, k)
	p := keystest.Secret("reissue")
	c := keystest.Encrypt(t, k, j, p)
	public, key2, err := k.CreateJobKey(ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, j.Public, public)
	require.NotEqual(t, j.Key, key2)
	for _, key := range []string{j.Key, key2} {
		got, err := k.Decrypt(ctx, j.ID, j.Public, key, c)
		require.NoError(t, err)
		require.Equal(t, [][]byte{p}, got)
	}
}

// Vault stops in the middle: every operation answers UNAVAILABLE (never
// FORBIDDEN) within the keyring's timeout; a new server on the same address
// serves the same keyring again, without re-creating it.
func TestVaultOutageAndRecovery(t *testing.T) {
	needVault(t)
	s, err := vaulttest.Start(devBin, t.TempDir())
	require.NoError(t, err)
	defer s.Stop()
	serverTokenID := "srv" + randHex(16)
	serverToken, err := prepare(s, serverTokenID)
	require.NoError(t, err)
	require.Equal(t, serverTokenID, serverToken)

	cfg := vault.DefaultConfig()
	cfg.Address, cfg.Token = s.Addr, serverToken
	cfg.Timeout = 5 * time.Second
	cfg.Retries = 1
	cfg.RetryWaitMin, cfg.RetryWaitMax = 50*time.Millisecond, 100*time.Millisecond
	k, err := vault.New(cfg)
	require.NoError(t, err)

	ctx := context.Background()
	j := keystest.NewJob(t, k)
	p := keystest.Secret("outage")
	c := keystest.Encrypt(t, k, j, p)
	got, err := k.Decrypt(ctx, j.ID, j.Public, j.Key, c)
	require.NoError(t, err)
	require.Equal(t, [][]byte{p}, got)
	secrets := keystest.Secrets([]keystest.Job{j}, [][]byte{p}, c, serverToken)

	s.Kill()

	start := time.Now()
	_, err = k.Decrypt(ctx, j.ID, j.Public, j.Key, c)
	keystest.RequireCode(t, err, backends.CodeUnavailable, secrets...)
	t.Logf("Decrypt with Vault down: UNAVAILABLE after %v: %v", time.Since(start), err)
	_, err = k.Encrypt(ctx, j.ID, j.Public, p)
	keystest.RequireCode(t, err, backends.CodeUnavailable, secrets...)
	_, _, err = k.CreateJobKey(ctx, "job-"+randHex(4))
	keystest.RequireCode(t, err, backends.CodeUnavailable, secrets...)
	_, err = k.Rotate(ctx, j.ID)
	keystest.RequireCode(t, err, backends.CodeUnavailable, secrets...)
	_, err = k.Rewrap(ctx, j.ID, c)
	keystest.RequireCode(t, err, backends.CodeUnavailable, secrets...)

	// A new, empty dev server on the same address, prepared the same way.
	require.NoError(t, s.Restart())
	_, err = prepare(s, serverTokenID)
	require.NoError(t, err)

	// The old job token means nothing to the new server.
	_, err = k.Decrypt(ctx, j.ID, j.Public, j.Key, c)
	keystest.RequireCode(t, err, backends.CodeForbidden, secrets...)

	// The same keyring serves fresh keys.
	j2 := keystest.NewJob(t, k)
	p2 := keystest.Secret("recovered")
	c2 := keystest.Encrypt(t, k, j2, p2)
	got, err = k.Decrypt(ctx, j2.ID, j2.Public, j2.Key, c2)
	require.NoError(t, err)
	require.Equal(t, [][]byte{p2}, got)
}
