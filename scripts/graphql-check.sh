#!/usr/bin/env bash
# Checks the GraphQL API against two tools from npm, pinned in
# ui/web/package.json and its lockfile (installed with `npm ci` when
# missing):
#
#   - graphql-schema-linter: every type, field, argument, input field and
#     enum value has a description (the playground's Docs pane is the API's
#     manual), and names follow GraphQL's conventions;
#   - graphql-http's auditServer: a chunklock server built from this tree
#     follows the GraphQL over HTTP specification, every MUST and SHOULD
#     (media types, status codes), without a warning.
#
#   bash scripts/graphql-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "graphql-check.sh: node and npm are needed (Debian: apt-get install -y nodejs npm)" >&2
	exit 1
fi
if [ ! -d ui/web/node_modules/graphql-schema-linter ] || [ ! -d ui/web/node_modules/graphql-http ]; then
	(cd ui/web && npm ci --no-audit --no-fund --loglevel=error)
fi

echo "graphql-schema-linter: descriptions and names"
node ui/web/node_modules/graphql-schema-linter/lib/cli.js --format compact \
	--rules arguments-have-descriptions,enum-values-have-descriptions,fields-have-descriptions,input-object-values-have-descriptions,types-have-descriptions,enum-values-all-caps,fields-are-camel-cased,input-object-values-are-camel-cased,types-are-capitalized \
	schema.graphqls schema/*.graphqls

echo "graphql-http: the GraphQL over HTTP audit"
tmp=$(mktemp -d)
server=""
cleanup() {
	if [ -n "$server" ]; then
		kill "$server" 2>/dev/null || true
		wait "$server" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/chunklock" ./cmd/chunklock
"$tmp/chunklock" serve --listen 127.0.0.1:0 --data-dir "$tmp/data" --log-level warn 2>"$tmp/serve.log" &
server=$!
url=""
for _ in $(seq 1 100); do
	url=$(grep -o 'GraphQL at http://127\.0\.0\.1:[0-9]*/graphql' "$tmp/serve.log" | head -1 | cut -d' ' -f3 || true)
	[ -n "$url" ] && break
	if ! kill -0 "$server" 2>/dev/null; then
		cat "$tmp/serve.log" >&2
		echo "graphql-check.sh: chunklock serve ended before it listened" >&2
		exit 1
	fi
	sleep 0.2
done
if [ -z "$url" ]; then
	echo "graphql-check.sh: chunklock serve did not say where it listens within 20 s" >&2
	exit 1
fi
(cd "$root/ui/web" && node tools/graphql-audit.mjs "$url")
