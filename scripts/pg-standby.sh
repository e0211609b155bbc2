#!/usr/bin/env bash
# pg-standby.sh runs a throw-away PostgreSQL primary with a synchronous
# streaming standby on 127.0.0.1, for failover tests. Both live in one
# directory of their own; nothing is registered with the system (no
# pg_createcluster, nothing under /etc/postgresql) and the machine's own
# clusters are not touched.
#
#   scripts/pg-standby.sh start [--dir DIR] [--primary-port P] [--standby-port S] [--owner PID]
#   scripts/pg-standby.sh crash-primary DIR   # pg_ctl stop -m immediate: no shutdown checkpoint, like a crash
#   scripts/pg-standby.sh promote DIR         # the standby becomes a read-write primary
#   scripts/pg-standby.sh stop DIR            # stops both servers and removes DIR
#
# start prints shell assignments on stdout once the standby streams
# synchronously (pg_stat_replication.sync_state = sync):
#
#   PG_STANDBY_DIR=/tmp/chunklock-pg.XXXXXX
#   PG_PRIMARY_PORT=5xxxx
#   PG_STANDBY_PORT=5xxxx
#
# Without --dir it makes a new directory under ${TMPDIR:-/tmp}; without
# ports it picks free ones (and picks again if a port is taken meanwhile).
# The superuser is "postgres", with trust authentication on 127.0.0.1 only.
# With --owner PID a watchdog stops everything and removes DIR once process
# PID is gone, should its owner die before calling stop.
#
# The primary has synchronous_standby_names = 'standby1' and the default
# synchronous_commit = on: a commit is acknowledged only once the standby
# has flushed it, so a promoted standby has every acknowledged commit.
#
# PostgreSQL refuses to run as root: as root, the servers run as the
# postgres user (runuser), and DIR must be reachable by it.
#
# Environment:
#   PG_BIN  directory of initdb, pg_ctl, pg_basebackup and psql (default:
#           the newest /usr/lib/postgresql/*/bin, else the one on PATH)
#
# Exit status: 0 done; 3 the PostgreSQL server tools or the postgres user
# are missing; 1 any other failure (the servers' logs are printed).
set -euo pipefail

script=$(readlink -f "$0")

log() { printf 'pg-standby.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
missing() { log "$*"; exit 3; }

usage() {
	sed -n '/^#   scripts/p' "$script" | sed 's/^#   //' >&2
	exit 2
}

find_bin() {
	if [[ -n ${PG_BIN:-} ]]; then
		[[ -x $PG_BIN/initdb ]] || missing "PG_BIN=$PG_BIN has no initdb"
		return
	fi
	local d
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [[ -x $d/initdb ]]; then
			PG_BIN=$d
			return
		fi
	done
	if d=$(command -v initdb); then
		PG_BIN=$(dirname "$d")
		return
	fi
	missing "PostgreSQL server tools not found (initdb, pg_ctl, pg_basebackup): install them (Debian: apt-get install postgresql) or set PG_BIN"
}

# as_pg runs a command as the user that owns the clusters, from /, so that a
# current directory it may not read does not matter.
as_pg() {
	if [[ $(id -u) -eq 0 ]]; then
		(cd / && runuser -u postgres -- "$@")
	else
		(cd / && "$@")
	fi
}

check_user() {
	if [[ $(id -u) -eq 0 ]] && ! id postgres >/dev/null 2>&1; then
		missing "running as root, but there is no postgres user to run PostgreSQL as"
	fi
}

# free_port prints a port nothing listens on (a server may still take it
# before us: start_server then tries another).
free_port() {
	local p i
	for i in $(seq 1 50); do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	die "found no free port"
}

sql() { # sql PORT QUERY
	as_pg "$PG_BIN/psql" -X -q -A -t -h 127.0.0.1 -p "$1" -U postgres -d postgres -c "$2"
}

# start_server NAME PORT_VAR: starts DIR/NAME on port ${!PORT_VAR}; when
# the port is taken and was not given, picks another one and tries again.
start_server() {
	local name=$1 var=$2 fixed=$3 try
	for try in 1 2 3 4 5; do
		printf "\nport = %s\n" "${!var}" | as_pg tee -a "$dir/$name/postgresql.conf" >/dev/null
		if as_pg "$PG_BIN/pg_ctl" -D "$dir/$name" -l "$dir/$name.log" -w -t 60 start >/dev/null; then
			return
		fi
		if [[ $fixed == 1 ]] || ! grep -q 'Address already in use' "$dir/$name.log"; then
			die "$name did not start (its log follows)"
		fi
		printf -v "$var" '%s' "$(free_port)"
	done
	die "$name found no free port in 5 tries"
}

stop_all() {
	local name pid
	for name in primary standby; do
		if [[ -f $dir/$name/postmaster.pid ]]; then
			as_pg "$PG_BIN/pg_ctl" -D "$dir/$name" -m immediate -w -t 30 stop >/dev/null 2>&1 || {
				pid=$(head -n1 "$dir/$name/postmaster.pid" 2>/dev/null || true)
				if [[ -n $pid && $(cat "/proc/$pid/comm" 2>/dev/null) == postgres ]]; then
					kill -9 "$pid" 2>/dev/null || true
				fi
			}
		fi
	done
}

cmd_start() {
	local primary_port="" standby_port="" owner="" fixed_p=0 fixed_s=0
	dir=""
	while [[ $# -gt 0 ]]; do
		case $1 in
		--dir) dir=$2; shift 2 ;;
		--primary-port) primary_port=$2; fixed_p=1; shift 2 ;;
		--standby-port) standby_port=$2; fixed_s=1; shift 2 ;;
		--owner) owner=$2; shift 2 ;;
		*) usage ;;
		esac
	done
	find_bin
	check_user
	[[ -x $PG_BIN/pg_basebackup && -x $PG_BIN/pg_ctl && -x $PG_BIN/psql ]] ||
		missing "$PG_BIN lacks pg_ctl, pg_basebackup or psql"

	if [[ -z $dir ]]; then
		dir=$(mktemp -d "${TMPDIR:-/tmp}/chunklock-pg.XXXXXX")
	else
		mkdir -p "$dir"
		[[ -z $(ls -A "$dir") ]] || die "$dir is not empty"
		dir=$(readlink -f "$dir")
	fi
	# From here on a failure stops what was started and removes the directory.
	trap 'rc=$?; if [[ $rc -ne 0 ]]; then for f in "$dir"/*.log; do [[ -f $f ]] && { log "--- $f"; tail -n 30 "$f" >&2; }; done; stop_all; rm -rf "$dir"; fi' EXIT
	if [[ $(id -u) -eq 0 ]]; then
		chown postgres: "$dir"
		as_pg test -w "$dir" || die "the postgres user cannot write to $dir: every directory above it must be searchable by postgres"
	fi
	chmod 700 "$dir"
	[[ -n $primary_port ]] || primary_port=$(free_port)
	[[ -n $standby_port ]] || standby_port=$(free_port)

	as_pg "$PG_BIN/initdb" -D "$dir/primary" -U postgres -A trust -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 ||
		die "initdb failed (its log follows)"
	as_pg tee -a "$dir/primary/postgresql.conf" >/dev/null <<EOF

# pg-standby.sh
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
max_connections = 60
shared_buffers = 16MB
wal_level = replica
max_wal_senders = 4
synchronous_standby_names = 'standby1'
synchronous_commit = on
EOF
	start_server primary primary_port "$fixed_p"

	as_pg "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U postgres -D "$dir/standby" -X stream -c fast --no-sync >"$dir/basebackup.log" 2>&1 ||
		die "pg_basebackup failed (its log follows)"
	# The standby asks for no synchronous standby of its own: once promoted,
	# its commits would otherwise wait for one that does not exist.
	as_pg tee -a "$dir/standby/postgresql.conf" >/dev/null <<EOF

# pg-standby.sh: standby of the primary on port $primary_port
synchronous_standby_names = ''
primary_conninfo = 'host=127.0.0.1 port=$primary_port user=postgres application_name=standby1'
hot_standby = on
EOF
	as_pg touch "$dir/standby/standby.signal"
	start_server standby standby_port "$fixed_s"

	local state="" i
	for i in $(seq 1 300); do
		state=$(sql "$primary_port" "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'" 2>/dev/null || true)
		[[ $state == sync ]] && break
		sleep 0.1
	done
	[[ $state == sync ]] || die "the standby does not stream synchronously after 30s (sync_state '${state}')"

	if [[ -n $owner ]]; then
		setsid bash -c 'while kill -0 "$1" 2>/dev/null && [[ -d $2 ]]; do sleep 1; done; exec "$0" stop "$2"' \
			"$script" "$owner" "$dir" </dev/null >/dev/null 2>&1 &
		echo $! >"$dir/watchdog.pid"
	fi
	trap - EXIT
	printf 'PG_STANDBY_DIR=%s\nPG_PRIMARY_PORT=%s\nPG_STANDBY_PORT=%s\n' "$dir" "$primary_port" "$standby_port"
}

need_dir() {
	[[ $# -eq 1 ]] || usage
	dir=$(readlink -f "$1")
	[[ -d $dir/primary && -d $dir/standby ]] || die "$1 is not a directory made by pg-standby.sh start"
	find_bin
}

cmd_crash_primary() {
	need_dir "$@"
	as_pg "$PG_BIN/pg_ctl" -D "$dir/primary" -m immediate -w -t 30 stop >/dev/null
}

cmd_promote() {
	need_dir "$@"
	as_pg "$PG_BIN/pg_ctl" -D "$dir/standby" -w -t 60 promote >/dev/null
}

cmd_stop() {
	[[ $# -eq 1 ]] || usage
	dir=$(readlink -f "$1")
	[[ -d $dir ]] || return 0
	[[ -d $dir/primary || -d $dir/standby ]] || die "$1 is not a directory made by pg-standby.sh start"
	find_bin
	if [[ -f $dir/watchdog.pid ]]; then
		local w
		w=$(cat "$dir/watchdog.pid")
		[[ $w != "$$" && $w != "$PPID" ]] && kill "$w" 2>/dev/null || true
	fi
	stop_all
	rm -rf "$dir"
}

[[ $# -ge 1 ]] || usage
command=$1
shift
case $command in
start) cmd_start "$@" ;;
crash-primary) cmd_crash_primary "$@" ;;
promote) cmd_promote "$@" ;;
stop) cmd_stop "$@" ;;
*) usage ;;
esac
