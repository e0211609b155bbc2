package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/keys/keyops"
	"github.com/chunklock/chunklock/keys/vault"
)

// TestVaultRotation: keyops.Rotate (what `chunklock keys rotate` runs)
// rotates a job's transit key and rewraps its stored credentials; claims
// keep returning the right secrets. Retiring the older versions afterwards
// leaves only new-version ciphertexts in the store, makes the old ones
// undecryptable, and claims still work. The other job is untouched.
func TestVaultRotation(t *testing.T) {
	v := startVault(t)
	tok := v.setup()
	forEachStore(t, func(t *testing.T, kind storeKind) {
		ctx := context.Background()
		k := v.keyring(tok)
		s := newVaultStack(t, kind.Open(t, backends.NewFakeClock(t0), 1)[0], k)
		keyA, keyB := s.define()
		sec := s.setSecrets()
		ja, err := s.store.Job(ctx, "ja")
		require.NoError(t, err)
		// The dev Vault is shared by the store cases: versions are relative.
		start, err := k.KeyInfo(ctx, "ja")
		require.NoError(t, err)
		oldA := ciphertexts(t, s.store, "ja")
		oldB := ciphertexts(t, s.store, "jb")
		requireVersion(t, oldA, start.Latest)

		rot, err := keyops.Rotate(ctx, s.store, k, "ja", false)
		require.NoError(t, err)
		require.Equal(t, keyops.Rotation{Job: "ja", Key: "chunklock-ja", Version: start.Latest + 1, Rewrapped: 2, MinDecryptionVersion: start.MinDecryption}, rot)
		requireVersion(t, ciphertexts(t, s.store, "ja"), rot.Version)
		s.publish("a", "1")
		c := s.findNext(runnerA, "ja", "e", keyA)
		requireSecrets(t, sec["ja"], c)
		s.ok(runnerA, completeQ, vars("t", *c.Token))
		// Not retired: the old ciphertexts still decrypt.
		_, err = k.Decrypt(ctx, "ja", ja.Key.Public, keyA, oldA)
		require.NoError(t, err)

		rot, err = keyops.Rotate(ctx, s.store, k, "ja", true)
		require.NoError(t, err)
		require.Equal(t, keyops.Rotation{Job: "ja", Key: "chunklock-ja", Version: start.Latest + 2, Rewrapped: 2, MinDecryptionVersion: start.Latest + 2}, rot)
		// Only new-version ciphertexts are left, and the old ones are dead.
		requireVersion(t, ciphertexts(t, s.store, "ja"), rot.Version)
		_, err = k.Decrypt(ctx, "ja", ja.Key.Public, keyA, oldA)
		require.Equal(t, backends.CodeForbidden, backends.CodeOf(err), "%v", err)
		require.Contains(t, err.Error(), "retired key version")
		s.publish("a", "2")
		requireSecrets(t, sec["ja"], s.findNext(runnerA, "ja", "e", keyA))
		// A new credential is made with the new version.
		pw := "Pw-ja-a-new-" + randHex(8)
		s.ok(admin, setCredentialQ, vars("job", "ja", "d", "a", "s", pw))
		requireVersion(t, ciphertexts(t, s.store, "ja"), rot.Version)
		var claims []claimDoc
		s.send(request{who: runnerA, query: claimsSecretsQ, vars: vars("job", "ja"), jobKey: keyA}).field(t, "claims", &claims)
		require.Len(t, claims, 1)
		requireSecrets(t, map[string]string{"a": pw, "b": sec["ja"]["b"]}, &claims[0])

		// jb kept its ciphertexts and its secrets.
		require.Equal(t, oldB, ciphertexts(t, s.store, "jb"))
		requireSecrets(t, sec["jb"], s.findNext(runnerB, "jb", "e", keyB))

		// Refusals: an unknown job, a job with an age key.
		_, err = keyops.Rotate(ctx, s.store, k, "nope", false)
		require.Equal(t, backends.CodeNotFound, backends.CodeOf(err), "%v", err)
		s.ok(admin, upsertDatasetQ, vars("in", map[string]any{"id": "d", "url": "s3://lake"}))
		public, _, err := age.New().CreateJobKey(ctx, "jage")
		require.NoError(t, err)
		_, err = s.store.UpsertJob(ctx, backends.Job{ID: "jage", Inputs: []string{"a"}, Output: "d", Key: backends.JobKey{Kind: age.Kind, Public: public}})
		require.NoError(t, err)
		_, err = keyops.Rotate(ctx, s.store, k, "jage", false)
		require.Equal(t, backends.CodeInvalidArgument, backends.CodeOf(err), "%v", err)
		require.Contains(t, err.Error(), "not Vault")
	})
}

// ciphertexts returns a job's stored ciphertexts by dataset order.
func ciphertexts(t *testing.T, store backends.Store, job string) [][]byte {
	t.Helper()
	creds, err := store.Credentials(context.Background(), job)
	require.NoError(t, err)
	out := make([][]byte, len(creds))
	for i, c := range creds {
		out[i] = c.Ciphertext
	}
	return out
}

// requireVersion checks that every ciphertext carries version's prefix.
func requireVersion(t *testing.T, cts [][]byte, version int) {
	t.Helper()
	require.NotEmpty(t, cts)
	for i, c := range cts {
		require.True(t, strings.HasPrefix(string(c), fmt.Sprintf("vault:v%d:", version)), "ciphertext %d is not at version %d", i+1, version)
	}
}

// TestVaultOutage: Vault stops in the middle. findNext, claim and force with
// the job key answer UNAVAILABLE and claim nothing; setCredential and a new
// job's upsert answer UNAVAILABLE and store nothing. Vault comes back on the
// same address: the same chunklock server, not restarted, serves claims with
// secrets again.
func TestVaultOutage(t *testing.T) {
	v := startVault(t)
	s := newVaultStack(t, storeKinds[0].Open(t, backends.NewFakeClock(t0), 1)[0], v.keyring(v.setup()))
	keyA, _ := s.define()
	sec := s.setSecrets()
	s.publish("a", "1")
	before := s.claimState("ja")

	v.kill()
	for name, r := range map[string]request{
		"findNext": {query: findNextQ, vars: vars("job", "ja", "ex", "e")},
		"claim":    {query: claimSecretsQ, vars: vars("job", "ja", "id", "1", "ex", "e")},
		"force":    {query: forceSecretsQ, vars: vars("job", "ja", "id", "1", "ex", "e")},
	} {
		r.who, r.jobKey = runnerA, keyA
		resp := s.send(r)
		require.Equal(t, "UNAVAILABLE", resp.code(t), "%s: %s", name, resp.Body)
		require.Contains(t, resp.Errors[0].Message, "Vault at "+v.addr)
		require.Equal(t, before, s.claimState("ja"), "%s made a claim with Vault down", name)
	}
	ch := s.chunk("b", "1")
	require.Nil(t, ch.Output, "chunk b/1 got an OUTPUT row")
	credsBefore := ciphertexts(t, s.store, "ja")
	require.Equal(t, "UNAVAILABLE", s.fails(admin, setCredentialQ, vars("job", "ja", "d", "a", "s", "Pw-new-"+randHex(8))))
	require.Equal(t, credsBefore, ciphertexts(t, s.store, "ja"))
	s.ok(admin, upsertDatasetQ, vars("in", map[string]any{"id": "d", "url": "s3://lake"}))
	require.Equal(t, "UNAVAILABLE", s.fails(admin, upsertJobQ, vars("in", map[string]any{"id": "jn", "inputs": []string{"a"}, "output": "d"})))
	_, err := s.store.Job(context.Background(), "jn")
	require.Equal(t, backends.CodeNotFound, backends.CodeOf(err))

	v.restart()
	c := s.findNext(runnerA, "ja", "e", keyA)
	require.Equal(t, "1", c.DataID)
	require.Equal(t, 1, c.Attempt)
	requireSecrets(t, sec["ja"], c)
	require.Equal(t, vault.Kind, mustJob(t, s, "ja").Key.Kind)
}

func mustJob(t *testing.T, s *stack, id string) backends.Job {
	t.Helper()
	j, err := s.store.Job(context.Background(), id)
	require.NoError(t, err)
	return j
}
