package vault

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Setup prepares Vault for chunklock, idempotently, with cfg.Token being an
// administrator's token (one that may mount secrets engines, write ACL
// policies and token roles, and read sys/auth). It
//
//   - mounts transit at cfg.Mount if nothing is mounted there;
//   - writes the policy <prefix>job (JobPolicyTemplate) and the policy
//     <prefix>server (ServerPolicy);
//   - writes the token role <prefix>job: orphan service tokens with the
//     policy <prefix>job only, no default policy, entity aliases <prefix>*.
//
// Then create the server's token with the policy <prefix>server, e.g.
// `vault token create -policy=chunklock-server -orphan -period=768h`.
// Entity aliases on the token auth mount whose names start with the prefix
// are reserved for chunklock.
func Setup(ctx context.Context, cfg Config) error {
	k, err := New(cfg)
	if err != nil {
		return err
	}
	return k.setup(ctx)
}

func (k *Keyring) setup(ctx context.Context) error {
	admin := func(op, method, path string, body any) (*reply, error) {
		r, err := k.call(ctx, op, "", method, path, body)
		if err != nil {
			return nil, err
		}
		if r.transient() {
			return nil, k.unavailable(r, op)
		}
		if !r.ok() {
			return nil, fmt.Errorf("vault: setup: could not %s: %w; Setup needs an administrator's token", op, r.cause())
		}
		return r, nil
	}
	mount, prefix := k.cfg.Mount, k.cfg.Prefix

	r, err := admin("list secrets engines", http.MethodGet, "sys/mounts", nil)
	if err != nil {
		return err
	}
	var mounts map[string]struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(r.data, &mounts); err != nil {
		return fmt.Errorf("vault: setup: the list of secrets engines is not Vault JSON")
	}
	switch m, ok := mounts[mount+"/"]; {
	case !ok:
		if _, err := admin("mount transit at "+mount, http.MethodPost, "sys/mounts/"+mount, map[string]any{
			"type":        "transit",
			"description": "chunklock job keys",
		}); err != nil {
			return err
		}
	case m.Type != "transit":
		return fmt.Errorf("vault: setup: %q is mounted as %q, not transit; choose another mount", mount, m.Type)
	}

	r, err = admin("list auth methods", http.MethodGet, "sys/auth", nil)
	if err != nil {
		return err
	}
	var auths map[string]struct {
		Accessor string `json:"accessor"`
	}
	if err := json.Unmarshal(r.data, &auths); err != nil || !strings.HasPrefix(auths["token/"].Accessor, "auth_token_") {
		return fmt.Errorf("vault: setup: the token auth method's accessor was not found in sys/auth")
	}
	accessor := auths["token/"].Accessor

	for name, policy := range map[string]string{
		JobPolicyName(prefix):    JobPolicyTemplate(prefix, mount, accessor),
		ServerPolicyName(prefix): ServerPolicy(prefix, mount),
	} {
		if _, err := admin("write policy "+name, http.MethodPut, "sys/policies/acl/"+name, map[string]any{"policy": policy}); err != nil {
			return err
		}
	}

	_, err = admin("write token role "+RoleName(prefix), http.MethodPost, "auth/token/roles/"+RoleName(prefix), map[string]any{
		"allowed_policies":        []string{JobPolicyName(prefix)},
		"disallowed_policies":     []string{"default", "root"},
		"allowed_entity_aliases":  []string{prefix + "*"},
		"orphan":                  true,
		"renewable":               false,
		"token_type":              "service",
		"token_no_default_policy": true,
	})
	return err
}
