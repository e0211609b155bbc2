// Package keys encrypts dataset secrets to per-job keys so that the server
// alone can never decrypt them: it encrypts with a job's public part and
// decrypts only with the job key a caller presents.
//
// Two keyrings implement Keyring: keys/age (the default: one age X25519
// identity per job, the store keeps the recipient) and keys/vault (HashiCorp
// Vault transit: one transit key per job; the job key is a Vault token
// allowed to decrypt with that key only).
package keys

import "context"

// Keyring creates job keys, encrypts secrets to a job and decrypts a job's
// secrets with the job key a caller presents. Errors are backends errors:
// FORBIDDEN for a wrong or missing job key, UNAVAILABLE when the key service
// cannot be reached (the caller may retry), INVALID_ARGUMENT for malformed
// input. No error message ever contains key material, plaintext or
// ciphertext.
type Keyring interface {
	// Kind names the keyring ("age", "vault"); it is stored with each job
	// and credential so a ciphertext is always decrypted by the keyring that
	// made it.
	Kind() string
	// CreateJobKey makes a new key for job. public is stored with the job
	// (it can only encrypt); jobKey goes to the caller once and is never
	// stored by chunklock.
	CreateJobKey(ctx context.Context, job string) (public, jobKey string, err error)
	// Encrypt encrypts plaintext to the job whose public part is given.
	Encrypt(ctx context.Context, job, public string, plaintext []byte) ([]byte, error)
	// Decrypt decrypts a batch of the job's ciphertexts with jobKey, in one
	// round trip to the key service where there is one. The result is
	// aligned with ciphertexts.
	Decrypt(ctx context.Context, job, public, jobKey string, ciphertexts [][]byte) ([][]byte, error)
}
