// Package keystest is the conformance suite every keys.Keyring passes: the
// same cases run against the age keyring and against a real Vault server,
// so that the keyrings cannot drift apart.
//
// Every refused call is also checked for leaks: no error string may contain
// a plaintext, a ciphertext or a job key (nor their base64 forms).
package keystest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/keys"
)

// Harness is what the suite needs from a keyring.
type Harness struct {
	// Keyring is the keyring under test. The suite uses it from parallel
	// subtests and creates a fresh job for every case.
	Keyring keys.Keyring
	// ForeignKeys returns well-formed keys, labelled, that are not job's key
	// (job already has one: job.Key): each must be refused with FORBIDDEN. For age,
	// another identity; for Vault, a token without the job's policy and the
	// server's own token.
	ForeignKeys func(t *testing.T, job Job) map[string]string
}

// Run runs every case against h.
func Run(t *testing.T, h Harness) {
	require.NotNil(t, h.Keyring, "Harness.Keyring")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, h)
		})
	}
}

var cases = []struct {
	name string
	run  func(t *testing.T, h Harness)
}{
	{"RoundTrip", testRoundTrip},
	{"BatchAlignedWithInput", testBatchAligned},
	{"EmptyBatch", testEmptyBatch},
	{"OtherJobsKeyIsForbidden", testOtherJobsKey},
	{"WrongKeysAreForbidden", testWrongKeys},
	{"InvalidInput", testInvalidInput},
	{"ConcurrentUse", testConcurrentUse},
}

// Job is a created job key.
type Job struct {
	ID, Public, Key string
}

// NewJob creates a key for a fresh, randomly named job.
func NewJob(t *testing.T, k keys.Keyring) Job {
	t.Helper()
	id := "job-" + randHex(6)
	public, key, err := k.CreateJobKey(context.Background(), id)
	require.NoError(t, err, "CreateJobKey(%q)", id)
	require.NotEmpty(t, public, "public part")
	require.NotEmpty(t, key, "job key")
	require.NotEqual(t, public, key, "the public part must not be the job key")
	return Job{ID: id, Public: public, Key: key}
}

// Secret returns a distinctive plaintext.
func Secret(label string) []byte {
	return []byte(fmt.Sprintf("%s-secret-%s", label, randHex(12)))
}

// Encrypt encrypts each plaintext to j.
func Encrypt(t *testing.T, k keys.Keyring, j Job, plaintexts ...[]byte) [][]byte {
	t.Helper()
	out := make([][]byte, len(plaintexts))
	for i, p := range plaintexts {
		c, err := k.Encrypt(context.Background(), j.ID, j.Public, p)
		require.NoError(t, err, "Encrypt")
		require.NotEmpty(t, c)
		if len(p) >= 8 {
			require.False(t, bytes.Contains(c, p), "a ciphertext contains its plaintext")
		}
		out[i] = c
	}
	return out
}

// RequireCode checks that err has the given code and that its message
// contains none of secrets: each secret is checked as is, in base64, and by
// its last 12 characters (a partial echo of a key or a ciphertext).
func RequireCode(t *testing.T, err error, code backends.Code, secrets ...[]byte) {
	t.Helper()
	require.Error(t, err, "want %s", code)
	require.Equal(t, code, backends.CodeOf(err), "error: %v", err)
	msg := err.Error()
	require.NotEmpty(t, msg)
	for _, s := range secrets {
		for _, form := range leakForms(s) {
			require.NotContains(t, msg, form, "the error message leaks a secret")
		}
	}
}

func leakForms(s []byte) []string {
	if len(s) < 8 {
		return nil
	}
	forms := []string{string(s), base64.StdEncoding.EncodeToString(s)}
	if len(s) >= 24 {
		forms = append(forms, string(s[len(s)-12:]))
	}
	return forms
}

// Secrets collects byte forms of everything that must never appear in an
// error message.
func Secrets(jobs []Job, plaintexts, ciphertexts [][]byte, keys ...string) [][]byte {
	var out [][]byte
	for _, j := range jobs {
		out = append(out, []byte(j.Key))
	}
	out = append(out, plaintexts...)
	out = append(out, ciphertexts...)
	for _, k := range keys {
		out = append(out, []byte(k))
	}
	return out
}

func testRoundTrip(t *testing.T, h Harness) {
	k := h.Keyring
	require.NotEmpty(t, k.Kind())
	j := NewJob(t, k)
	p := Secret("round-trip")
	c := Encrypt(t, k, j, p)
	got, err := k.Decrypt(context.Background(), j.ID, j.Public, j.Key, c)
	require.NoError(t, err)
	require.Equal(t, [][]byte{p}, got)

	// Encryption is randomized: the same secret twice gives two ciphertexts.
	c2 := Encrypt(t, k, j, p)
	require.NotEqual(t, c[0], c2[0])
}

func testBatchAligned(t *testing.T, h Harness) {
	k := h.Keyring
	j := NewJob(t, k)
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	plain := [][]byte{
		Secret("first"),
		binary,
		[]byte("x"),
		bytes.Repeat([]byte("long"), keys.MaxSecretSize/4),
		Secret("last"),
	}
	cipher := Encrypt(t, k, j, plain...)

	// Reversed, with a duplicate: the result follows the input order.
	order := []int{4, 3, 2, 1, 0, 2}
	batch := make([][]byte, len(order))
	for i, o := range order {
		batch[i] = cipher[o]
	}
	got, err := k.Decrypt(context.Background(), j.ID, j.Public, j.Key, batch)
	require.NoError(t, err)
	require.Len(t, got, len(order))
	for i, o := range order {
		require.Equal(t, plain[o], got[i], "result %d", i)
	}
}

func testEmptyBatch(t *testing.T, h Harness) {
	k := h.Keyring
	j := NewJob(t, k)
	got, err := k.Decrypt(context.Background(), j.ID, j.Public, j.Key, nil)
	require.NoError(t, err)
	require.Empty(t, got)
}

func testOtherJobsKey(t *testing.T, h Harness) {
	k := h.Keyring
	ctx := context.Background()
	a, b := NewJob(t, k), NewJob(t, k)
	pa, pb := Secret("job-a"), Secret("job-b")
	ca, cb := Encrypt(t, k, a, pa), Encrypt(t, k, b, pb)
	secrets := Secrets([]Job{a, b}, [][]byte{pa, pb}, append(ca, cb...))

	// A's key on B's job.
	_, err := k.Decrypt(ctx, b.ID, b.Public, a.Key, cb)
	RequireCode(t, err, backends.CodeForbidden, secrets...)

	// B's ciphertext presented as A's, with A's key.
	_, err = k.Decrypt(ctx, a.ID, a.Public, a.Key, cb)
	RequireCode(t, err, backends.CodeForbidden, secrets...)

	// A mixed batch is refused as a whole: A's plaintext is not returned.
	got, err := k.Decrypt(ctx, a.ID, a.Public, a.Key, [][]byte{ca[0], cb[0]})
	RequireCode(t, err, backends.CodeForbidden, secrets...)
	require.Nil(t, got)

	// Each key still reads its own job's secrets.
	got, err = k.Decrypt(ctx, b.ID, b.Public, b.Key, cb)
	require.NoError(t, err)
	require.Equal(t, [][]byte{pb}, got)
}

func testWrongKeys(t *testing.T, h Harness) {
	k := h.Keyring
	j := NewJob(t, k)
	p := Secret("wrong-keys")
	c := Encrypt(t, k, j, p)

	wrong := map[string]string{
		"empty key":                   "",
		"malformed key":               "not-a-job-key",
		"malformed age identity":      "AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ",
		"malformed vault token":       "hvs.CAESIMalformedTokenMalformedTokenMalformed",
		"key with spaces":             "AGE-SECRET-KEY-1 " + j.Key,
		"key with a newline":          j.Key + "\nX-Other: 1",
		"key with a NUL byte":         j.Key[:len(j.Key)/2] + "\x00",
		"oversized key":               strings.Repeat("k", keys.MaxJobKeySize+1),
		"the public part as key":      j.Public,
		"the job key in another case": FlipCase(j.Key),
	}
	if h.ForeignKeys != nil {
		for name, key := range h.ForeignKeys(t, j) {
			wrong[name] = key
		}
	}
	for name, key := range wrong {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			secrets := Secrets([]Job{j}, [][]byte{p}, c)
			if key != j.Public { // the public part is no secret
				secrets = append(secrets, []byte(key))
			}
			got, err := k.Decrypt(context.Background(), j.ID, j.Public, key, c)
			RequireCode(t, err, backends.CodeForbidden, secrets...)
			require.Nil(t, got)
		})
	}
}

func testInvalidInput(t *testing.T, h Harness) {
	k := h.Keyring
	ctx := context.Background()
	j := NewJob(t, k)
	p := Secret("invalid-input")
	c := Encrypt(t, k, j, p)
	secrets := Secrets([]Job{j}, [][]byte{p}, c)

	for _, bad := range []string{"", "Upper", "../escape", "a b", "job/x", "job*", strings.Repeat("j", 64)} {
		_, _, err := k.CreateJobKey(ctx, bad)
		RequireCode(t, err, backends.CodeInvalidArgument)
		_, err = k.Encrypt(ctx, bad, j.Public, p)
		RequireCode(t, err, backends.CodeInvalidArgument, secrets...)
		_, err = k.Decrypt(ctx, bad, j.Public, j.Key, c)
		RequireCode(t, err, backends.CodeInvalidArgument, secrets...)
	}

	_, err := k.Encrypt(ctx, j.ID, j.Public, nil)
	RequireCode(t, err, backends.CodeInvalidArgument, secrets...)
	big := bytes.Repeat([]byte("b"), keys.MaxSecretSize+1)
	_, err = k.Encrypt(ctx, j.ID, j.Public, big)
	RequireCode(t, err, backends.CodeInvalidArgument, secrets...)
	_, err = k.Encrypt(ctx, j.ID, "not-a-public-key", p)
	RequireCode(t, err, backends.CodeInvalidArgument, secrets...)
	_, err = k.Encrypt(ctx, j.ID, "", p)
	RequireCode(t, err, backends.CodeInvalidArgument, secrets...)

	for name, batch := range map[string][][]byte{
		"empty ciphertext":   {c[0], nil},
		"garbage ciphertext": {[]byte("garbage-that-is-not-a-ciphertext")},
		"too many":           make([][]byte, keys.MaxBatch+1),
	} {
		got, err := k.Decrypt(ctx, j.ID, j.Public, j.Key, batch)
		require.Nil(t, got, name)
		RequireCode(t, err, backends.CodeInvalidArgument, append(secrets, batch...)...)
	}

	// A truncated ciphertext may still look well-formed; then it fails
	// authentication exactly like one made with another key (FORBIDDEN).
	truncated := [][]byte{c[0][:len(c[0])/2]}
	got, err := k.Decrypt(ctx, j.ID, j.Public, j.Key, truncated)
	require.Nil(t, got)
	code := backends.CodeOf(err)
	require.Contains(t, []backends.Code{backends.CodeInvalidArgument, backends.CodeForbidden}, code, "error: %v", err)
	RequireCode(t, err, code, append(secrets, truncated...)...)
}

func testConcurrentUse(t *testing.T, h Harness) {
	k := h.Keyring
	jobs := []Job{NewJob(t, k), NewJob(t, k)}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(j Job) {
			defer wg.Done()
			ctx := context.Background()
			for i := 0; i < 5; i++ {
				p := Secret("concurrent")
				c, err := k.Encrypt(ctx, j.ID, j.Public, p)
				if err != nil {
					errs <- err
					return
				}
				got, err := k.Decrypt(ctx, j.ID, j.Public, j.Key, [][]byte{c})
				if err != nil {
					errs <- err
					return
				}
				if len(got) != 1 || !bytes.Equal(got[0], p) {
					errs <- fmt.Errorf("round trip returned a different secret")
					return
				}
			}
		}(jobs[g%2])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// Typo changes one character in the middle of key. Not every keyring's
// keys are sensitive to every character: a Vault service token
// (hvs.<base64 protobuf>) is looked up by its random part only, so a typo in
// its HMAC still names the same token. Use it where it means a wrong key.
func Typo(key string) string {
	b := []byte(key)
	i := len(b) / 2
	if b[i] == 'q' {
		b[i] = 'p'
	} else {
		b[i] = 'q'
	}
	return string(b)
}

// FlipCase swaps upper and lower case in key.
func FlipCase(key string) string {
	b := []byte(key)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z':
			b[i] = c - 'a' + 'A'
		case c >= 'A' && c <= 'Z':
			b[i] = c - 'A' + 'a'
		}
	}
	return string(b)
}

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
