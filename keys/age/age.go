// Package age is chunklock's default keyring: each job gets its own age
// X25519 identity. The store keeps only the recipient (age1...), which can
// encrypt but not decrypt; the identity (AGE-SECRET-KEY-1...) is the job key,
// handed to the caller once and never stored.
//
// Ciphertexts are binary age files, one per secret.
package age

import (
	"bytes"
	"context"
	"errors"
	"io"

	agelib "filippo.io/age"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/keys"
)

// Kind is the name of this keyring, stored with jobs and credentials.
const Kind = "age"

// Keyring implements keys.Keyring with age X25519 identities. It holds no
// state and is safe for concurrent use.
type Keyring struct{}

var _ keys.Keyring = Keyring{}

// New returns the age keyring.
func New() Keyring { return Keyring{} }

// Kind returns "age".
func (Keyring) Kind() string { return Kind }

// CreateJobKey generates a new identity for job. public is its recipient,
// jobKey the identity. Calling it again for the same job makes a different
// key: secrets encrypted to the old recipient must be set again.
func (Keyring) CreateJobKey(ctx context.Context, job string) (public, jobKey string, err error) {
	if err := keys.CheckJob(job); err != nil {
		return "", "", err
	}
	id, err := agelib.GenerateX25519Identity()
	if err != nil {
		return "", "", errors.New("age: generating a job key failed: the system's random source is unavailable")
	}
	return id.Recipient().String(), id.String(), nil
}

// Encrypt encrypts plaintext to the job's recipient.
func (Keyring) Encrypt(ctx context.Context, job, public string, plaintext []byte) ([]byte, error) {
	if err := keys.CheckJob(job); err != nil {
		return nil, err
	}
	if err := keys.CheckSecret(job, plaintext); err != nil {
		return nil, err
	}
	r, err := parseRecipient(job, public)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w, err := agelib.Encrypt(&buf, r)
	if err != nil {
		return nil, errors.New("age: encrypting a secret failed: the system's random source is unavailable")
	}
	// Writes to a bytes.Buffer cannot fail; Close flushes the last chunk.
	if _, err := w.Write(plaintext); err != nil {
		return nil, errors.New("age: encrypting a secret failed")
	}
	if err := w.Close(); err != nil {
		return nil, errors.New("age: encrypting a secret failed")
	}
	return buf.Bytes(), nil
}

// Decrypt decrypts the job's ciphertexts with jobKey, the job's identity.
// The identity must belong to the job's recipient: any other well-formed
// identity, a malformed one or none is FORBIDDEN, and so is a ciphertext
// that was not encrypted to this job.
func (Keyring) Decrypt(ctx context.Context, job, public, jobKey string, ciphertexts [][]byte) ([][]byte, error) {
	if err := keys.CheckJob(job); err != nil {
		return nil, err
	}
	if _, err := parseRecipient(job, public); err != nil {
		return nil, err
	}
	if err := keys.CheckJobKey(job, jobKey); err != nil {
		return nil, err
	}
	if err := keys.CheckCiphertexts(job, ciphertexts); err != nil {
		return nil, err
	}
	id, err := agelib.ParseX25519Identity(jobKey)
	if err != nil {
		// The parse error may quote parts of the key: it is not kept.
		return nil, backends.Forbidden("the key presented for job %q is not a valid age identity (want AGE-SECRET-KEY-1...)", job)
	}
	if id.Recipient().String() != public {
		return nil, backends.Forbidden("the key presented for job %q is not that job's key", job)
	}
	out := make([][]byte, len(ciphertexts))
	for i, c := range ciphertexts {
		if err := ctx.Err(); err != nil {
			return nil, backends.Unavailable(err, "decrypting secrets for job %q was canceled; retry", job)
		}
		p, err := decryptOne(id, c)
		if err != nil {
			return nil, describe(err, job, i, len(ciphertexts))
		}
		out[i] = p
	}
	return out, nil
}

// errNotForJob and errCorrupt classify a failed decryption without keeping
// the library's error, which may quote header lines of the ciphertext.
var (
	errNotForJob = errors.New("not encrypted to this job's key")
	errCorrupt   = errors.New("corrupt or not an age ciphertext")
	errTooLarge  = errors.New("plaintext exceeds the secret size limit")
)

func decryptOne(id *agelib.X25519Identity, c []byte) ([]byte, error) {
	r, err := agelib.Decrypt(bytes.NewReader(c), id)
	if err != nil {
		var noMatch *agelib.NoIdentityMatchError
		if errors.As(err, &noMatch) {
			return nil, errNotForJob
		}
		return nil, errCorrupt
	}
	p, err := io.ReadAll(io.LimitReader(r, keys.MaxSecretSize+1))
	if err != nil {
		return nil, errCorrupt
	}
	if len(p) > keys.MaxSecretSize {
		return nil, errTooLarge
	}
	return p, nil
}

func describe(err error, job string, i, n int) error {
	if errors.Is(err, errNotForJob) {
		return backends.Forbidden("ciphertext %d of %d was not encrypted to job %q's key; set the credential again for this job", i+1, n, job)
	}
	return backends.InvalidArgument("ciphertext %d of %d for job %q cannot be decrypted: %v; set the credential again", i+1, n, job, err)
}

func parseRecipient(job, public string) (*agelib.X25519Recipient, error) {
	if public == "" {
		return nil, backends.InvalidArgument("job %q has no age recipient; create the job's key first", job)
	}
	r, err := agelib.ParseX25519Recipient(public)
	if err != nil {
		return nil, backends.InvalidArgument("the public key stored for job %q is not an age recipient (want age1...); create the job's key again", job)
	}
	return r, nil
}
