#!/usr/bin/env bash
# Rebuilds the web pages' bundles in ui/dist (embedded in the chunklock
# binary) from the sources in ui/web/src, with the exact package versions of
# ui/web/package-lock.json (`npm ci`), after checking the sources' types
# (`tsc --noEmit`: a type error fails the build). Commit ui/dist afterwards:
# scripts/ui-check.sh (run by CI) fails when it differs from this build.
#
#   bash scripts/ui-build.sh
#
# Needs Node.js and npm (the npm registry is used by name through npm's own
# configuration; the lockfile records no download addresses).
set -euo pipefail
cd "$(dirname "$0")/../ui/web"

if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
	echo "ui-build.sh: node and npm are needed (Debian: apt-get install -y nodejs npm)" >&2
	exit 1
fi

npm ci --no-audit --no-fund --loglevel=error
# esbuild strips the types without reading them: check them first.
node node_modules/typescript/bin/tsc -p tsconfig.json
rm -rf ../dist
node build.mjs
cd ../dist
for f in *.js *.css; do
	printf 'ui-build.sh: %-16s %8d bytes, %7d gzipped\n' "$f" "$(wc -c <"$f")" "$(gzip -9 -n -c "$f" | wc -c)" >&2
done
