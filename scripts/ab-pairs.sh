#!/usr/bin/env bash
# Compares the claim throughput of two builds of chunklock-bench (BENCHMARKS.md,
# "The engine in its own package"): alternating runs of build A and build B
# in ABBA order, so that a drift of the machine falls on both sides, then the
# change of B against A in each pair and their mean.
#
#   scripts/ab-pairs.sh -a BIN_A -b BIN_B [-backend etcd|postgres] [-pairs 6]
#                       [-chunks 4000] [-runners 16]
#
# Build the two binaries first, one from each commit, for instance:
#
#   mkdir ../base && git archive main | tar -x -C ../base
#   (cd ../base && go build -o ../bench-main ./cmd/chunklock-bench)
#   go build -o ../bench-branch ./cmd/chunklock-bench
#   scripts/ab-pairs.sh -a ../bench-main -b ../bench-branch -backend postgres
#
# Each run prints one line of chunklock-bench's table (direct API, no
# baseline, no River); the summary gives, for cycles/s and for the CPU time
# of the benchmark's process per cycle (cpu ms/c: the runners and the
# engine), the spread of A's runs (their noise) beside the mean change of B
# per pair and its standard error, and the median change. On a machine
# that others share, throughput swings with their load; CPU per cycle much
# less.
set -euo pipefail
backend=etcd pairs=6 chunks=4000 runners=16 a= b=
while [ $# -gt 0 ]; do
	case "$1" in
	-a) a=$2 ;;
	-b) b=$2 ;;
	-backend) backend=$2 ;;
	-pairs) pairs=$2 ;;
	-chunks) chunks=$2 ;;
	-runners) runners=$2 ;;
	-h | -help | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "ab-pairs.sh: unknown argument $1 (see -help)" >&2; exit 2 ;;
	esac
	shift 2
done
if [ -z "$a" ] || [ -z "$b" ]; then
	echo "ab-pairs.sh: give both builds, -a BIN_A and -b BIN_B (see -help)" >&2
	exit 2
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for i in $(seq 1 "$pairs"); do
	order="A B"
	[ $((i % 2)) = 0 ] && order="B A"
	for side in $order; do
		bin=$a
		[ "$side" = B ] && bin=$b
		line=$("$bin" -backend "$backend" -runners "$runners" -chunks "$chunks" -baseline 0 -river=false 2>&1 | grep '^direct ' | grep -v publishing)
		echo "pair $i $side: $line" >&2
		echo "$i $side $(echo "$line" | awk '{print $3, $12}')" >>"$out"
	done
done
summary() { # column name
	awk -v col="$1" -v name="$2" '
	{ c[$1, $2] = $col; if ($2 == "A") { na++; sa += $col; qa += $col * $col } }
	END {
		for (i = 1; (i, "A") in c; i++) {
			d[i] = (c[i, "B"] / c[i, "A"] - 1) * 100; n++; s += d[i]; q += d[i] * d[i]
		}
		for (i = 2; i <= n; i++) { # insertion sort, for the median
			v = d[i]
			for (j = i - 1; j >= 1 && d[j] > v; j--) d[j + 1] = d[j]
			d[j + 1] = v
		}
		med = (n % 2) ? d[(n + 1) / 2] : (d[n / 2] + d[n / 2 + 1]) / 2
		ma = sa / na; sda = sqrt((qa - na * ma * ma) / (na - 1))
		m = s / n; sd = sqrt((q - n * m * m) / (n - 1))
		printf "%s: A mean %.3g, sd %.1f %% of it; B against A per pair: mean %+.1f %%, sd %.1f %%, standard error %.1f %%, median %+.1f %%\n", name, ma, sda / ma * 100, m, sd, sd / sqrt(n), med
	}' "$out"
}
awk '{ c[$1, $2] = $0 } END { for (i = 1; (i, "A") in c; i++) { split(c[i, "A"], a); split(c[i, "B"], b); printf "pair %d: cycles/s B %d, A %d (%+.1f %%); cpu ms/c B %s, A %s\n", i, b[3], a[3], (b[3] / a[3] - 1) * 100, b[4], a[4] } }' "$out"
summary 3 "cycles/s"
summary 4 "cpu ms/c"
