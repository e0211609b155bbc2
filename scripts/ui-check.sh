#!/usr/bin/env bash
# Fails when ui/dist (the bundles embedded in chunklock) is not what
# scripts/ui-build.sh builds from ui/web's sources and lockfile, as
# scripts/check-generated.sh does for the GraphQL code. Fix: run
# scripts/ui-build.sh and commit ui/dist.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ui-build.sh

status=0
if ! git diff --exit-code --stat -- ui/dist; then
	status=1
fi
untracked=$(git ls-files --others --exclude-standard -- ui/dist)
if [ -n "$untracked" ]; then
	echo "built files not committed:"
	echo "$untracked"
	status=1
fi
if [ "$status" -ne 0 ]; then
	echo "ui-check: ui/dist is not what scripts/ui-build.sh builds; run it and commit ui/dist." >&2
fi
exit "$status"
