#!/bin/sh
# reconcile: orders + orders-clean + payments -> reconciliation. Fails (and
# the chunk is retried, then held) when the per-customer totals or the
# payment provider's settlement do not add up to the orders.
. "$(dirname "$0")/lib.sh"

orders=$CHUNKLOCK_INPUT_ORDERS_LOCATION
clean=$CHUNKLOCK_INPUT_ORDERS_CLEAN_LOCATION
payments=$CHUNKLOCK_INPUT_PAYMENTS_LOCATION
out=$CHUNKLOCK_OUTPUT_LOCATION
a=$(awk -F, '{ s += $4 } END { print s + 0 }' "$orders")
b=$(awk -F, '{ s += $4 } END { print s + 0 }' "$clean")
p=$(awk -F, 'NR > 1 { s += $3 } END { print s + 0 }' "$payments")
if [ "$a" != "$b" ]; then
	echo "orders sum to $a cents but orders-clean to $b" >&2
	exit 1
fi
if [ "$a" != "$p" ]; then
	echo "orders sum to $a cents but payments to $p" >&2
	exit 1
fi
chunk_dir "$out"
echo "OK $CHUNKLOCK_DATAID $a" >"$out.tmp.$$"
commit "$out.tmp.$$" "$out"
