#!/usr/bin/env bash
# vault.sh builds the HashiCorp Vault server binary used by the keys/vault
# integration tests from the Go module proxy and caches it outside the
# repository. It prints the binary's path on stdout when done.
#
#   scripts/vault.sh            # build once (cached), print the path
#   CHUNKLOCK_VAULT_BIN=$(scripts/vault.sh) go test ./keys/...
#
# Vault v1.21.0 is built from its module on the proxy: its go.mod replaces
# the api and sdk modules with sibling directories that the module zip does
# not contain, so those replaces are pointed at released versions instead.
# (Patch releases of 1.21 do not build this way; 1.21.0 does.)
#
# Environment:
#   CHUNKLOCK_VAULT_CACHE  cache directory
#                          (default ${XDG_CACHE_HOME:-$HOME/.cache}/chunklock/vault-1.21.0)
#
# The build takes 6 to 20 minutes on 2 cores and about 500 MB of disk.
# Concurrent runs are serialised with flock; the binary is built in a
# temporary directory and moved into place atomically.
set -euo pipefail

VAULT_VERSION=v1.21.0
SDK_VERSION=v0.20.0
API_VERSION=v1.22.0

cache_dir=${CHUNKLOCK_VAULT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chunklock/vault-${VAULT_VERSION#v}}
bin=$cache_dir/vault

log() { printf 'vault.sh: %s\n' "$*" >&2; }

if [[ -x $bin ]]; then
	printf '%s\n' "$bin"
	exit 0
fi

mkdir -p "$cache_dir"
exec 9>"$cache_dir/.lock"
if ! flock -n 9; then
	log "another build holds $cache_dir/.lock; waiting for it"
	flock 9
fi
# Another run may have finished the build while this one waited.
if [[ -x $bin ]]; then
	printf '%s\n' "$bin"
	exit 0
fi

work=$(mktemp -d "$cache_dir/build.XXXXXX")
cleanup() { chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# Run go commands outside any module so the caller's go.mod does not matter.
cd "$work"
export GOWORK=off GOFLAGS=-mod=mod

log "downloading github.com/hashicorp/vault@$VAULT_VERSION"
dir=$(go mod download -json "github.com/hashicorp/vault@$VAULT_VERSION" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
if [[ -z $dir || ! -f $dir/go.mod ]]; then
	log "go mod download did not report the module directory; check network access to the Go module proxy (GOPROXY=$(go env GOPROXY))"
	exit 1
fi

src=$work/src
cp -R "$dir" "$src"
chmod -R u+w "$src"

# Drop the replaces that point api/sdk (and their sub-modules) at local
# directories, then pin released versions.
sed -i -E '/^[[:space:]]*(replace[[:space:]]+)?github\.com\/hashicorp\/vault\/(api|sdk)[^[:space:]]*[[:space:]]*=>[[:space:]]*\.\//d' "$src/go.mod"
cat >>"$src/go.mod" <<EOF

replace github.com/hashicorp/vault/sdk => github.com/hashicorp/vault/sdk $SDK_VERSION

replace github.com/hashicorp/vault/api => github.com/hashicorp/vault/api $API_VERSION
EOF

log "building vault $VAULT_VERSION (takes several minutes)"
start=$(date +%s)
(cd "$src" && go build -trimpath -o "$work/vault" .)
log "built in $(($(date +%s) - start))s"
"$work/vault" version >&2

mv -f "$work/vault" "$bin"
printf '%s\n' "$bin"
