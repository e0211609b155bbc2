#!/usr/bin/env bash
# Runs chunklock's whole test suite: every package, race detector on.
#
# Needs PostgreSQL (CHUNKLOCK_TEST_POSTGRES, default the local server) and a
# Vault binary for the Vault keyring tests (built once from the Go module
# proxy by scripts/vault.sh and cached outside the repository), and Debian's
# chromium for the dashboard's browser tests (scripts/browser.sh).
# Extra arguments go to `go test`, e.g. scripts/test.sh -run Conformance ./backends/...
set -euo pipefail
cd "$(dirname "$0")/.."

export CHUNKLOCK_TEST_POSTGRES="${CHUNKLOCK_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}"

if ! command -v pg_isready >/dev/null || ! pg_isready -q -d "$CHUNKLOCK_TEST_POSTGRES"; then
	echo "test.sh: PostgreSQL does not answer at $CHUNKLOCK_TEST_POSTGRES" >&2
	echo "test.sh: start it (pg_ctlcluster --skip-systemctl-redirect \$(ls /etc/postgresql) main start) or set CHUNKLOCK_TEST_POSTGRES" >&2
	exit 1
fi

if [ -z "${CHUNKLOCK_VAULT_BIN:-}" ]; then
	echo "test.sh: locating the Vault test server (first run builds it, several minutes)..." >&2
	CHUNKLOCK_VAULT_BIN="$(bash scripts/vault.sh)"
	export CHUNKLOCK_VAULT_BIN
fi
export CHUNKLOCK_REQUIRE_VAULT=1

if [ -z "${CHUNKLOCK_CHROMIUM:-}" ]; then
	echo "test.sh: locating headless chromium for the dashboard's tests (installs it when missing)..." >&2
	CHUNKLOCK_CHROMIUM="$(bash scripts/browser.sh)"
	export CHUNKLOCK_CHROMIUM
fi
export CHUNKLOCK_REQUIRE_BROWSER=1

if [ "$#" -eq 0 ]; then
	set -- ./...
fi
exec go test -race -timeout 20m "$@"
