#!/usr/bin/env bash
# Measures what a concurrency limit costs claim throughput (BENCHMARKS.md,
# "Concurrency limits"): alternating runs of chunklock-bench without and
# with maxConcurrent, in ABBA order so that a drift of the machine falls on
# both sides, then the change of each pair and their mean.
#
#   scripts/limit-pairs.sh [-backend etcd|postgres] [-pairs 12] [-chunks 6000]
#                          [-runners 16] [-max-concurrent 32] [-bin PATH]
#
# Each run prints one line of chunklock-bench's table; the summary gives the
# spread of the runs without the limit (their noise) beside the mean change
# per pair and its standard error.
set -euo pipefail
backend=etcd pairs=12 chunks=6000 runners=16 limit=32 bin=
while [ $# -gt 0 ]; do
	case "$1" in
	-backend) backend=$2 ;;
	-pairs) pairs=$2 ;;
	-chunks) chunks=$2 ;;
	-runners) runners=$2 ;;
	-max-concurrent) limit=$2 ;;
	-bin) bin=$2 ;;
	-h | -help | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "limit-pairs.sh: unknown argument $1 (see -help)" >&2; exit 2 ;;
	esac
	shift 2
done
if [ -z "$bin" ]; then
	bin=$(mktemp -d)/chunklock-bench
	echo "building chunklock-bench..." >&2
	go build -o "$bin" ./cmd/chunklock-bench
fi
out=$(mktemp)
for i in $(seq 1 "$pairs"); do
	order="0 $limit"
	[ $((i % 2)) = 0 ] && order="$limit 0"
	for m in $order; do
		line=$("$bin" -backend "$backend" -runners "$runners" -chunks "$chunks" -baseline 0 -river=false -max-concurrent "$m" 2>&1 | grep '^direct ' | grep -v publishing)
		echo "pair $i maxConcurrent $m: $line" >&2
		echo "$i $m $(echo "$line" | awk '{print $3}')" >>"$out"
	done
done
awk -v limit="$limit" '
	{ c[$1, $2] = $3; if ($2 == 0) { n0++; s0 += $3; q0 += $3 * $3 } }
	END {
		for (i = 1; (i, 0) in c; i++) {
			d = (c[i, limit] / c[i, 0] - 1) * 100; n++; s += d; q += d * d
			printf "pair %d: %d against %d cycles/s, %+.1f %%\n", i, c[i, limit], c[i, 0], d
		}
		m0 = s0 / n0; sd0 = sqrt((q0 - n0 * m0 * m0) / (n0 - 1))
		m = s / n; sd = sqrt((q - n * m * m) / (n - 1))
		printf "without the limit: mean %.0f cycles/s, sd %.1f %% of it\n", m0, sd0 / m0 * 100
		printf "change per pair: mean %+.1f %%, sd %.1f %%, standard error %.1f %%\n", m, sd, sd / sqrt(n)
	}' "$out"
rm -f "$out"
