#!/usr/bin/env bash
# Regenerates the GraphQL code from schema.graphqls and schema/*.graphqls
# (gqlgen, configured by gqlgen.yml) and fails if graph/ or resolvers/ then
# differ from what is committed: run `go generate ./resolvers/` and commit
# the result when it does.
set -euo pipefail
cd "$(dirname "$0")/.."

go generate ./resolvers/

status=0
if ! git diff --exit-code --stat -- graph resolvers; then
	status=1
fi
untracked=$(git ls-files --others --exclude-standard -- graph resolvers)
if [ -n "$untracked" ]; then
	echo "generated files not committed:"
	echo "$untracked"
	status=1
fi
if [ "$status" -ne 0 ]; then
	echo "check-generated: graph/ or resolvers/ is not what gqlgen generates from the schema;" >&2
	echo "run 'go generate ./resolvers/' and commit the result." >&2
fi
exit "$status"
