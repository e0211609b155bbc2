package keys

import (
	"github.com/chunklock/chunklock/backends"
)

// MaxSecretSize bounds a dataset secret (a password, a token, a connection
// string). Larger plaintexts are refused with INVALID_ARGUMENT.
const MaxSecretSize = 64 << 10

// MaxJobKeySize bounds the job key a caller presents. Longer keys are refused
// with FORBIDDEN without being parsed or sent anywhere.
const MaxJobKeySize = 4 << 10

// MaxBatch bounds the ciphertexts decrypted in one call.
const MaxBatch = 1024

// CheckJob validates a job id: the keyrings use it in key names, Vault paths
// and policies, so it must have the form of every chunklock id.
func CheckJob(job string) error {
	return backends.ValidateID("job", job)
}

// CheckSecret validates a plaintext before it is encrypted.
func CheckSecret(job string, plaintext []byte) error {
	if len(plaintext) == 0 {
		return backends.InvalidArgument("the secret for job %q is empty; give a non-empty secret", job)
	}
	if len(plaintext) > MaxSecretSize {
		return backends.InvalidArgument("the secret for job %q is %d bytes; a secret may be at most %d bytes", job, len(plaintext), MaxSecretSize)
	}
	return nil
}

// CheckJobKey validates the form of a presented job key without revealing
// it: a missing key, an oversized key or one with characters outside
// printable ASCII (no key of either keyring has them) is FORBIDDEN.
func CheckJobKey(job, jobKey string) error {
	if jobKey == "" {
		return backends.Forbidden("no job key was presented for job %q; send the job's key (header X-Chunklock-Job-Key)", job)
	}
	if len(jobKey) > MaxJobKeySize {
		return backends.Forbidden("the key presented for job %q is not a valid job key (longer than %d bytes)", job, MaxJobKeySize)
	}
	for i := 0; i < len(jobKey); i++ {
		if c := jobKey[i]; c < 0x21 || c > 0x7e {
			return backends.Forbidden("the key presented for job %q is not a valid job key (it contains whitespace, control or non-ASCII characters)", job)
		}
	}
	return nil
}

// CheckCiphertexts validates a batch before it is decrypted or rewrapped.
func CheckCiphertexts(job string, ciphertexts [][]byte) error {
	if len(ciphertexts) > MaxBatch {
		return backends.InvalidArgument("%d ciphertexts given for job %q; decrypt at most %d at a time", len(ciphertexts), job, MaxBatch)
	}
	for i, c := range ciphertexts {
		if len(c) == 0 {
			return backends.InvalidArgument("ciphertext %d of %d for job %q is empty; set the credential again", i+1, len(ciphertexts), job)
		}
	}
	return nil
}
