package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/server"
)

// TestJobKeyReadsOnlyItsJobsSecrets: with the age and the Vault keyring, on
// every store, a job's key reads that job's secrets only. Any other key (the
// other job's, a stranger identity, a Vault token without the job's policy,
// the server's own Vault token) is FORBIDDEN on findNext, claim and force,
// before anything is claimed.
func TestJobKeyReadsOnlyItsJobsSecrets(t *testing.T) {
	forEachKeyring(t, func(t *testing.T, e keyringEnv) {
		forEachStore(t, func(t *testing.T, kind storeKind) {
			s := e.stack(t, kind.Open(t, backends.NewFakeClock(t0), 1)[0])
			keyA, keyB := s.define()
			sec := s.setSecrets()
			s.publish("a", "1")

			wrong := e.foreignKeys(t)
			wrong["job jb's key"] = keyB
			ops := map[string]request{
				"findNext": {query: findNextQ, vars: vars("job", "ja", "ex", "e")},
				"claim":    {query: claimSecretsQ, vars: vars("job", "ja", "id", "1", "ex", "e")},
				"force":    {query: forceSecretsQ, vars: vars("job", "ja", "id", "1", "ex", "e")},
			}
			for name, key := range wrong {
				for op, r := range ops {
					before := s.claimState("ja")
					r.who, r.jobKey = runnerA, key
					resp := s.send(r)
					require.Equal(t, "FORBIDDEN", resp.code(t), "%s with %s: %s", op, name, resp.Body)
					require.Equal(t, before, s.claimState("ja"), "%s with %s made a claim", op, name)
					requireNoSecret(t, op+" answer", resp.Body, sec.all()...)
				}
			}

			// The job's own key.
			c := s.findNext(runnerA, "ja", "e", keyA)
			requireSecrets(t, sec["ja"], c)
			s.ok(runnerA, completeQ, vars("t", *c.Token))

			// Job jb: ja's key is refused, jb's reads jb's secrets.
			before := s.claimState("jb")
			r := s.send(request{who: runnerB, query: findNextQ, vars: vars("job", "jb", "ex", "e"), jobKey: keyA})
			require.Equal(t, "FORBIDDEN", r.code(t), r.Body)
			require.Equal(t, before, s.claimState("jb"))
			requireSecrets(t, sec["jb"], s.findNext(runnerB, "jb", "e", keyB))
		})
	})
}

// TestDecryptOnlyWhenSecretsAreAsked: findNext decrypts nothing without the
// job key header, nor when no secret is selected; with both it decrypts
// once for the whole claim, before claiming (fragments and directives
// count), and a response decrypts a job's secrets once however many claims
// it shows.
func TestDecryptOnlyWhenSecretsAreAsked(t *testing.T) {
	ck := &countingKeyring{Keyring: age.New()}
	s := newStack(t, storeKinds[0].Open(t, backends.NewFakeClock(t0), 1)[0],
		withConfig(func(c *server.Config) { c.Keyring = ck }))
	keyA, keyB := s.define()
	sec := s.setSecrets()
	for _, id := range []string{"1", "2", "3", "4", "5"} {
		s.publish("a", id)
	}

	// No header: a claim, null secrets, no decryption.
	c := s.findNext(runnerA, "ja", "e", "")
	require.Equal(t, "1", c.DataID)
	require.Nil(t, c.Output.Secret)
	require.EqualValues(t, 0, ck.decrypts.Load())

	// The header but no secret selected: a claim, no decryption, even with
	// a wrong key.
	const noSecretQ = `mutation { findNext(job: "ja", executor: "e") { dataid output { dataset } inputs { url } } }`
	r := s.send(request{who: runnerA, query: noSecretQ, jobKey: keyB})
	require.Empty(t, r.Errors, r.Body)
	require.Contains(t, r.Body, `"dataid":"2"`)
	// A secret skipped by a directive is not selected either.
	const skippedQ = `mutation { findNext(job: "ja", executor: "e") { dataid output { secret @skip(if: true) } } }`
	r = s.send(request{who: runnerA, query: skippedQ, jobKey: keyB})
	require.Empty(t, r.Errors, r.Body)
	require.Contains(t, r.Body, `"dataid":"3"`)
	require.EqualValues(t, 0, ck.decrypts.Load())

	// A secret selected through a fragment, with a wrong key: FORBIDDEN
	// and no claim.
	const fragmentQ = `fragment S on DatasetAccess { secret }
		mutation { findNext(job: "ja", executor: "e") { dataid inputs { ...S } } }`
	before := s.claimState("ja")
	r = s.send(request{who: runnerA, query: fragmentQ, jobKey: keyB})
	require.Equal(t, "FORBIDDEN", r.code(t), r.Body)
	require.Equal(t, before, s.claimState("ja"))
	require.EqualValues(t, 1, ck.decrypts.Load())

	// The right key and every secret: one decryption for output and inputs.
	c = s.findNext(runnerA, "ja", "e", keyA)
	require.Equal(t, "4", c.DataID)
	requireSecrets(t, sec["ja"], c)
	require.EqualValues(t, 2, ck.decrypts.Load())

	// Four live claims of ja listed with their secrets: one decryption.
	var claims []claimDoc
	s.send(request{who: runnerA, query: claimsSecretsQ, vars: vars("job", "ja"), jobKey: keyA}).field(t, "claims", &claims)
	require.Len(t, claims, 4)
	for i := range claims {
		requireSecrets(t, sec["ja"], &claims[i])
	}
	require.EqualValues(t, 3, ck.decrypts.Load())

	// A job without credentials: null secrets, nothing to decrypt.
	s.ok(admin, upsertDatasetQ, vars("in", map[string]any{"id": "d", "url": "s3://lake"}))
	var p struct{ JobKey *string }
	s.ok(admin, upsertJobQ, vars("in", map[string]any{"id": "jd", "inputs": []string{"a"}, "output": "d"})).field(t, "upsertJob", &p)
	require.NotNil(t, p.JobKey)
	c = s.findNext(admin, "jd", "e", *p.JobKey)
	require.NotNil(t, c)
	require.Nil(t, c.Output.Secret)
	require.Nil(t, c.Inputs[0].Secret)
	require.EqualValues(t, 3, ck.decrypts.Load())
}

// TestEachJobUsesItsKeyringKind: a job's secrets are always encrypted and
// decrypted by the keyring of its key's recorded kind. A server whose
// default is Vault still serves the age jobs made before; a server without
// Vault answers UNAVAILABLE, naming the setting to fix, for a Vault job's
// secrets, and claims nothing.
func TestEachJobUsesItsKeyringKind(t *testing.T) {
	v := startVault(t)
	tok := v.setup()
	stores := storeKinds[0].Open(t, backends.NewFakeClock(t0), 2)
	ageSrv := newStack(t, stores[0])
	vaultSrv := newVaultStack(t, stores[1], v.keyring(tok))

	// ja and jb get age keys from the age server; jv a Vault key from the
	// Vault server.
	keyA, _ := ageSrv.define()
	vaultSrv.ok(admin, upsertDatasetQ, vars("in", map[string]any{"id": "d", "url": "postgres://db/d"}))
	var p struct {
		Job struct {
			Key struct{ Kind, Public string }
		}
		JobKey *string
	}
	vaultSrv.ok(admin, upsertJobQ, vars("in", map[string]any{"id": "jv", "inputs": []string{"a"}, "output": "d"})).field(t, "upsertJob", &p)
	require.Equal(t, "vault", p.Job.Key.Kind)
	require.NotNil(t, p.JobKey)
	keyV := *p.JobKey
	// Upserting jv again through the age server keeps its Vault key.
	ageSrv.ok(admin, upsertJobQ, vars("in", map[string]any{"id": "jv", "inputs": []string{"a"}, "output": "d", "description": "v"})).field(t, "upsertJob", &p)
	require.Equal(t, "vault", p.Job.Key.Kind)
	require.Nil(t, p.JobKey)

	// The Vault server sets credentials of both kinds, each with its kind.
	pwA, pwV, pwD := "Pw-ja-a-"+randHex(8), "Pw-jv-a-"+randHex(8), "Pw-jv-d-"+randHex(8)
	vaultSrv.ok(admin, setCredentialQ, vars("job", "ja", "d", "a", "s", pwA))
	vaultSrv.ok(admin, setCredentialQ, vars("job", "jv", "d", "a", "s", pwV))
	vaultSrv.ok(admin, setCredentialQ, vars("job", "jv", "d", "d", "s", pwD))
	for job, kind := range map[string]string{"ja": "age", "jv": "vault"} {
		creds, err := stores[0].Credentials(t.Context(), job)
		require.NoError(t, err)
		for _, c := range creds {
			require.Equal(t, kind, c.KeyKind, "credential of %s for %s", job, c.Dataset)
		}
	}

	// The Vault server serves the age job with its age key and the Vault
	// job with its token.
	s := vaultSrv
	s.publish("a", "1")
	c := s.findNext(runnerA, "ja", "e", keyA)
	require.Equal(t, pwA, *c.Inputs[0].Secret)
	require.Nil(t, c.Output.Secret, "ja has no credential for b")
	requireSecrets(t, map[string]string{"a": pwV, "d": pwD}, s.findNext(admin, "jv", "e", keyV))

	// The age-only server: UNAVAILABLE for jv's secrets, no claim.
	s = ageSrv
	s.publish("a", "2")
	before := s.claimState("jv")
	for _, r := range []request{
		{who: admin, query: findNextQ, vars: vars("job", "jv", "ex", "e"), jobKey: keyV},
		{who: admin, query: claimSecretsQ, vars: vars("job", "jv", "id", "2", "ex", "e"), jobKey: keyV},
		{who: admin, query: forceSecretsQ, vars: vars("job", "jv", "id", "2", "ex", "e"), jobKey: keyV},
		{who: admin, query: setCredentialQ, vars: vars("job", "jv", "d", "a", "s", pwV)},
	} {
		resp := s.send(r)
		require.Equal(t, "UNAVAILABLE", resp.code(t), resp.Body)
		msg := resp.Errors[0].Message
		require.Contains(t, msg, `job "jv"'s key is a vault key`)
		require.Contains(t, msg, "--keys vault://")
		require.Equal(t, before, s.claimState("jv"))
	}
	// It still serves the age job, and claims for jv without the job key
	// (nothing to decrypt then).
	c = s.findNext(runnerA, "ja", "e", keyA)
	require.Equal(t, pwA, *c.Inputs[0].Secret)
	c = s.findNext(admin, "jv", "e", "")
	require.Equal(t, "2", c.DataID)
	require.Nil(t, c.Output.Secret)
}

// TestSecretsNeverLeak: a claim with secrets, and every refusal around
// secrets, through the server with debug logging: no plaintext (as is, in
// base64 or hex) and no job key in the log, in any answer but the claim
// itself, in the store's events or in /metrics.
func TestSecretsNeverLeak(t *testing.T) {
	forEachKeyring(t, func(t *testing.T, e keyringEnv) {
		s := e.stack(t, storeKinds[0].Open(t, backends.NewFakeClock(t0), 1)[0])
		keyA, keyB := s.define()
		sec := s.setSecrets()
		s.publish("a", "1")
		s.publish("a", "2")
		keys := []string{keyA, keyB}
		for name, k := range e.foreignKeys(t) {
			if name != "garbage" {
				keys = append(keys, k)
			}
		}

		var answers []string
		send := func(want string, r request) {
			t.Helper()
			resp := s.send(r)
			if want == "" {
				require.Empty(t, resp.Errors, resp.Body)
			} else {
				require.NotEmpty(t, resp.Errors, resp.Body)
			}
			for _, e := range resp.Errors {
				require.Equal(t, want, e.Extensions["code"], resp.Body)
			}
			answers = append(answers, resp.Body)
		}
		big := strings.Repeat(sec["ja"]["a"], 64<<10/len(sec["ja"]["a"])+1)

		// The one answer that holds secrets; the check sees them there.
		c := s.findNext(runnerA, "ja", "e", keyA)
		requireSecrets(t, sec["ja"], c)
		withSecrets := s.send(request{who: runnerA, query: claimsSecretsQ, vars: vars("job", "ja"), jobKey: keyA})
		require.Empty(t, withSecrets.Errors, withSecrets.Body)
		require.Equal(t, "as is", revealed(withSecrets.Body, sec["ja"]["a"]))

		// Refusals.
		for _, k := range keys[1:] {
			send("FORBIDDEN", request{who: runnerA, query: findNextQ, vars: vars("job", "ja", "ex", "e"), jobKey: k})
			send("FORBIDDEN", request{who: runnerA, query: claimsSecretsQ, vars: vars("job", "ja"), jobKey: k})
		}
		send("FORBIDDEN", request{who: reader, query: claimsSecretsQ, vars: vars("job", "ja"), jobKey: keyA})
		send("FORBIDDEN", request{who: runnerA, query: setCredentialQ, vars: vars("job", "ja", "d", "a", "s", sec["ja"]["a"])})
		send("INVALID_ARGUMENT", request{who: admin, query: setCredentialQ, vars: vars("job", "ja", "d", "c", "s", sec["ja"]["a"])})
		send("INVALID_ARGUMENT", request{who: admin, query: setCredentialQ, vars: vars("job", "ja", "d", "a", "s", big)})
		send("NOT_FOUND", request{who: admin, query: setCredentialQ, vars: vars("job", "nope", "d", "a", "s", sec["ja"]["a"])})
		// Reads without the job key, and the end of the claim.
		send("", request{who: admin, query: `{ jobs { id key { kind public } credentials { dataset keyKind updatedAt } }
			events(first: 100) { edges { node { job dataset dataid from to actor executor reason } } } }`})
		send("", request{who: runnerA, query: claimsSecretsQ, vars: vars("job", "ja")})
		send("", request{who: runnerA, query: heartbeatQ, vars: vars("t", *c.Token)})
		send("", request{who: runnerA, query: completeQ, vars: vars("t", *c.Token)})
		if e.vault != nil {
			// Vault down: UNAVAILABLE, with Vault's error in the log.
			e.vault.kill()
			send("UNAVAILABLE", request{who: runnerA, query: findNextQ, vars: vars("job", "ja", "ex", "e"), jobKey: keyA})
			send("UNAVAILABLE", request{who: admin, query: setCredentialQ, vars: vars("job", "ja", "d", "a", "s", sec["ja"]["a"])})
		}

		logs, events, metrics := s.logs.String(), s.allEvents(), s.metricsText()
		// The checks can see what they look for.
		require.Contains(t, logs, "set a credential")
		if e.vault != nil {
			require.Contains(t, logs, "store or key service unavailable")
		}
		require.Contains(t, events, "RUNNING")
		require.Contains(t, metrics, "chunklock_claims_total")
		require.Contains(t, metrics, `chunklock_errors_total{code="FORBIDDEN"}`)

		secrets := append(sec.all(), keys...)
		requireNoSecret(t, "the log", logs, secrets...)
		requireNoSecret(t, "the events", events, secrets...)
		requireNoSecret(t, "/metrics", metrics, secrets...)
		for i, a := range answers {
			requireNoSecret(t, fmt.Sprintf("answer %d", i+1), a, secrets...)
		}
	})
}
