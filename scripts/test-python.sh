#!/usr/bin/env bash
# Checks and tests the Python client (clients/python) against a chunklock built
# from this repository:
#   1. installs what it needs from Debian when missing (no Python package index
#      is needed): python3, python3-venv, python3-setuptools, python3-wheel,
#      python3-pytest, mypy;
#   2. makes a throw-away venv from Debian's /usr/bin/python3 with
#      --system-site-packages (pytest, mypy and setuptools come from Debian) and
#      installs the client into it with pip --no-build-isolation;
#   3. runs mypy --strict (for this Python and for 3.9) on the client, its tests
#      and the example's Python job, then pytest on the installed client.
# It fails, never skips, when Python or these packages cannot be had.
#
#   bash scripts/test-python.sh           everything
#   bash scripts/test-python.sh --deps    step 1 only (scripts/test.sh runs it first)
#   bash scripts/test-python.sh -k drain  extra arguments go to pytest
#
# /usr/bin/python3 on purpose: the python3 first on the PATH may be another
# interpreter without Debian's packages.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=/usr/bin/python3

# missing_packages prints the Debian packages that are not there yet.
missing_packages() {
	if [ ! -x "$PY" ]; then
		echo python3 python3-venv python3-setuptools python3-wheel python3-pytest mypy
		return
	fi
	local pkgs=()
	"$PY" -c 'import ensurepip, venv' 2>/dev/null || pkgs+=(python3-venv)
	"$PY" -c 'import setuptools' 2>/dev/null || pkgs+=(python3-setuptools)
	"$PY" -c 'import wheel' 2>/dev/null || pkgs+=(python3-wheel)
	"$PY" -c 'import pytest' 2>/dev/null || pkgs+=(python3-pytest)
	"$PY" -c 'import mypy' 2>/dev/null || pkgs+=(mypy)
	echo "${pkgs[@]}"
}

install_missing() {
	local pkgs
	pkgs=$(missing_packages)
	[ -z "$pkgs" ] && return 0
	echo "test-python.sh: installing from Debian: $pkgs" >&2
	local sudo=()
	if [ "$(id -u)" != 0 ]; then
		if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
			sudo=(sudo -n)
		else
			echo "test-python.sh: missing Debian packages: $pkgs; install them (as root: apt-get install $pkgs)" >&2
			exit 1
		fi
	fi
	# shellcheck disable=SC2086 # one word per package
	if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends $pkgs >&2; then
		"${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update -q >&2
		# shellcheck disable=SC2086
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends $pkgs >&2
	fi
	pkgs=$(missing_packages)
	if [ -n "$pkgs" ]; then
		echo "test-python.sh: still missing after apt-get: $pkgs" >&2
		exit 1
	fi
}

install_missing
if [ "${1:-}" = "--deps" ]; then
	exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/chunklock-python-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "== Python client: venv from $("$PY" --version 2>&1) at $PY" >&2
"$PY" -m venv --system-site-packages "$work/venv"
VPY="$work/venv/bin/python"
# A copy, so that the build leaves nothing in the source tree.
cp -r clients/python "$work/src"
rm -rf "$work/src/build" "$work/src"/src/*.egg-info
"$VPY" -m pip install --quiet --no-build-isolation --no-deps --no-index "$work/src"

echo "== Python client: mypy --strict" >&2
for version in "" 3.9; do
	args=(--strict --cache-dir "$work/mypy")
	[ -n "$version" ] && args+=(--python-version "$version")
	# The installed package, then what uses it (through its py.typed): the tests,
	# the benchmarks and the example's job.
	(cd "$work" && "$VPY" -m mypy "${args[@]}" -p chunklock)
	(cd clients/python && MYPYPATH=tests "$VPY" -m mypy "${args[@]}" tests bench)
	"$VPY" -m mypy "${args[@]}" examples/daily-pipeline/jobs/transform.py
done

echo "== Python client: pytest" >&2
if [ -z "${CHUNKLOCK_BIN:-}" ]; then
	go build -o "$work/chunklock" ./cmd/chunklock
	export CHUNKLOCK_BIN="$work/chunklock"
fi
cd clients/python
# -p no:cacheprovider: nothing written into the source tree.
"$VPY" -m pytest -p no:cacheprovider -q "$@" tests
