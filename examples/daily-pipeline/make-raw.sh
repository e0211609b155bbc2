#!/bin/sh
# make-raw.sh FROM..TO: plays the shop's nightly export. Writes the raw
# orders of each day under /tmp/chunklock-daily/raw (or $DAILY_ROOT/raw) and
# publishes each day as a READY chunk of the source dataset orders-raw.
#   ./make-raw.sh 2026-01-01..2026-01-30
set -eu
range=${1:?usage: make-raw.sh FROM..TO (dates, e.g. 2026-01-01..2026-01-30)}
root=${DAILY_ROOT:-/tmp/chunklock-daily}
mkdir -p "$root/raw"
days=$(chunklock publish --dataset orders-raw --range "$range" --dry-run)
for day in $days; do
	seed=$(echo "$day" | tr -dc 0-9)
	awk -v seed="$seed" 'BEGIN {
		srand(seed); print "order_id,customer,amount_cents"
		for (i = 1; i <= 20; i++) printf "%s-%03d,customer-%d,%d\n", seed, i, int(rand() * 5), 100 + int(rand() * 10000)
		print "garbage line"
	}' >"$root/raw/orders-$day.csv"
done
chunklock publish --dataset orders-raw --range "$range"
