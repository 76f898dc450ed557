#!/usr/bin/env bash
# local.sh -- servers to try pglease against, kept running until stopped
# (make db, make servers, make stop).
#
#   local.sh db        a PostgreSQL cluster with pg_lease installed and
#                      preloaded, and a database "pglease" with the extension;
#                      prints its conninfo
#   local.sh servers   a Redis, an etcd and a ZooKeeper server on free
#                      loopback ports; prints their URLs
#   local.sh stop      stops whatever of them runs (their data stays)
#
# Everything lives in $PGLEASE_LOCAL (default .pglease-local/ in the
# checkout): db/ (scripts/cluster.sh, on a Unix socket in db/sock, no TCP
# port), redis/, etcd/, zookeeper/ (scripts/redis.sh, etcd.sh, zookeeper.sh).
# Starting what already runs only prints its address again; rm -rf the
# directory after a stop to start from nothing.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/scripts/lib/common.sh"

LOCAL="${PGLEASE_LOCAL:-$ROOT/.pglease-local}"
DB_PORT=5432 # names the socket file only: the cluster listens on no TCP port
DB_NAME=pglease

usage() { die "usage: local.sh db|servers|stop   (files in \$PGLEASE_LOCAL, default .pglease-local/)"; }

# ---- PostgreSQL ------------------------------------------------------------

# the packages and this checkout's extension, when missing (as scripts/test.sh)
ensure_postgres() {
	if ! command -v pg_config >/dev/null 2>&1 || [ ! -x "$(pg_config --bindir)/initdb" ]; then
		echo "PostgreSQL is not installed: running scripts/install-deps.sh (needs root)"
		"$ROOT/scripts/install-deps.sh"
	fi
	local version
	version="$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$ROOT/pg_lease.control")"
	# installed: its control file names this version (the scripts are one base and the upgrade chain)
	if ! grep -qx "default_version = '$version'" "$(pg_config --sharedir)/extension/pg_lease.control" 2>/dev/null ||
		[ ! -f "$(pg_config --pkglibdir)/pg_lease.so" ]; then
		echo "pg_lease $version is not installed: running scripts/install-extension.sh"
		"$ROOT/scripts/install-extension.sh"
	fi
}

db_psql() { psql_q -h "$LOCAL/db/sock" -p "$DB_PORT" -U postgres "$@"; }

start_db() {
	local dir="$LOCAL/db" socket
	socket="$dir/sock/.s.PGSQL.$DB_PORT"
	# a Unix socket path holds at most 107 bytes
	[ "${#socket}" -le 107 ] || die "socket path $socket is too long: set PGLEASE_LOCAL to a shorter directory"
	if ! db_psql -d postgres -c 'SELECT 1' >/dev/null 2>&1; then
		ensure_postgres
		mkdir -p "$LOCAL"
		chmod 755 "$LOCAL"
		# as root the cluster runs as postgres, who must reach the directory
		if [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -x "$LOCAL"; then
			die "user postgres cannot enter $LOCAL: set PGLEASE_LOCAL to a directory it can (e.g. /tmp/pglease-local)"
		fi
		PGLEASE_TEST_PORT="$DB_PORT" "$ROOT/scripts/cluster.sh" start "$dir" preload
	fi
	[ -n "$(db_psql -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'")" ] ||
		db_psql -d postgres -c "CREATE DATABASE $DB_NAME"
	db_psql -d "$DB_NAME" -c 'SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS pg_lease'
	echo "PostgreSQL with pg_lease (preloaded) runs in $dir"
	# every field named: PGPORT, PGUSER... of the caller's environment do not apply
	echo "  conninfo: host=$dir/sock port=$DB_PORT dbname=$DB_NAME user=postgres"
	echo "  psql:     psql \"host=$dir/sock port=$DB_PORT dbname=$DB_NAME user=postgres\""
	echo "  stop:     make stop   (or scripts/local.sh stop)"
}

# ---- Redis, etcd, ZooKeeper ------------------------------------------------

# start_server NAME -- unless it runs, start the server NAME (redis, etcd or
# zookeeper: the script of that name in scripts/) on its former
# port if that is free, else on a free one (a new one after a failed start:
# another process may have bound it first); prints its port
start_server() {
	local name="$1" dir="$LOCAL/$1" port try
	local -a mode=()
	if pid_of "$dir/$name.pid" >/dev/null; then
		cat "$dir/port"
		return
	fi
	[ "$name" != redis ] || mode=(persist) # every write fsynced: tokens survive a restart
	for try in 1 2 3; do
		port="$(cat "$dir/port" 2>/dev/null || true)"
		if [ "$try" -gt 1 ] || [ -z "$port" ] || ! port_is_free "$port"; then
			port="$(free_port)"
		fi
		if [ "$name" = etcd ]; then
			port_is_free $((port + 1)) || continue # the peer port
			# a member's data names its ports: on new ones it starts anew
			[ "$port" = "$(cat "$dir/port" 2>/dev/null)" ] || rm -rf "$dir/data"
		fi
		if "$ROOT/scripts/$name.sh" start "$dir" "$port" "${mode[@]}" >&2; then
			echo "$port"
			return
		fi
		echo "local.sh: $name did not start on port $port (try $try of 3)" >&2
	done
	die "$name did not start (its log: $dir/$name.log)"
}

start_servers() {
	local redis etcd zookeeper
	mkdir -p "$LOCAL"
	redis="$(start_server redis)"
	etcd="$(start_server etcd)"
	zookeeper="$(start_server zookeeper)"
	echo "Redis, etcd and ZooKeeper run in $LOCAL"
	echo "  redis:     redis://127.0.0.1:$redis"
	echo "  etcd:      etcd://127.0.0.1:$etcd"
	echo "  zookeeper: zookeeper://127.0.0.1:$zookeeper"
	echo "  stop:      make stop   (or scripts/local.sh stop)"
}

stop_all() {
	local name stopped=""
	if [ -f "$LOCAL/db/data/postmaster.pid" ]; then
		"$ROOT/scripts/cluster.sh" stop "$LOCAL/db"
		stopped+=" PostgreSQL"
	fi
	for name in redis etcd zookeeper; do
		if pid_of "$LOCAL/$name/$name.pid" >/dev/null; then
			"$ROOT/scripts/$name.sh" stop "$LOCAL/$name"
			stopped+=" $name"
		fi
	done
	echo "stopped:${stopped:- nothing was running} (data kept in $LOCAL)"
}

case "${1:-}" in
db) start_db ;;
servers) start_servers ;;
stop) stop_all ;;
*) usage ;;
esac
