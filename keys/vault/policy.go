package vault

import (
	"fmt"
	"strings"
)

// ServerPolicyName is the name Setup gives the server's policy.
func ServerPolicyName(prefix string) string { return prefix + "server" }

// JobPolicyName is the name of the one templated policy every job token has.
func JobPolicyName(prefix string) string { return prefix + "job" }

// RoleName is the token role job tokens are minted through.
func RoleName(prefix string) string { return prefix + "job" }

// ServerPolicy returns the Vault policy (HCL) of the chunklock server's
// token for a transit mount and key prefix. It allows exactly:
//
//   - create job keys, read their versions, rotate them and set
//     min_decryption_version: create/read/update on <mount>/keys/<prefix>*
//     (which also covers keys/<key>/rotate and keys/<key>/config);
//   - encrypt: update on <mount>/encrypt/<prefix>* (no "create", so encrypt
//     never creates a key as a side effect);
//   - rewrap: update on <mount>/rewrap/<prefix>*;
//   - mint job tokens: update on auth/token/create/<prefix>job (the role
//     limits them to the policy <prefix>job and to entity aliases named
//     <prefix>*).
//
// It explicitly denies decrypt, export and backup of the job keys, so that
// no other policy attached to the same token by mistake can grant them. It
// grants no policy writes and no other token creation.
//
// The glob on <mount>/keys/<prefix>* also allows trim (destroying retired
// versions) and key configuration changes; neither reveals a secret.
func ServerPolicy(prefix, mount string) string {
	mount = strings.Trim(mount, "/")
	return fmt.Sprintf(`# chunklock server token: transit mount %[2]q, key prefix %[1]q.
# Encrypts, creates, rotates and rewraps job keys and mints job tokens.
# It can never decrypt, export or back up a job key.

# Create job keys (POST %[2]s/keys/<key>), read their versions, rotate them
# (%[2]s/keys/<key>/rotate) and set min_decryption_version (%[2]s/keys/<key>/config).
path "%[2]s/keys/%[1]s*" {
  capabilities = ["create", "read", "update"]
}

# Encrypt a secret to a job. No "create": encrypting never creates a key.
path "%[2]s/encrypt/%[1]s*" {
  capabilities = ["update"]
}

# Re-encrypt ciphertexts to a key's latest version inside Vault.
path "%[2]s/rewrap/%[1]s*" {
  capabilities = ["update"]
}

# Mint job tokens through the role: policy %[3]q only, bound to the entity
# alias of one job key. Drop this rule to keep job-key creation with an
# administrator (the server then cannot obtain a decrypting token).
path "auth/token/create/%[4]s" {
  capabilities = ["update"]
}

# Never: decrypt, data keys, export, backup.
path "%[2]s/decrypt/%[1]s*" {
  capabilities = ["deny"]
}
path "%[2]s/datakey/+/%[1]s*" {
  capabilities = ["deny"]
}
path "%[2]s/export/+/%[1]s*" {
  capabilities = ["deny"]
}
path "%[2]s/backup/%[1]s*" {
  capabilities = ["deny"]
}
`, prefix, mount, JobPolicyName(prefix), RoleName(prefix))
}

// JobPolicyTemplate returns the one templated policy (HCL) that every job
// token carries: decrypt with the transit key whose name is the token's
// entity alias on the token auth mount (tokenAccessor, e.g.
// auth_token_1a2b3c4d). A token without such an alias gets nothing from it.
func JobPolicyTemplate(prefix, mount, tokenAccessor string) string {
	mount = strings.Trim(mount, "/")
	return fmt.Sprintf(`# chunklock job tokens (prefix %[1]q): each token is bound to the entity
# alias named after its job's transit key (%[1]s<job>) and may decrypt with
# that key only. Job tokens are minted through the token role %[4]q, which
# only allows aliases starting with %[1]q.
path "%[2]s/decrypt/{{identity.entity.aliases.%[3]s.name}}" {
  capabilities = ["update"]
}
`, prefix, mount, tokenAccessor, RoleName(prefix))
}

// Policy returns the effective Vault policy (HCL) of job's token: what
// JobPolicyTemplate evaluates to for the token CreateJobKey mints. It allows
// decrypt with the job's transit key, nothing else.
func (k *Keyring) Policy(job string) string {
	return fmt.Sprintf(`# chunklock job %[1]q: decrypt with its transit key only.
path "%[2]s" {
  capabilities = ["update"]
}
`, job, k.path("decrypt", job))
}
