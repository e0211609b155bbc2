package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/vault/api"
	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
	"github.com/chunklock/chunklock/backends/open"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/keys/vault"
	"github.com/chunklock/chunklock/keys/vault/vaulttest"
)

// "memshare:<name>" stores share one in-memory backend per name, so that a
// test can prepare a store, run a command on it, and look at the result.
var (
	memshareMu sync.Mutex
	memshare   = map[string]*memory.Backend{}
)

func init() {
	next := openStore
	openStore = func(ctx context.Context, storeURL string, opts open.Options) (backends.Store, error) {
		name, ok := strings.CutPrefix(storeURL, "memshare:")
		if !ok {
			return next(ctx, storeURL, opts)
		}
		memshareMu.Lock()
		defer memshareMu.Unlock()
		b, ok := memshare[name]
		if !ok {
			b = memory.New()
			memshare[name] = b
		}
		return sharedStore{engine.New(b, engine.WithEnvAllow(opts.EnvAllow))}, nil
	}
}

// sharedStore leaves the shared backend open when a command closes it.
type sharedStore struct{ backends.Store }

func (sharedStore) Close() error { return nil }

// runKeys runs `chunklock keys args...` and returns its exit code and
// output.
func runKeys(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(t.Context(), append([]string{"chunklock", "keys"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// Every keys command explains itself with an example.
func TestKeysHelp(t *testing.T) {
	for _, sub := range []string{"policy", "server-policy", "setup", "rotate", "new-token"} {
		code, out, _ := runKeys(t, sub, "--help")
		require.Equal(t, 0, code, sub)
		require.Contains(t, out, "chunklock keys "+sub+" --keys", "%s --help shows an example", sub)
	}
	code, out, _ := runKeys(t, "--help")
	require.Equal(t, 0, code)
	for _, sub := range []string{"policy", "server-policy", "setup", "rotate", "new-token"} {
		require.Contains(t, out, sub)
	}
}

// The policies print without Vault and without a token.
func TestKeysPolicies(t *testing.T) {
	t.Setenv("VAULT_TOKEN", "")
	t.Setenv("VAULT_ADDR", "")
	code, out, errOut := runKeys(t, "server-policy", "--keys", "vault://vault.example:8200?mount=kv/transit&prefix=cl-")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, vault.ServerPolicy("cl-", "kv/transit"), out)

	code, out, errOut = runKeys(t, "policy", "--keys", "vault://?prefix=cl-", "--job", "daily-sales")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `path "transit/decrypt/cl-daily-sales"`)
	require.Contains(t, out, `capabilities = ["update"]`)
	require.Equal(t, 1, strings.Count(out, "path "), "one path only: %s", out)

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"policy", "--job", "j"}, "needs the Vault keyring"},
		{[]string{"server-policy", "--keys", "age"}, "needs the Vault keyring"},
		{[]string{"policy", "--keys", "vault://v:8200"}, `"job" not set`},
		{[]string{"policy", "--keys", "vault://v:8200", "--job", "Bad Job"}, "invalid"},
		{[]string{"policy", "--keys", "vault://v:8200?color=red", "--job", "j"}, "unknown vault URL parameter"},
		{[]string{"setup", "--keys", "vault://v:8200"}, "needs a Vault token in VAULT_TOKEN"},
		{[]string{"rotate", "--keys", "vault://v:8200", "--job", "j"}, "needs a Vault token in VAULT_TOKEN"},
	} {
		code, _, errOut := runKeys(t, c.args...)
		require.Equal(t, 1, code, "%v", c.args)
		require.Contains(t, errOut, c.want, "%v", c.args)
	}
}

// Against a real Vault: setup, then rotate (with retirement) and new-token
// on a store, through the command line.
func TestKeysWithVault(t *testing.T) {
	bin, skip, err := vaulttest.Binary()
	require.NoError(t, err)
	if bin == "" {
		t.Skip(skip)
	}
	dev, err := vaulttest.Start(bin, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(dev.Stop)
	ctx := context.Background()
	keysURL := "vault://" + strings.TrimPrefix(dev.Addr, "http://") + "?tls=false"
	root, err := api.NewClient(&api.Config{Address: dev.Addr})
	require.NoError(t, err)
	root.SetToken(dev.RootToken)

	// setup with the root token.
	t.Setenv("VAULT_TOKEN", dev.RootToken)
	code, out, errOut := runKeys(t, "setup", "--keys", keysURL)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "vault token create -policy=chunklock-server")
	policy, err := root.Sys().GetPolicy("chunklock-server")
	require.NoError(t, err)
	require.Equal(t, vault.ServerPolicy(vault.DefaultPrefix, vault.DefaultMount), policy)

	// The server's token from here on.
	sec, err := root.Logical().Write("auth/token/create", map[string]any{
		"policies": []string{"chunklock-server"}, "no_default_policy": true, "no_parent": true})
	require.NoError(t, err)
	serverToken := sec.Auth.ClientToken
	t.Setenv("VAULT_TOKEN", serverToken)
	cfg := vault.DefaultConfig()
	cfg.Address, cfg.Token = dev.Addr, serverToken
	k, err := vault.New(cfg)
	require.NoError(t, err)

	// A store with a Vault job and an age job, each with credentials.
	storeURL := "memshare:" + t.Name()
	store, err := openStore(ctx, storeURL, open.Options{})
	require.NoError(t, err)
	for _, d := range []string{"a", "b", "c"} {
		_, err := store.UpsertDataset(ctx, backends.Dataset{ID: d, URL: "s3://lake/" + d})
		require.NoError(t, err)
	}
	public, jobToken, err := k.CreateJobKey(ctx, "jv")
	require.NoError(t, err)
	_, err = store.UpsertJob(ctx, backends.Job{ID: "jv", Inputs: []string{"a"}, Output: "b", Key: backends.JobKey{Kind: vault.Kind, Public: public}})
	require.NoError(t, err)
	plain := map[string]string{"a": "Pw-a-for-jv", "b": "Pw-b-for-jv"}
	for d, p := range plain {
		ct, err := k.Encrypt(ctx, "jv", public, []byte(p))
		require.NoError(t, err)
		require.NoError(t, store.SetCredential(ctx, backends.Credential{Job: "jv", Dataset: d, KeyKind: vault.Kind, Ciphertext: ct}))
	}
	agePublic, ageKey, err := age.New().CreateJobKey(ctx, "jage")
	require.NoError(t, err)
	_, err = store.UpsertJob(ctx, backends.Job{ID: "jage", Inputs: []string{"b"}, Output: "c", Key: backends.JobKey{Kind: age.Kind, Public: agePublic}})
	require.NoError(t, err)
	ct, err := age.New().Encrypt(ctx, "jage", agePublic, []byte("Pw-c-for-jage"))
	require.NoError(t, err)
	require.NoError(t, store.SetCredential(ctx, backends.Credential{Job: "jage", Dataset: "c", KeyKind: age.Kind, Ciphertext: ct}))

	// decryptJV decrypts jv's stored credentials with token.
	decryptJV := func(token string) (map[string]string, []string, error) {
		creds, err := store.Credentials(ctx, "jv")
		require.NoError(t, err)
		var cts [][]byte
		var prefixes []string
		for _, c := range creds {
			cts = append(cts, c.Ciphertext)
			prefixes = append(prefixes, string(c.Ciphertext[:len("vault:v1:")]))
		}
		ps, err := k.Decrypt(ctx, "jv", public, token, cts)
		if err != nil {
			return nil, prefixes, err
		}
		got := map[string]string{}
		for i, c := range creds {
			got[c.Dataset] = string(ps[i])
		}
		return got, prefixes, nil
	}
	before, err := store.Credentials(ctx, "jv")
	require.NoError(t, err)

	// rotate without, then with, retirement.
	code, out, errOut = runKeys(t, "rotate", "--keys", keysURL, "--store", storeURL, "--job", "jv")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `transit key "chunklock-jv" rotated to version 2; 2 credential(s) rewrapped; min_decryption_version 1 (older versions still decrypt`)
	code, out, errOut = runKeys(t, "rotate", "--keys", keysURL, "--store", storeURL, "--job", "jv", "--min-decryption-version")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "rotated to version 3; 2 credential(s) rewrapped; min_decryption_version 3 (older versions retired)")
	got, prefixes, err := decryptJV(jobToken)
	require.NoError(t, err)
	require.Equal(t, plain, got)
	require.Equal(t, []string{"vault:v3:", "vault:v3:"}, prefixes)
	_, err = k.Decrypt(ctx, "jv", public, jobToken, [][]byte{before[0].Ciphertext})
	require.Equal(t, backends.CodeForbidden, backends.CodeOf(err), "%v", err)

	// new-token: a second token that reads the same credentials.
	code, out, errOut = runKeys(t, "new-token", "--keys", keysURL, "--store", storeURL, "--job", "jv")
	require.Equal(t, 0, code, errOut)
	newToken := strings.TrimSpace(out)
	require.NotEmpty(t, newToken)
	require.NotEqual(t, jobToken, newToken)
	require.Contains(t, errOut, "shown once")
	got, _, err = decryptJV(newToken)
	require.NoError(t, err)
	require.Equal(t, plain, got)

	// The age job: not rotatable, not recoverable, replaceable.
	code, _, errOut = runKeys(t, "rotate", "--keys", keysURL, "--store", storeURL, "--job", "jage")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "not Vault")
	code, _, errOut = runKeys(t, "new-token", "--keys", keysURL, "--store", storeURL, "--job", "jage")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "cannot be recovered")
	require.Contains(t, errOut, "--new-age-key")
	code, out, errOut = runKeys(t, "new-token", "--store", storeURL, "--job", "jage", "--new-age-key")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "set the job's 1 credential(s) again")
	newAgeKey := strings.TrimSpace(out)
	require.True(t, strings.HasPrefix(newAgeKey, "AGE-SECRET-KEY-1"))
	require.NotEqual(t, ageKey, newAgeKey)
	j, err := store.Job(ctx, "jage")
	require.NoError(t, err)
	require.NotEqual(t, agePublic, j.Key.Public)
	// The new key is the job's; the old credential was for the old key.
	_, err = age.New().Decrypt(ctx, "jage", j.Key.Public, ageKey, nil)
	require.Equal(t, backends.CodeForbidden, backends.CodeOf(err))
	_, err = age.New().Decrypt(ctx, "jage", j.Key.Public, newAgeKey, [][]byte{ct})
	require.Equal(t, backends.CodeForbidden, backends.CodeOf(err), "%v", err)

	// Unknown job; --new-age-key on a Vault job.
	code, _, errOut = runKeys(t, "new-token", "--keys", keysURL, "--store", storeURL, "--job", "nope")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `"nope" not found`)
	code, _, errOut = runKeys(t, "new-token", "--keys", keysURL, "--store", storeURL, "--job", "jv", "--new-age-key")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "applies to age keys only")
}

// TestKeysOnAStoreThatIsNotThere: new-token (as rotate) on the embedded
// store refuses a data directory holding no store, and makes none there.
func TestKeysOnAStoreThatIsNotThere(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "chunklock-data")
	for _, args := range [][]string{{"new-token", "--job", "j", "--data-dir", dir}, {"new-token", "--job", "j", "--new-age-key", "--data-dir", dir}} {
		code, _, errOut := runKeys(t, args...)
		require.Equal(t, 1, code, "%v", args)
		require.Contains(t, errOut, "no embedded store in "+dir, "%v", args)
		_, err := os.Stat(dir)
		require.True(t, os.IsNotExist(err), "%v made %s", args, dir)
	}
}
