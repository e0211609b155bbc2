package server_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/internal/teststores"
	"github.com/chunklock/chunklock/keys/age"
)

const setCredentialQ = `mutation($job: String!, $d: String!, $s: String!) { setCredential(job: $job, dataset: $d, secret: $s) { id credentials { dataset keyKind updatedAt } } }`

// TestSecrets covers setCredential and DatasetAccess.secret: decrypted only
// with the job's key in X-Chunklock-Job-Key, for callers that may operate
// the job; null without the header; FORBIDDEN with a wrong key. The plaintext
// and the job key appear nowhere else: not in other responses, not in logs,
// and the store holds only ciphertext.
func TestSecrets(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		s := newStack(t, kind.Open(t, backends.NewFakeClock(t0), 1)[0])
		keyA, keyB := s.define()
		const pwA, pwB = "s3cr3t-input-password", "0utput-w4rehouse-pw"

		var j struct {
			ID          string
			Credentials []struct{ Dataset, KeyKind, UpdatedAt string }
		}
		s.ok(admin, setCredentialQ, vars("job", "ja", "d", "a", "s", pwA)).field(t, "setCredential", &j)
		s.ok(admin, setCredentialQ, vars("job", "ja", "d", "b", "s", pwB)).field(t, "setCredential", &j)
		require.Len(t, j.Credentials, 2)
		require.Equal(t, "age", j.Credentials[0].KeyKind)
		// A dataset the job does not use, an unknown job, an empty secret.
		require.Equal(t, "INVALID_ARGUMENT", s.fails(admin, setCredentialQ, vars("job", "ja", "d", "c", "s", "x")))
		require.Equal(t, "NOT_FOUND", s.fails(admin, setCredentialQ, vars("job", "nope", "d", "a", "s", "x")))
		require.Equal(t, "INVALID_ARGUMENT", s.fails(admin, setCredentialQ, vars("job", "ja", "d", "a", "s", "")))

		// The store keeps ciphertext only, decryptable with the job key alone.
		creds, err := s.store.Credentials(t.Context(), "ja")
		require.NoError(t, err)
		require.Len(t, creds, 2)
		for _, c := range creds {
			require.NotContains(t, string(c.Ciphertext), pwA)
			require.NotContains(t, string(c.Ciphertext), pwB)
		}

		s.publish("a", "1")
		c := s.findNext(runnerA, "ja", "e", keyA)
		require.NotNil(t, c)
		require.Equal(t, pwB, *c.Output.Secret)
		require.Equal(t, pwA, *c.Inputs[0].Secret)

		const claimsQ = `{ claims(job: "ja") { inputs { dataset secret } output { secret } } }`
		// No header: null secrets, no error.
		r := s.send(request{who: runnerA, query: claimsQ})
		require.Empty(t, r.Errors)
		require.NotContains(t, r.Body, pwA)
		require.Contains(t, r.Body, `"secret":null`)
		// The key of another job: FORBIDDEN, and no plaintext.
		r = s.send(request{who: runnerA, query: claimsQ, jobKey: keyB})
		require.Equal(t, "FORBIDDEN", r.Errors[0].Extensions["code"], r.Body)
		require.NotContains(t, r.Body, pwA)
		// A fresh age identity, and garbage: FORBIDDEN too.
		_, stranger, err := age.New().CreateJobKey(t.Context(), "ja")
		require.NoError(t, err)
		for _, k := range []string{stranger, "not-a-key"} {
			r = s.send(request{who: admin, query: claimsQ, jobKey: k})
			require.Equal(t, "FORBIDDEN", r.Errors[0].Extensions["code"], r.Body)
		}
		// The right key, but a reader or a runner of another job: FORBIDDEN.
		for _, who := range []string{reader, runnerB} {
			r = s.send(request{who: who, query: claimsQ, jobKey: keyA})
			require.Equal(t, "FORBIDDEN", r.Errors[0].Extensions["code"], "%s: %s", who, r.Body)
			require.NotContains(t, r.Body, pwA)
		}
		// The right key as admin works.
		r = s.send(request{who: admin, query: claimsQ, jobKey: keyA})
		require.Empty(t, r.Errors, r.Body)
		require.Contains(t, r.Body, pwA)

		// Nothing secret in the server's log.
		logs := s.logs.String()
		for _, secret := range []string{pwA, pwB, keyA, keyB, stranger} {
			require.False(t, strings.Contains(logs, secret), "the log holds a secret")
		}
	})
}

// TestSecretOfAnotherKeyKind: a credential encrypted to another kind of key
// than the job's (the job's key was replaced since) is never handed to the
// job's keyring: a claim that selects its secret is INVALID_ARGUMENT, saying
// to set the credential again, and claims nothing.
func TestSecretOfAnotherKeyKind(t *testing.T) {
	s := newStack(t, teststores.Memory(backends.NewFakeClock(t0)))
	keyA, _ := s.define()
	s.ok(admin, setCredentialQ, vars("job", "ja", "d", "a", "s", "pw"))
	creds, err := s.store.Credentials(t.Context(), "ja")
	require.NoError(t, err)
	other := creds[0]
	other.KeyKind = "vault"
	require.NoError(t, s.store.SetCredential(t.Context(), other))

	s.publish("a", "1")
	r := s.send(request{who: runnerA, query: findNextQ, vars: vars("job", "ja", "ex", "e"), jobKey: keyA})
	require.Equal(t, "INVALID_ARGUMENT", r.code(t), r.Body)
	require.Contains(t, r.Body, `the credential of job \"ja\" for dataset \"a\" was encrypted to a vault key, but the job's key is now a age key; set the credential again`)
	require.Nil(t, s.chunk("b", "1").Output, "nothing was claimed")
}
