#!/usr/bin/env bash
# cluster.sh -- a throwaway PostgreSQL cluster on a Unix socket in a directory.
#
#   cluster.sh start DIR [preload|nopreload]   initdb (if needed) and start
#   cluster.sh stop DIR [fast|immediate]       stop (default fast)
#   cluster.sh restart DIR [fast|immediate]    stop, then start with the same settings
#   cluster.sh env DIR                         print PGHOST/PGPORT/PGUSER exports
#
# The cluster listens on no TCP port (listen_addresses = ''), only on the
# socket DIR/sock/.s.PGSQL.PORT: PGLEASE_TEST_PORT (default 5432) only names
# that socket file, in a directory of the cluster's own, so clusters in
# different directories may share the number and none needs a free TCP port.
#
# initdb and postgres refuse to run as root, so as root the cluster runs as
# the unprivileged "postgres" user (created by Debian's postgresql package).
#
# PGLEASE_LISTEN_HOST=ADDR at the first start (initdb): listen on TCP ADDR,
# port PGLEASE_TEST_PORT, too, and trust the clients of
# PGLEASE_LISTEN_CLIENTS (a CIDR, default ADDR/32) in pg_hba.conf (a cluster in
# a network namespace of its own, tests/faults/partition/).
set -euo pipefail

PG_BINDIR="$(pg_config --bindir)"
PORT="${PGLEASE_TEST_PORT:-5432}" # the socket file's name (see above)

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh" # die

as_owner() {
	# run from / : the unprivileged user may not be able to enter the caller's directory
	if [ "$(id -u)" -eq 0 ]; then
		id postgres >/dev/null 2>&1 ||
			die "user 'postgres' not found: install postgresql-15 (scripts/install-deps.sh)"
		(cd / && runuser -u postgres -- "$@")
	else
		"$@"
	fi
}

cmd="${1:-}"; dir="${2:-}"
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: cluster.sh start|stop|restart|env DIR [mode]"
[ -x "$PG_BINDIR/initdb" ] || die "no initdb in $PG_BINDIR: install postgresql-15 (scripts/install-deps.sh)"

case "$cmd" in
start)
	mode="${3:-preload}"
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd)"
	if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir"; fi
	chmod 755 "$dir"
	if [ ! -f "$dir/data/PG_VERSION" ]; then
		as_owner "$PG_BINDIR/initdb" -D "$dir/data" --auth=trust --no-sync \
			-U postgres -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 ||
			{ cat "$dir/initdb.log" >&2; die "initdb failed"; }
		as_owner mkdir -p "$dir/sock"
		# pglease_password_user must log in with a password (SCRAM): the
		# client's tests of postgresql://user:password@... URLs
		as_owner sed -i '1i local all pglease_password_user scram-sha-256' "$dir/data/pg_hba.conf"
		if [ -n "${PGLEASE_LISTEN_HOST:-}" ]; then
			echo "host all all ${PGLEASE_LISTEN_CLIENTS:-$PGLEASE_LISTEN_HOST/32} trust" |
				as_owner tee -a "$dir/data/pg_hba.conf" >/dev/null
		fi
		{
			echo "listen_addresses = '${PGLEASE_LISTEN_HOST:-}'"
			echo "port = $PORT"
			echo "unix_socket_directories = '$dir/sock'"
			echo "max_connections = 100"
			echo "max_prepared_transactions = 10"
			echo "fsync = on"
			echo "log_min_messages = warning"
			echo "logging_collector = off"
		} | as_owner tee -a "$dir/data/postgresql.conf" >/dev/null
	fi
	# preload on/off is re-applied at each start
	as_owner sed -i '/^shared_preload_libraries/d' "$dir/data/postgresql.conf"
	if [ "$mode" = preload ]; then
		echo "shared_preload_libraries = 'pg_lease'" | as_owner tee -a "$dir/data/postgresql.conf" >/dev/null
	fi
	echo "$mode" >"$dir/mode"
	as_owner "$PG_BINDIR/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null ||
		{ tail -30 "$dir/server.log" >&2; die "server did not start"; }
	;;
stop)
	how="${3:-fast}"
	if [ -f "$dir/data/postmaster.pid" ]; then
		as_owner "$PG_BINDIR/pg_ctl" -D "$dir/data" -m "$how" -w -t 60 stop >/dev/null || true
	fi
	;;
restart)
	"$0" stop "$dir" "${3:-fast}"
	"$0" start "$dir" "$(cat "$dir/mode")"
	;;
env)
	dir="$(cd "$dir" && pwd)"
	echo "export PGHOST='$dir/sock' PGPORT='$PORT' PGUSER=postgres PGDATABASE=postgres"
	;;
*)
	die "unknown command $cmd"
	;;
esac
