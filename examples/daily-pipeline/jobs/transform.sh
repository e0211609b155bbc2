#!/bin/sh
# transform: orders -> orders-clean. Orders and revenue per customer.
. "$(dirname "$0")/lib.sh"

in=$CHUNKLOCK_INPUT_ORDERS_LOCATION
out=$CHUNKLOCK_OUTPUT_LOCATION
chunk_dir "$out"
awk -F, '{ n[$3]++; sum[$3] += $4; day = $1 }
	END { for (c in n) print day "," c "," n[c] "," sum[c] }' "$in" | sort -t, -k2,2 >"$out.tmp.$$"
commit "$out.tmp.$$" "$out"
