#!/usr/bin/env bash
# Prints the path of the headless browser the dashboard's tests drive
# (Debian's chromium), installing chromium and chromium-driver with apt-get
# when it is missing. Fails when it cannot: the browser tests must not be
# skipped where they are required.
#
#   CHUNKLOCK_CHROMIUM=$(bash scripts/browser.sh) go test ./ui/
set -euo pipefail

find_browser() {
	for b in "${CHUNKLOCK_CHROMIUM:-}" chromium chromium-browser; do
		if [ -n "$b" ] && command -v "$b" >/dev/null 2>&1; then
			command -v "$b"
			return 0
		fi
	done
	return 1
}

if path=$(find_browser); then
	printf '%s\n' "$path"
	exit 0
fi

echo "browser.sh: chromium is missing; installing chromium and chromium-driver with apt-get" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
$sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium chromium-driver >&2

if path=$(find_browser); then
	printf '%s\n' "$path"
	exit 0
fi
echo "browser.sh: chromium is still missing after apt-get install" >&2
exit 1
