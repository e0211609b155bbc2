package vault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/keys"
)

// KeyInfo describes the versions of a job's transit key.
type KeyInfo struct {
	// Latest is the version new ciphertexts are made with.
	Latest int
	// MinDecryption is the oldest version Vault still decrypts with.
	MinDecryption int
}

// Rotate adds a version to the job's transit key and returns it. New
// secrets are encrypted with it; existing ciphertexts still decrypt until
// SetMinDecryptionVersion retires their version (Rewrap them first).
func (k *Keyring) Rotate(ctx context.Context, job string) (int, error) {
	if err := keys.CheckJob(job); err != nil {
		return 0, err
	}
	op := fmt.Sprintf("rotate the transit key of job %q", job)
	r, err := k.call(ctx, op, "", http.MethodPost, k.cfg.Mount+"/keys/"+k.KeyName(job)+"/rotate", map[string]any{})
	if err != nil {
		return 0, err
	}
	if err := k.keyAnswer(r, op, job); err != nil {
		return 0, err
	}
	info, err := parseKeyInfo(r.data)
	if err != nil {
		// Older Vault servers answer 204 with no body: read the key.
		return k.latestOrError(ctx, job)
	}
	return info.Latest, nil
}

func (k *Keyring) latestOrError(ctx context.Context, job string) (int, error) {
	info, err := k.KeyInfo(ctx, job)
	if err != nil {
		return 0, err
	}
	return info.Latest, nil
}

// KeyInfo reads the versions of the job's transit key.
func (k *Keyring) KeyInfo(ctx context.Context, job string) (KeyInfo, error) {
	if err := keys.CheckJob(job); err != nil {
		return KeyInfo{}, err
	}
	op := fmt.Sprintf("read the transit key of job %q", job)
	r, err := k.call(ctx, op, "", http.MethodGet, k.cfg.Mount+"/keys/"+k.KeyName(job), nil)
	if err != nil {
		return KeyInfo{}, err
	}
	if err := k.keyAnswer(r, op, job); err != nil {
		return KeyInfo{}, err
	}
	info, err := parseKeyInfo(r.data)
	if err != nil {
		return KeyInfo{}, fmt.Errorf("vault: reading the transit key of job %q: %w", job, err)
	}
	return info, nil
}

// SetMinDecryptionVersion retires the job's key versions below version:
// Vault refuses to decrypt (and to rewrap) ciphertexts made with them.
func (k *Keyring) SetMinDecryptionVersion(ctx context.Context, job string, version int) error {
	if err := keys.CheckJob(job); err != nil {
		return err
	}
	if version < 1 {
		return backends.InvalidArgument("min_decryption_version %d for job %q is invalid: key versions start at 1", version, job)
	}
	op := fmt.Sprintf("set min_decryption_version of job %q's transit key", job)
	r, err := k.call(ctx, op, "", http.MethodPost, k.cfg.Mount+"/keys/"+k.KeyName(job)+"/config", map[string]any{"min_decryption_version": version})
	if err != nil {
		return err
	}
	if r.status == http.StatusBadRequest && !r.missingKey() {
		// Vault's reason names versions only, e.g. a version above the latest.
		return &backends.Error{Code: backends.CodeInvalidArgument, Err: r.cause(),
			Message: fmt.Sprintf("Vault refused min_decryption_version %d for job %q: it must be at most the key's latest version", version, job)}
	}
	return k.keyAnswer(r, op, job)
}

// Rewrap re-encrypts the job's ciphertexts to the latest version of its
// transit key, in one request and inside Vault: no plaintext leaves Vault,
// and the server's token suffices. The result is aligned with ciphertexts.
// A ciphertext made with a retired version, or with another key, cannot be
// rewrapped (FORBIDDEN): set that credential again.
func (k *Keyring) Rewrap(ctx context.Context, job string, ciphertexts [][]byte) ([][]byte, error) {
	if err := keys.CheckJob(job); err != nil {
		return nil, err
	}
	batch, err := batchInput(job, ciphertexts)
	if err != nil {
		return nil, err
	}
	if len(batch) == 0 {
		return [][]byte{}, nil
	}
	op := fmt.Sprintf("rewrap secrets of job %q", job)
	r, err := k.call(ctx, op, "", http.MethodPost, k.path("rewrap", job), map[string]any{"batch_input": batch})
	if err != nil {
		return nil, err
	}
	if err := k.keyAnswer(r, op, job); err != nil {
		return nil, err
	}
	var data struct {
		Results []struct {
			Ciphertext string `json:"ciphertext"`
			Error      string `json:"error"`
		} `json:"batch_results"`
	}
	if err := json.Unmarshal(r.data, &data); err != nil || len(data.Results) != len(batch) {
		return nil, fmt.Errorf("vault: rewrapping %d secrets of job %q returned a malformed answer", len(batch), job)
	}
	if err := firstItemError(job, "rewrapped", len(batch), func(i int) string { return data.Results[i].Error }); err != nil {
		return nil, err
	}
	out := make([][]byte, len(batch))
	for i, res := range data.Results {
		if _, err := KeyVersion([]byte(res.Ciphertext)); err != nil {
			return nil, fmt.Errorf("vault: rewrapping secret %d of %d of job %q returned no ciphertext", i+1, len(batch), job)
		}
		out[i] = []byte(res.Ciphertext)
	}
	return out, nil
}

// keyAnswer classifies the answer to a server-token request on a job's key.
func (k *Keyring) keyAnswer(r *reply, op, job string) error {
	switch {
	case r.ok():
		return nil
	case r.transient():
		return k.unavailable(r, op)
	case r.status == http.StatusNotFound, r.missingKey():
		return backends.NotFound("Vault has no transit key %q for job %q; create the job's key", k.KeyName(job), job)
	case r.status == http.StatusBadRequest && len(r.data) > 0 && string(r.data) != "null":
		// A batch answer with per-item errors: the caller classifies them.
		return nil
	default:
		return k.misconfigured(r, op, setupFix)
	}
}

func parseKeyInfo(data json.RawMessage) (KeyInfo, error) {
	var d struct {
		Latest        *int `json:"latest_version"`
		MinDecryption *int `json:"min_decryption_version"`
	}
	if err := json.Unmarshal(data, &d); err != nil || d.Latest == nil || d.MinDecryption == nil {
		return KeyInfo{}, errors.New("the answer has no key versions")
	}
	return KeyInfo{Latest: *d.Latest, MinDecryption: *d.MinDecryption}, nil
}
