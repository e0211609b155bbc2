#!/bin/sh
# make-raw.sh FROM..TO: plays the shop's nightly export. Writes the orders of
# each day to /tmp/chunklock-daily/shop/orders-DAY.csv (or $DAILY_ROOT/shop),
# where the extract job (a root job on a schedule) reads them. Publishes
# nothing: extract claims each day itself once it is due.
#   ./make-raw.sh 2026-01-01..2026-01-30
set -eu
range=${1:?usage: make-raw.sh FROM..TO (dates, e.g. 2026-01-01..2026-01-30)}
root=${DAILY_ROOT:-/tmp/chunklock-daily}
mkdir -p "$root/shop"
days=$(chunklock publish --dataset payments --range "$range" --dry-run)
for day in $days; do
	seed=$(echo "$day" | tr -dc 0-9)
	awk -v seed="$seed" 'BEGIN {
		srand(seed); print "order_id,customer,amount_cents"
		for (i = 1; i <= 20; i++) printf "%s-%03d,customer-%d,%d\n", seed, i, int(rand() * 5), 100 + int(rand() * 10000)
		print "garbage line"
	}' >"$root/shop/orders-$day.csv"
done
echo "exported $(echo $days | wc -w) day(s) to $root/shop"
