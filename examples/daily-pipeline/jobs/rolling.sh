#!/bin/sh
# rolling: orders-clean -> revenue-7d. The revenue of the seven days up to
# the day. The job reads orders-clean through a 7-day lookback
# (TIME_WINDOW, startOffset -6): every chunk it reads is one line of
# CHUNKLOCK_INPUT_ORDERS_CLEAN_LOCATIONS (fewer than seven for the first
# days of the definition).
. "$(dirname "$0")/lib.sh"

out=$CHUNKLOCK_OUTPUT_LOCATION
chunk_dir "$out"
days=$(printf '%s\n' "$CHUNKLOCK_INPUT_ORDERS_CLEAN_LOCATIONS" | wc -l)
printf '%s\n' "$CHUNKLOCK_INPUT_ORDERS_CLEAN_LOCATIONS" | while IFS= read -r in; do cat "$in"; done |
	awk -F, -v day="$CHUNKLOCK_DATAID" -v days="$days" -v cur="${CURRENCY:-EUR}" '
	{ orders += $3; total += $4 }
	END { printf "7 days to %s: %d orders, revenue %d.%02d %s over %d day(s)\n", day, orders, total / 100, total % 100, cur, days }' >"$out.tmp.$$"
commit "$out.tmp.$$" "$out"
