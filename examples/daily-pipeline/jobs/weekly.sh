#!/bin/sh
# weekly: orders-clean -> weekly-report. The week's revenue, a roll-up: the
# job reads orders-clean through TIME_WINDOW from a WEEKLY output, so an ISO
# week (2026-W03) reads each of its days (CHUNKLOCK_INPUT_ORDERS_CLEAN_DATAIDS,
# one per line; fewer at the ends of the definition).
. "$(dirname "$0")/lib.sh"

out=$CHUNKLOCK_OUTPUT_LOCATION
chunk_dir "$out"
first=$(printf '%s\n' "$CHUNKLOCK_INPUT_ORDERS_CLEAN_DATAIDS" | head -n 1)
last=$(printf '%s\n' "$CHUNKLOCK_INPUT_ORDERS_CLEAN_DATAIDS" | tail -n 1)
printf '%s\n' "$CHUNKLOCK_INPUT_ORDERS_CLEAN_LOCATIONS" | while IFS= read -r in; do cat "$in"; done |
	awk -F, -v week="$CHUNKLOCK_DATAID" -v first="$first" -v last="$last" -v cur="${CURRENCY:-EUR}" '
	{ orders += $3; total += $4 }
	END { printf "week %s (%s..%s): %d orders, revenue %d.%02d %s\n", week, first, last, orders, total / 100, total % 100, cur }' >"$out.tmp.$$"
commit "$out.tmp.$$" "$out"
