#!/bin/sh
# extract: the shop's export of the day -> orders. A root job on a schedule:
# it has no inputs and reads the export file of $CHUNKLOCK_DATAID from
# $SHOP_DIR, keeps the well-formed rows and prefixes them with the day.
. "$(dirname "$0")/lib.sh"

# The shop's export token (the secret of orders) arrives decrypted when the
# runner has this job's key.
if [ -z "${CHUNKLOCK_OUTPUT_SECRET:-}" ]; then
	echo "no export token: run with the extract job key (--keys-dir or --job-key-file)" >&2
	exit 2
fi

in=${SHOP_DIR:?SHOP_DIR: the directory of the shop exports}/orders-$CHUNKLOCK_DATAID.csv
out=$CHUNKLOCK_OUTPUT_LOCATION
# Not exported yet: fail; the chunk is retried after retryDelaySeconds.
[ -r "$in" ] || { echo "shop export $in is missing" >&2; exit 1; }
chunk_dir "$out"
awk -F, -v day="$CHUNKLOCK_DATAID" 'NR > 1 && NF == 3 && $3 ~ /^[0-9]+$/ { print day "," $1 "," $2 "," $3 }' "$in" >"$out.tmp.$$"
commit "$out.tmp.$$" "$out"
