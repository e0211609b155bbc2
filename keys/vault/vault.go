// Package vault is chunklock's production keyring, on HashiCorp Vault's
// transit secrets engine.
//
// Each job has its own transit key, <prefix><job> (the job's public part).
// The server encrypts with its own Vault token, which may create, rotate and
// rewrap job keys and encrypt, but never decrypt. A job key is a Vault token
// that may decrypt with that job's transit key and nothing else; Decrypt
// sends all of a claim's ciphertexts in one request (batch_input) with it.
//
// # Setting Vault up
//
// Setup, run once with an administrator's token, mounts transit and writes:
//
//   - the policy <prefix>server (ServerPolicy): give it to the server's token;
//   - the policy <prefix>job (JobPolicyTemplate): one templated policy for
//     every job token, allowing decrypt on the transit key whose name is the
//     token's entity alias;
//   - the token role <prefix>job: orphan service tokens with only the policy
//     <prefix>job, bound to an entity alias whose name starts with <prefix>.
//
// CreateJobKey creates the job's transit key and mints its token through the
// role, bound to the entity alias <prefix><job>, so that the token's
// effective policy is Policy(job): decrypt on <mount>/decrypt/<prefix><job>.
//
// The server never writes policies: a token allowed to write a policy and
// attach it to tokens it mints can grant itself anything, root included.
//
// # What the server token can and cannot do
//
// It cannot decrypt, export or back up a key, or write policies. It can mint
// a job token for any job (CreateJobKey needs that), so a server that
// misuses its own token can obtain a decrypting token; every such token is
// an audited auth/token/create/<prefix>job request. To keep the server
// strictly unable to decrypt, drop that path from its policy and create job
// keys from an administrator's tool with a separate token. A copy of the
// store alone never reveals a secret either way.
//
// # Job tokens
//
// Job tokens are orphans, so revoking the server's token does not revoke
// them; they carry no default policy, so they cannot renew themselves. They
// live as long as the auth/token mount's TTL allows (768h unless tuned with
// `vault auth tune -max-lease-ttl=... token/`). CreateJobKey on an existing
// job mints a new token for the same transit key: existing ciphertexts stay
// readable with both tokens until the old one expires or is revoked.
//
// # Rotation
//
// Rotate adds a key version (new secrets use it), Rewrap re-encrypts
// ciphertexts to the latest version inside Vault (no plaintext leaves
// Vault), and SetMinDecryptionVersion retires older versions: ciphertexts
// made with them are then refused.
package vault

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/hashicorp/vault/api"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/keys"
)

// Kind is the name of this keyring, stored with jobs and credentials.
const Kind = "vault"

// Keyring implements keys.Keyring on Vault transit. It is safe for
// concurrent use and survives Vault restarts: each operation opens
// connections as needed.
type Keyring struct {
	cfg    Config
	client *api.Client
}

var _ keys.Keyring = (*Keyring)(nil)

// New returns a keyring for cfg. It does not contact Vault.
func New(cfg Config) (*Keyring, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Mount = strings.Trim(cfg.Mount, "/")
	hc := cfg.HTTPClient
	if hc == nil {
		hc = cleanhttp.DefaultPooledClient()
		hc.Transport.(*http.Transport).TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		// The Vault client follows redirects itself, refusing downgrades.
		hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	ac := &api.Config{
		Address:      cfg.Address,
		HttpClient:   hc,
		MaxRetries:   cfg.Retries,
		MinRetryWait: cfg.RetryWaitMin,
		MaxRetryWait: cfg.RetryWaitMax,
		// Each operation sets its own deadline (Config.Timeout) and reads
		// the body before it expires; a client-wide timeout would cancel
		// raw responses before they are read.
		Timeout: 0,
	}
	if cfg.Retries == 0 {
		ac.MinRetryWait, ac.MaxRetryWait = 1, 1
	}
	if cfg.TLS != nil && cfg.HTTPClient == nil {
		if err := ac.ConfigureTLS(cfg.TLS); err != nil {
			return nil, fmt.Errorf("vault: TLS configuration: %w", err)
		}
	}
	client, err := api.NewClient(ac)
	if err != nil {
		return nil, fmt.Errorf("vault: creating the client: %w", err)
	}
	// NewClient reads VAULT_TOKEN, VAULT_NAMESPACE and VAULT_HEADERS from
	// the environment; the keyring uses its Config only.
	client.SetToken(cfg.Token)
	client.SetHeaders(http.Header{api.RequestHeaderName: []string{"true"}})
	if cfg.Namespace != "" {
		client.SetNamespace(cfg.Namespace)
	} else {
		client.ClearNamespace()
	}
	return &Keyring{cfg: cfg, client: client}, nil
}

// Config returns the keyring's configuration without its token.
func (k *Keyring) Config() Config {
	c := k.cfg
	c.Token = ""
	return c
}

// Kind returns "vault".
func (k *Keyring) Kind() string { return Kind }

// KeyName is the transit key of job: the job's public part.
func (k *Keyring) KeyName(job string) string { return k.cfg.Prefix + job }

func (k *Keyring) path(op, job string) string { return k.cfg.Mount + "/" + op + "/" + k.KeyName(job) }

const setupFix = "give the server's token the policy vault.ServerPolicy prints (vault.Setup writes it as <prefix>server), check the mount, and check that the job's transit key exists"

// CreateJobKey creates the job's transit key (if it does not exist yet) and
// mints a job token that may decrypt with it only. public is the key's name.
func (k *Keyring) CreateJobKey(ctx context.Context, job string) (public, jobKey string, err error) {
	if err := keys.CheckJob(job); err != nil {
		return "", "", err
	}
	name := k.KeyName(job)
	op := fmt.Sprintf("create transit key %q for job %q", name, job)
	r, err := k.call(ctx, op, "", http.MethodPost, k.cfg.Mount+"/keys/"+name, map[string]any{"type": "aes256-gcm96"})
	if err != nil {
		return "", "", err
	}
	switch {
	case r.ok():
	case r.transient():
		return "", "", k.unavailable(r, op)
	default:
		return "", "", k.misconfigured(r, op, setupFix)
	}

	op = fmt.Sprintf("mint the job token for job %q", job)
	r, err = k.call(ctx, op, "", http.MethodPost, "auth/token/create/"+RoleName(k.cfg.Prefix), map[string]any{
		"entity_alias":      name,
		"policies":          []string{JobPolicyName(k.cfg.Prefix)},
		"no_default_policy": true,
		"display_name":      "chunklock-job-" + job,
		"meta":              map[string]string{"chunklock_job": job},
	})
	if err != nil {
		return "", "", err
	}
	switch {
	case r.ok():
	case r.transient():
		return "", "", k.unavailable(r, op)
	default:
		return "", "", k.misconfigured(r, op, "run vault.Setup with an administrator's token (it writes the token role "+RoleName(k.cfg.Prefix)+" and the policies), and give the server's token the policy vault.ServerPolicy prints")
	}
	var auth struct {
		ClientToken string `json:"client_token"`
	}
	if err := json.Unmarshal(r.auth, &auth); err != nil || auth.ClientToken == "" {
		return "", "", fmt.Errorf("vault: minting the job token for job %q returned no token", job)
	}
	return name, auth.ClientToken, nil
}

// Encrypt encrypts plaintext with the job's transit key, using the server's
// token. The ciphertext is Vault's "vault:v<version>:..." text.
func (k *Keyring) Encrypt(ctx context.Context, job, public string, plaintext []byte) ([]byte, error) {
	if err := k.checkPublic(job, public); err != nil {
		return nil, err
	}
	if err := keys.CheckSecret(job, plaintext); err != nil {
		return nil, err
	}
	op := fmt.Sprintf("encrypt a secret for job %q", job)
	r, err := k.call(ctx, op, "", http.MethodPost, k.path("encrypt", job), map[string]any{
		"plaintext": base64.StdEncoding.EncodeToString(plaintext),
	})
	if err != nil {
		return nil, err
	}
	switch {
	case r.ok():
	case r.transient():
		return nil, k.unavailable(r, op)
	case r.missingKey():
		return nil, backends.NotFound("Vault has no transit key %q for job %q; create the job's key again", public, job)
	default:
		// The server's token encrypts with "update" only, so Vault answers
		// 403 (not "not found") when the key is missing.
		return nil, k.misconfigured(r, op, setupFix)
	}
	var data struct {
		Ciphertext string `json:"ciphertext"`
	}
	if err := json.Unmarshal(r.data, &data); err != nil || !strings.HasPrefix(data.Ciphertext, "vault:v") {
		return nil, fmt.Errorf("vault: encrypting a secret for job %q returned no ciphertext", job)
	}
	return []byte(data.Ciphertext), nil
}

// Decrypt decrypts the job's ciphertexts in one request, authenticated with
// jobKey (the job's Vault token). A token that may not decrypt with the
// job's key (another job's, the server's, an expired or revoked one) is
// FORBIDDEN, and so is a ciphertext made with another key or with a key
// version below min_decryption_version. An empty batch returns at once
// without contacting Vault.
func (k *Keyring) Decrypt(ctx context.Context, job, public, jobKey string, ciphertexts [][]byte) ([][]byte, error) {
	if err := k.checkPublic(job, public); err != nil {
		return nil, err
	}
	if err := keys.CheckJobKey(job, jobKey); err != nil {
		return nil, err
	}
	batch, err := batchInput(job, ciphertexts)
	if err != nil {
		return nil, err
	}
	if len(batch) == 0 {
		return [][]byte{}, nil
	}
	op := fmt.Sprintf("decrypt secrets for job %q", job)
	r, err := k.call(ctx, op, jobKey, http.MethodPost, k.path("decrypt", job), map[string]any{"batch_input": batch})
	if err != nil {
		return nil, err
	}
	switch {
	case r.status == http.StatusForbidden, r.malformedToken():
		return nil, backends.Forbidden("the key presented for job %q may not decrypt that job's secrets: it is another job's key, or it has expired or been revoked", job)
	case r.says("encryption key not found"):
		return nil, backends.NotFound("Vault has no transit key %q for job %q; create the job's key again and set its credentials", public, job)
	case r.transient():
		return nil, k.unavailable(r, op)
	}
	var data struct {
		Results []struct {
			Plaintext string `json:"plaintext"`
			Error     string `json:"error"`
		} `json:"batch_results"`
	}
	if len(r.data) > 0 && string(r.data) != "null" {
		if err := json.Unmarshal(r.data, &data); err != nil {
			return nil, fmt.Errorf("vault: the answer to decrypting secrets for job %q is not Vault JSON", job)
		}
	}
	if len(data.Results) == 0 {
		return nil, k.misconfigured(r, op, "check the Vault server and the transit mount")
	}
	if len(data.Results) != len(batch) {
		return nil, fmt.Errorf("vault: decrypting %d secrets for job %q returned %d results", len(batch), job, len(data.Results))
	}
	if err := firstItemError(job, "decrypted", len(batch), func(i int) string { return data.Results[i].Error }); err != nil {
		return nil, err
	}
	if !r.ok() {
		return nil, k.misconfigured(r, op, "check the Vault server and the transit mount")
	}
	out := make([][]byte, len(batch))
	for i, res := range data.Results {
		p, err := base64.StdEncoding.DecodeString(res.Plaintext)
		if err != nil {
			return nil, fmt.Errorf("vault: secret %d of %d for job %q came back from Vault malformed", i+1, len(batch), job)
		}
		out[i] = p
	}
	return out, nil
}

// firstItemError classifies the first failed item of a batch by Vault's
// message, which is not kept: the result names the item and the cause in
// chunklock's words.
func firstItemError(job, verb string, n int, itemErr func(int) string) error {
	failed, first := 0, -1
	for i := 0; i < n; i++ {
		if itemErr(i) != "" {
			failed++
			if first < 0 {
				first = i
			}
		}
	}
	if first < 0 {
		return nil
	}
	more := ""
	if failed > 1 {
		more = fmt.Sprintf(" (%d of the %d failed)", failed, n)
	}
	msg := itemErr(first)
	switch {
	case strings.Contains(msg, "disallowed by policy (too old)"):
		return backends.Forbidden("ciphertext %d of %d for job %q was made with a retired key version (below min_decryption_version) and cannot be %s%s; set the credential again", first+1, n, job, verb, more)
	case strings.Contains(msg, "message authentication failed"), strings.Contains(msg, "version is too new"):
		return backends.Forbidden("ciphertext %d of %d was not encrypted to job %q's key and cannot be %s%s; set the credential again for this job", first+1, n, job, verb, more)
	case strings.Contains(msg, "invalid ciphertext"), strings.Contains(msg, "missing ciphertext"):
		return backends.InvalidArgument("ciphertext %d of %d for job %q is not a valid Vault transit ciphertext%s; set the credential again", first+1, n, job, more)
	default:
		return fmt.Errorf("vault: ciphertext %d of %d for job %q could not be %s%s (Vault's reason is not shown: it is about the ciphertext)", first+1, n, job, verb, more)
	}
}

func (k *Keyring) checkPublic(job, public string) error {
	if err := keys.CheckJob(job); err != nil {
		return err
	}
	if public != k.KeyName(job) {
		return backends.InvalidArgument("the public key stored for job %q is not its Vault transit key %q; create the job's key again", job, k.KeyName(job))
	}
	return nil
}

type batchItem struct {
	Ciphertext string `json:"ciphertext"`
}

// batchInput checks ciphertexts locally (so that garbage is never sent) and
// builds Vault's batch_input.
func batchInput(job string, ciphertexts [][]byte) ([]batchItem, error) {
	if err := keys.CheckCiphertexts(job, ciphertexts); err != nil {
		return nil, err
	}
	batch := make([]batchItem, len(ciphertexts))
	for i, c := range ciphertexts {
		if _, err := KeyVersion(c); err != nil {
			return nil, backends.InvalidArgument("ciphertext %d of %d for job %q is not a Vault transit ciphertext (vault:v<version>:...); set the credential again", i+1, len(ciphertexts), job)
		}
		batch[i] = batchItem{Ciphertext: string(c)}
	}
	return batch, nil
}

// KeyVersion returns the transit key version a ciphertext was made with.
func KeyVersion(ciphertext []byte) (int, error) {
	s := string(ciphertext)
	rest, ok := strings.CutPrefix(s, "vault:v")
	if !ok || !utf8.ValidString(s) {
		return 0, errors.New("vault: not a transit ciphertext (want vault:v<version>:...)")
	}
	ver, body, ok := strings.Cut(rest, ":")
	n, err := strconv.Atoi(ver)
	if !ok || err != nil || n < 1 || body == "" {
		return 0, errors.New("vault: not a transit ciphertext (want vault:v<version>:...)")
	}
	if _, err := base64.StdEncoding.DecodeString(body); err != nil {
		return 0, errors.New("vault: not a transit ciphertext (its body is not base64)")
	}
	return n, nil
}
