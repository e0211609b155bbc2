#!/bin/sh
# by-region: orders-clean -> revenue-by-region. The day's revenue of one
# region. revenue-by-region has two dimensions, date and region (SPEC §10):
# its dataids are 2026-01-15|emea, 2026-01-15|americas, ... and orders-clean
# has only the date, so each region's chunk of a day reads the same day of
# orders-clean (a fan-out). The runner exports each dimension's value:
# CHUNKLOCK_OUTPUT_DATE and CHUNKLOCK_OUTPUT_REGION; the location names them
# (by-region/{region}/{date}.txt). A customer's region is its number
# modulo 3 (customer-0: emea, customer-1: americas, customer-2: apac, ...).
. "$(dirname "$0")/lib.sh"

in=$CHUNKLOCK_INPUT_ORDERS_CLEAN_LOCATION
out=$CHUNKLOCK_OUTPUT_LOCATION
chunk_dir "$out"
awk -F, -v day="$CHUNKLOCK_OUTPUT_DATE" -v region="$CHUNKLOCK_OUTPUT_REGION" -v cur="${CURRENCY:-EUR}" '
	BEGIN { name[0] = "emea"; name[1] = "americas"; name[2] = "apac" }
	{ n = $2; sub(/^customer-/, "", n); if (name[n % 3] == region) { orders += $3; total += $4 } }
	END { printf "day %s, region %s: %d orders, revenue %d.%02d %s\n", day, region, orders, total / 100, total % 100, cur }' "$in" >"$out.tmp.$$"
commit "$out.tmp.$$" "$out"
