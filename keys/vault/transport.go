package vault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/hashicorp/vault/api"

	"github.com/chunklock/chunklock/backends"
)

// maxResponse bounds a Vault answer read into memory: a batch of
// keys.MaxBatch secrets of keys.MaxSecretSize each, base64, with room.
const maxResponse = 128 << 20

// reply is a Vault answer: its status, Vault's error messages and the data
// and auth sections.
type reply struct {
	status int
	errors []string
	data   json.RawMessage
	auth   json.RawMessage
}

// ok reports a 2xx answer.
func (r *reply) ok() bool { return r.status >= 200 && r.status < 300 }

// transient reports an answer worth retrying: sealed, standby, overloaded,
// rate-limited or failing server.
func (r *reply) transient() bool {
	return r.status == http.StatusTooManyRequests || r.status == http.StatusPreconditionFailed || r.status >= 500
}

// says reports whether one of Vault's error messages contains s.
func (r *reply) says(s string) bool {
	for _, e := range r.errors {
		if strings.Contains(e, s) {
			return true
		}
	}
	return false
}

// malformedToken reports Vault's answer to a token it cannot even parse:
// Vault reads "<id>.<namespace id>" from tokens with a dot it does not
// recognize (e.g. "HVS.x") and answers 500 when that namespace does not
// exist. It is a wrong key, not a failing server.
func (r *reply) malformedToken() bool {
	return r.status == http.StatusInternalServerError && r.says("failed to look up namespace from the token")
}

// missingKey reports Vault's answers for a transit key that does not exist.
func (r *reply) missingKey() bool {
	return r.says("not found") || r.says("could be found")
}

// vaultError is the cause kept (for logs, never for clients) when Vault
// refuses a request: the status and Vault's own messages, which name paths
// and policies but never the request's body.
type vaultError struct {
	status int
	errors []string
}

func (e *vaultError) Error() string {
	msg := strings.Join(e.errors, "; ")
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	if msg == "" {
		return fmt.Sprintf("Vault answered HTTP %d", e.status)
	}
	return fmt.Sprintf("Vault answered HTTP %d: %s", e.status, msg)
}

func (r *reply) cause() error { return &vaultError{status: r.status, errors: r.errors} }

// unavailable wraps a transient answer.
func (k *Keyring) unavailable(r *reply, op string) error {
	return backends.Unavailable(r.cause(), "Vault at %s could not %s (HTTP %d: sealed, standby, overloaded or failing); retry later", k.cfg.Address, op, r.status)
}

// misconfigured reports an answer that means the server's own setup is
// wrong (its token, the mount, the token role): an operator must act, a
// client cannot. It is INTERNAL.
func (k *Keyring) misconfigured(r *reply, op, fix string) error {
	return fmt.Errorf("vault: the server could not %s: %w; %s", op, r.cause(), fix)
}

// call sends one request with token (the server's token when empty) and
// reads the answer. A failure to reach Vault, or a canceled or timed out
// context, is UNAVAILABLE; any HTTP answer is returned for the caller to
// classify. The body is marshaled here so that nothing in it can end up in
// an error.
func (k *Keyring) call(ctx context.Context, op, token, method, path string, body any) (*reply, error) {
	ctx, cancel := context.WithTimeout(ctx, k.cfg.Timeout)
	defer cancel()
	c := k.client
	if token != "" {
		c = c.WithRequestCallbacks(func(r *api.Request) { r.ClientToken = token })
	}
	var (
		resp *api.Response
		err  error
	)
	if method == http.MethodGet {
		resp, err = c.Logical().ReadRawWithContext(ctx, path)
	} else {
		var b []byte
		if b, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("vault: encoding a request to %s failed", op)
		}
		resp, err = c.Logical().WriteRawWithContext(ctx, path, b)
	}
	if resp != nil && resp.Body != nil {
		defer resp.Body.Close()
	}
	var respErr *api.ResponseError
	if resp == nil || (err != nil && !errors.As(err, &respErr)) {
		if err == nil {
			err = errors.New("no response")
		}
		return nil, backends.Unavailable(err, "Vault at %s did not answer a request to %s; check that it is running and reachable, then retry", k.cfg.Address, op)
	}
	// On an error status the client has already buffered the body.
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, backends.Unavailable(err, "the answer of Vault at %s to a request to %s was cut off; retry", k.cfg.Address, op)
	}
	r := &reply{status: resp.StatusCode}
	if len(raw) > 0 {
		var env struct {
			Errors []string        `json:"errors"`
			Data   json.RawMessage `json:"data"`
			Auth   json.RawMessage `json:"auth"`
		}
		if err := json.Unmarshal(raw, &env); err != nil {
			// A proxy's HTML error page, say. Its text is not kept.
			r.errors = []string{"the answer is not Vault JSON"}
		} else {
			r.errors, r.data, r.auth = env.Errors, env.Data, env.Auth
		}
	}
	return r, nil
}
