// Package keyops holds the operator's key operations that touch both the
// store and the key service, for `chunklock keys` and for tests:
//
//   - Rotate adds a version to a job's Vault transit key, rewraps every
//     stored credential of the job to it inside Vault (no plaintext ever
//     leaves Vault, and the server's token suffices) and, on request,
//     retires the older versions (min_decryption_version);
//   - NewVaultToken mints a fresh job token for a job whose Vault token was
//     lost; the job's transit key and credentials stay as they are;
//   - ReplaceAgeKey gives a job a new age key. An age identity cannot be
//     recovered (the store keeps only its recipient), so the job's
//     credentials must then be set again.
package keyops

import (
	"context"
	"fmt"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/keys"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/keys/vault"
)

// Rotation is what Rotate did.
type Rotation struct {
	// Job is the job whose key was rotated.
	Job string
	// Key is the job's transit key.
	Key string
	// Version is the key's new latest version: every stored credential of
	// the job is encrypted with it (or a later one) afterwards.
	Version int
	// Rewrapped counts the credentials rewritten; Skipped those left alone
	// because they were set anew while Rotate ran (they are checked too).
	Rewrapped, Skipped int
	// MinDecryptionVersion is the oldest version Vault still decrypts with.
	MinDecryptionVersion int
}

// Rotate rotates job's Vault transit key and rewraps the job's stored
// credentials to the new version; with retire, it then sets the key's
// min_decryption_version to that version, so that ciphertexts made with
// older versions (copies of the store included) can no longer be
// decrypted. It refuses to retire anything while a stored credential is
// still below the new version.
//
// Rewrapped ciphertexts are written back only where the stored ciphertext
// is still the one that was rewrapped, so a credential set while Rotate runs
// is kept. Running Rotate again after a failure is safe.
func Rotate(ctx context.Context, store backends.Store, k *vault.Keyring, job string, retire bool) (Rotation, error) {
	rot := Rotation{Job: job, Key: k.KeyName(job)}
	if err := vaultJob(ctx, store, k, job); err != nil {
		return rot, err
	}
	creds, err := store.Credentials(ctx, job)
	if err != nil {
		return rot, err
	}
	for _, c := range creds {
		if err := checkVaultCredential(c); err != nil {
			return rot, err
		}
	}

	if rot.Version, err = k.Rotate(ctx, job); err != nil {
		return rot, err
	}
	old := make(map[string][]byte, len(creds))
	for start := 0; start < len(creds); start += keys.MaxBatch {
		batch := creds[start:min(start+keys.MaxBatch, len(creds))]
		cts := make([][]byte, len(batch))
		for i, c := range batch {
			cts[i] = c.Ciphertext
		}
		rewrapped, err := k.Rewrap(ctx, job, cts)
		if err != nil {
			return rot, err
		}
		for i, c := range batch {
			old[c.Dataset] = c.Ciphertext
			c.Ciphertext = rewrapped[i]
			batch[i] = c
		}
	}

	// Write back what nobody changed meanwhile: each write is conditional
	// on the stored ciphertext still being the one rewrapped.
	for _, c := range creds {
		ok, err := store.ReplaceCredential(ctx, backends.Credential{Job: job, Dataset: c.Dataset, KeyKind: vault.Kind, Ciphertext: c.Ciphertext}, old[c.Dataset])
		if err != nil {
			return rot, err
		}
		if !ok {
			rot.Skipped++
			continue
		}
		rot.Rewrapped++
	}

	// Every stored credential must now be at the new version or later.
	current, err := store.Credentials(ctx, job)
	if err != nil {
		return rot, err
	}
	for _, c := range current {
		if err := checkVaultCredential(c); err != nil {
			return rot, err
		}
		if v, _ := vault.KeyVersion(c.Ciphertext); v < rot.Version {
			return rot, fmt.Errorf("keyops: the credential of job %q for dataset %q is still at key version %d, below the new version %d; run the rotation again", job, c.Dataset, v, rot.Version)
		}
	}

	if retire {
		if err := k.SetMinDecryptionVersion(ctx, job, rot.Version); err != nil {
			return rot, err
		}
	}
	info, err := k.KeyInfo(ctx, job)
	if err != nil {
		return rot, err
	}
	rot.MinDecryptionVersion = info.MinDecryption
	return rot, nil
}

// checkVaultCredential refuses a credential Vault cannot rewrap.
func checkVaultCredential(c backends.Credential) error {
	if c.KeyKind != vault.Kind {
		return backends.InvalidArgument("the credential of job %q for dataset %q is encrypted to a %q key, not the job's Vault key; set it again (setCredential), then rotate", c.Job, c.Dataset, c.KeyKind)
	}
	if _, err := vault.KeyVersion(c.Ciphertext); err != nil {
		return backends.InvalidArgument("the credential of job %q for dataset %q is not a Vault transit ciphertext; set it again (setCredential), then rotate", c.Job, c.Dataset)
	}
	return nil
}

// vaultJob checks that job exists and that its key is k's transit key for
// it.
func vaultJob(ctx context.Context, store backends.Store, k *vault.Keyring, job string) error {
	j, err := store.Job(ctx, job)
	if err != nil {
		return err
	}
	switch {
	case j.Key.Public == "":
		return backends.InvalidArgument("job %q has no key yet; upsert the job once to create it", job)
	case j.Key.Kind != vault.Kind:
		return backends.InvalidArgument("job %q's key comes from the %s keyring, not Vault; Vault key operations do not apply to it", job, j.Key.Kind)
	case j.Key.Public != k.KeyName(job):
		return backends.InvalidArgument("job %q's key is the transit key %q, but this keyring names it %q; give --keys the mount and prefix the server runs with", job, j.Key.Public, k.KeyName(job))
	}
	return nil
}

// NewVaultToken mints a fresh job token for job, whose key must be a Vault
// key: it may decrypt the job's existing credentials, which stay as they
// are. Earlier tokens stay valid until they expire or are revoked (`vault
// token revoke`).
func NewVaultToken(ctx context.Context, store backends.Store, k *vault.Keyring, job string) (string, error) {
	if err := vaultJob(ctx, store, k, job); err != nil {
		return "", err
	}
	public, token, err := k.CreateJobKey(ctx, job)
	if err != nil {
		return "", err
	}
	if public != k.KeyName(job) {
		return "", fmt.Errorf("keyops: Vault made the key %q for job %q, not %q", public, job, k.KeyName(job))
	}
	return token, nil
}

// ReplaceAgeKey gives job, whose key must be an age key, a new age key and
// returns the new identity (the job key). Its stored credentials were
// encrypted to the old key: set each of them again.
func ReplaceAgeKey(ctx context.Context, store backends.Store, job string) (string, error) {
	j, err := store.Job(ctx, job)
	if err != nil {
		return "", err
	}
	if j.Key.Public != "" && j.Key.Kind != age.Kind {
		return "", backends.InvalidArgument("job %q's key comes from the %s keyring, not age; only age keys are replaced this way", job, j.Key.Kind)
	}
	public, key, err := age.New().CreateJobKey(ctx, job)
	if err != nil {
		return "", err
	}
	j.Key = backends.JobKey{Kind: age.Kind, Public: public}
	if _, err := store.UpsertJob(ctx, j); err != nil {
		return "", err
	}
	return key, nil
}
