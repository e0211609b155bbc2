#!/bin/sh
# extract: orders-raw -> orders. Keeps the well-formed rows of the raw export
# and prefixes them with the day.
. "$(dirname "$0")/lib.sh"

# The shop's export token arrives decrypted when the runner has this job's key.
if [ -z "${CHUNKLOCK_INPUT_ORDERS_RAW_SECRET:-}" ]; then
	echo "no export token: run with the extract job key (--keys-dir or --job-key-file)" >&2
	exit 2
fi

in=$CHUNKLOCK_INPUT_ORDERS_RAW_LOCATION
out=$CHUNKLOCK_OUTPUT_LOCATION
[ -r "$in" ] || { echo "raw export $in is missing" >&2; exit 1; }
chunk_dir "$out"
awk -F, -v day="$CHUNKLOCK_DATAID" 'NR > 1 && NF == 3 && $3 ~ /^[0-9]+$/ { print day "," $1 "," $2 "," $3 }' "$in" >"$out.tmp.$$"
commit "$out.tmp.$$" "$out"
