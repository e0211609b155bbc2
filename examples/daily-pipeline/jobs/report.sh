#!/bin/sh
# report: orders-clean -> daily-report. The day's revenue and best customer.
. "$(dirname "$0")/lib.sh"

in=$CHUNKLOCK_INPUT_ORDERS_CLEAN_LOCATION
out=$CHUNKLOCK_OUTPUT_LOCATION
chunk_dir "$out"
awk -F, -v day="$CHUNKLOCK_DATAID" -v cur="${CURRENCY:-EUR}" '
	{ orders += $3; total += $4; if ($4 > best) { best = $4; who = $2 } }
	END { printf "day %s: %d orders, revenue %d.%02d %s, best customer %s\n", day, orders, total / 100, total % 100, cur, who }' "$in" >"$out.tmp.$$"
commit "$out.tmp.$$" "$out"
