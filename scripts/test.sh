#!/usr/bin/env bash
# Runs chunklock's whole test suite: every Go package, race detector on, then
# the Python client's checks and tests (scripts/test-python.sh).
#
# Needs PostgreSQL (CHUNKLOCK_TEST_POSTGRES, default the local server) and a
# Vault binary for the Vault keyring tests (built once from the Go module
# proxy by scripts/vault.sh and cached outside the repository), Debian's
# chromium for the dashboard's browser tests (scripts/browser.sh), and
# Debian's Python 3 with pytest and mypy (installed by scripts/test-python.sh
# when missing; a Python that cannot be had fails the run).
# Extra arguments go to `go test` and run the Go tests only, e.g.
# scripts/test.sh -run Conformance ./backends/...
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

if [ "$#" -gt 0 ]; then
	exec go test -race -timeout 20m "$@"
fi

# The e2e test of the example's Python job needs Python: install it first.
echo "test.sh: locating Python for the example's Python job and the client's tests (installs it when missing)..." >&2
bash scripts/test-python.sh --deps
export CHUNKLOCK_PYTHON=/usr/bin/python3 CHUNKLOCK_REQUIRE_PYTHON=1

# Go first, then Python; both run, and either failing fails the run. The
# race build runs three of the model's sequences on etcd (the in-process
# etcd server is several times slower under the race detector): all ten run
# again here without it.
status=0
go test -race -timeout 20m ./... || status=$?
echo "test.sh: the model's sequences on etcd without the race detector..." >&2
CHUNKLOCK_MODEL_SEQUENCES="${CHUNKLOCK_MODEL_SEQUENCES:-10}" go test -count=1 -timeout 10m -run '^TestConformance$/^Model$' ./backends/etcd/ || status=$?
bash scripts/test-python.sh || status=$?
exit "$status"
