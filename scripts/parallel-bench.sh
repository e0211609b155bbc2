#!/usr/bin/env bash
# One runner with N slots against N runner processes (BENCHMARKS.md, "One
# runner with 32 slots against 32 runners"): `chunklock run --loop --parallel
# N --job J -- true` against N processes of `chunklock run --loop --job J --
# true`, each draining a root job of its own over CHUNKS INTEGER dataids
# (every one due at once), on one `chunklock serve`, in alternating pairs.
# For each arm it prints chunks per second (wall time from the first runner's
# start to the last one's exit), the runners' CPU per chunk (the user and
# system time of the runner processes themselves, sampled from /proc: the
# `true` processes they start are left out, both arms start as many), the
# server's CPU per chunk, and how idle the machine was.
#
#   scripts/parallel-bench.sh [-store URL] [-slots 32] [-chunks 2000] [-pairs 3] [-shape root]
#
# -store is empty for the embedded store (a fresh data directory), or a
# postgres:// URL (a fresh schema is made in it and dropped at the end).
# -shape root (the default) drains a root job over an INTEGER definition
# (its schedule's frontier); -shape input a job reading a source whose
# CHUNKS chunks are published first (each publish queues its chunk).
set -euo pipefail
cd "$(dirname "$0")/.."
store="" slots=32 chunks=2000 pairs=3 shape=root
while [ $# -gt 0 ]; do
	case "$1" in
	-store) store=$2 ;;
	-slots) slots=$2 ;;
	-chunks) chunks=$2 ;;
	-pairs) pairs=$2 ;;
	-shape) shape=$2 ;;
	-h | -help | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "parallel-bench.sh: unknown argument $1 (see -help)" >&2; exit 2 ;;
	esac
	shift 2
done

work=$(mktemp -d)
bin=$work/chunklock
schema=""
serve_pid=""
cleanup() {
	[ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
	if [ -n "$schema" ]; then
		psql -q "${store%%\?*}" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$bin" ./cmd/chunklock

serve_store=$store
if [[ $store == postgres://* ]]; then
	schema=parallel_bench_$$
	psql -q -v ON_ERROR_STOP=1 "${store%%\?*}" -c "CREATE SCHEMA $schema" >/dev/null
	sep='?'; [[ $store == *\?* ]] && sep='&'
	serve_store="$store${sep}schema=$schema"
fi
"$bin" serve --data-dir "$work/server" ${serve_store:+--store "$serve_store"} --listen 127.0.0.1:0 >"$work/serve.log" 2>&1 &
serve_pid=$!
# The embedded store's server writes its URL to serve.url; every server
# logs it.
url=""
for _ in $(seq 1 300); do
	url=$(sed -n 's|^chunklock: GraphQL at \(http://[^ ]*\)/graphql$|\1|p' "$work/serve.log" | head -1)
	[ -n "$url" ] && break
	kill -0 "$serve_pid" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
	sleep 0.1
done
[ -n "$url" ] || { echo "parallel-bench.sh: the server did not start" >&2; cat "$work/serve.log" >&2; exit 1; }
export CHUNKLOCK_URL=$url

# declare NAME: a job NAME writing NAME-out, CHUNKS chunks to drain:
# -shape root, a root job over INTEGER 0..CHUNKS-1; -shape input, a job
# reading NAME-in, whose chunks 0..CHUNKS-1 are published.
declare_job() {
	if [ "$shape" = root ]; then
		cat >"$work/$1.yaml" <<YAML
datasets:
  - id: $1-out
    url: file:///dev/null
    location: /dev/null/{dataid}
    partitions: {kind: INTEGER, start: "0", end: "$((chunks - 1))"}
jobs:
  - id: $1
    output: $1-out
    leaseSeconds: 60
YAML
	else
		cat >"$work/$1.yaml" <<YAML
datasets:
  - id: $1-in
    url: file:///dev/null
    location: /dev/null/{dataid}
  - id: $1-out
    url: file:///dev/null
    location: /dev/null/{dataid}
jobs:
  - id: $1
    inputs: [$1-in]
    output: $1-out
    leaseSeconds: 60
YAML
	fi
	"$bin" apply -f "$work/$1.yaml" --keys-dir "$work/keys" >/dev/null 2>&1
	if [ "$shape" != root ]; then
		"$bin" publish --dataset "$1-in" --range "0..$((chunks - 1))" >/dev/null
	fi
}

# arm KIND NAME: runs the arm and prints "seconds cpu_ticks". A runner's
# own CPU (utime + stime of its threads, not of the commands it starts) is
# sampled from /proc every 50 ms while it runs; the last sample before it
# exits counts (bash reaps its children at once, so there is no zombie to
# read), which leaves out at most its last 50 ms.
arm() {
	local kind=$1 name=$2 pids=() total=0 start end alive line f
	local -A last=()
	start=$(date +%s.%N)
	if [ "$kind" = pool ]; then
		"$bin" run --loop --parallel "$slots" --job "$name" -- true >"$work/$name.log" 2>&1 &
		pids+=($!)
	else
		for _ in $(seq 1 "$slots"); do
			"$bin" run --loop --job "$name" -- true >>"$work/$name.log" 2>&1 &
			pids+=($!)
		done
	fi
	alive=1
	while [ "$alive" -eq 1 ]; do
		alive=0
		for pid in "${pids[@]}"; do
			if read -r line 2>/dev/null <"/proc/$pid/stat"; then
				f=(${line##*) })
				last[$pid]=$((f[11] + f[12]))
				alive=1
			fi
		done
		sleep 0.05
	done
	end=$(date +%s.%N)
	for pid in "${pids[@]}"; do
		total=$((total + ${last[$pid]:-0}))
		wait "$pid" || { echo "parallel-bench.sh: a runner of $name failed:" >&2; tail -20 "$work/$name.log" >&2; exit 1; }
	done
	echo "$(echo "$end - $start" | bc) $total"
}

# ticks PID: the process's own user + system clock ticks.
ticks() { local line f; read -r line <"/proc/$1/stat"; f=(${line##*) }); echo $((f[11] + f[12])); }
# machine: every CPU's ticks and the idle ones, from /proc/stat.
machine() { awk '/^cpu /{t=0; for (i=2; i<=NF; i++) t+=$i; print t, $5+$6; exit}' /proc/stat; }

hz=$(getconf CLK_TCK)
printf '%-5s %-22s %7s %9s %13s %13s %6s\n' pair arm chunks chunks/s "runner ms/c" "server ms/c" "idle%"
for p in $(seq 1 "$pairs"); do
	if [ $((p % 2)) -eq 1 ]; then order="pool single"; else order="single pool"; fi
	for kind in $order; do
		name=b$p$kind
		declare_job "$name"
		srv0=$(ticks "$serve_pid")
		read -r cpu0 idle0 < <(machine)
		read -r secs cpu < <(arm "$kind" "$name")
		read -r cpu1 idle1 < <(machine)
		srv1=$(ticks "$serve_pid")
		done_chunks=$(curl -sf "$CHUNKLOCK_URL/graphql" -H 'Content-Type: application/json' \
			-d "{\"query\":\"{ dataset(id: \\\"$name-out\\\") { chunkCounts { ready } } }\"}" |
			sed -n 's/.*"ready":\([0-9]*\).*/\1/p')
		label="run --parallel $slots"
		[ "$kind" = single ] && label="$slots x run"
		printf '%-5s %-22s %7s %9.0f %13.3f %13.3f %6.0f\n' "$p" "$label" "$done_chunks" \
			"$(echo "$chunks / $secs" | bc -l)" "$(echo "$cpu * 1000 / $hz / $chunks" | bc -l)" \
			"$(echo "($srv1 - $srv0) * 1000 / $hz / $chunks" | bc -l)" "$(echo "100 * ($idle1 - $idle0) / ($cpu1 - $cpu0)" | bc -l)"
	done
done
