#!/bin/sh
# make-payments.sh FROM..TO...: plays the payment provider's daily settlement.
# For each day of each range, writes the day's payment total (the sum of the
# well-formed orders of the shop's export, so run make-raw.sh first) to
# /tmp/chunklock-daily/payments/DAY.csv (or $DAILY_ROOT/payments) and
# publishes the day as a READY chunk of the source dataset payments. Give two
# ranges to leave a day out (a settlement that did not arrive):
#   ./make-payments.sh 2026-01-01..2026-01-16 2026-01-18..2026-01-30
set -eu
[ $# -ge 1 ] || { echo "usage: make-payments.sh FROM..TO... (dates, e.g. 2026-01-01..2026-01-30)" >&2; exit 2; }
root=${DAILY_ROOT:-/tmp/chunklock-daily}
mkdir -p "$root/payments"
for range in "$@"; do
	days=$(chunklock publish --dataset payments --range "$range" --dry-run)
	for day in $days; do
		shop=$root/shop/orders-$day.csv
		[ -r "$shop" ] || { echo "no shop export $shop: run make-raw.sh first" >&2; exit 1; }
		awk -F, -v day="$day" 'NR > 1 && NF == 3 && $3 ~ /^[0-9]+$/ { n++; s += $3 }
			END { print "date,payments,amount_cents"; print day "," n + 0 "," s + 0 }' "$shop" >"$root/payments/$day.csv"
	done
	chunklock publish --dataset payments --range "$range"
done
