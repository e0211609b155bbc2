package age_test

import (
	"context"
	"testing"

	agelib "filippo.io/age"
	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/keys/keystest"
)

func TestConformance(t *testing.T) {
	keystest.Run(t, keystest.Harness{
		Keyring: age.New(),
		ForeignKeys: func(t *testing.T, job keystest.Job) map[string]string {
			other, err := agelib.GenerateX25519Identity()
			require.NoError(t, err)
			return map[string]string{
				"another age identity":    other.String(),
				"the job key with a typo": keystest.Typo(job.Key),
			}
		},
	})
}

// The store keeps only the recipient; the job key is the matching identity.
func TestPublicIsRecipientAndKeyIsIdentity(t *testing.T) {
	k := age.New()
	require.Equal(t, "age", k.Kind())
	public, key, err := k.CreateJobKey(context.Background(), "job-1")
	require.NoError(t, err)
	r, err := agelib.ParseX25519Recipient(public)
	require.NoError(t, err)
	id, err := agelib.ParseX25519Identity(key)
	require.NoError(t, err)
	require.Equal(t, r.String(), id.Recipient().String())

	// A second key for the same job is a different key: the first one
	// cannot read what is encrypted to the second.
	public2, _, err := k.CreateJobKey(context.Background(), "job-1")
	require.NoError(t, err)
	require.NotEqual(t, public, public2)
	c, err := k.Encrypt(context.Background(), "job-1", public2, []byte("rotated-secret-value"))
	require.NoError(t, err)
	_, err = k.Decrypt(context.Background(), "job-1", public2, key, [][]byte{c})
	keystest.RequireCode(t, err, backends.CodeForbidden, []byte(key), c, []byte("rotated-secret-value"))
}

// A ciphertext made for the job with another tool (the age CLI, say)
// decrypts: the format is plain age.
func TestDecryptsPlainAgeFiles(t *testing.T) {
	k := age.New()
	public, key, err := k.CreateJobKey(context.Background(), "job-2")
	require.NoError(t, err)
	r, err := agelib.ParseX25519Recipient(public)
	require.NoError(t, err)
	var buf bytesBuffer
	w, err := agelib.Encrypt(&buf, r)
	require.NoError(t, err)
	_, err = w.Write([]byte("made-elsewhere"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	got, err := k.Decrypt(context.Background(), "job-2", public, key, [][]byte{buf.b})
	require.NoError(t, err)
	require.Equal(t, "made-elsewhere", string(got[0]))
}

// A canceled context stops a batch with UNAVAILABLE.
func TestDecryptCanceled(t *testing.T) {
	k := age.New()
	public, key, err := k.CreateJobKey(context.Background(), "job-3")
	require.NoError(t, err)
	c, err := k.Encrypt(context.Background(), "job-3", public, []byte("canceled-secret"))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = k.Decrypt(ctx, "job-3", public, key, [][]byte{c})
	keystest.RequireCode(t, err, backends.CodeUnavailable, []byte(key), c)
}

type bytesBuffer struct{ b []byte }

func (w *bytesBuffer) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }
