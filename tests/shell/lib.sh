# lib.sh -- helpers for the shell-driven tests (sourced, not run).
#
# The harness (scripts/test.sh) exports PGHOST/PGPORT/PGUSER for a running
# throwaway cluster and PGLEASE_CLUSTER, its directory (for restarts).
# Each test prints "ok - name" or "not ok - name: why" per check and exits
# non-zero if any check failed.

set -euo pipefail

: "${PGLEASE_CLUSTER:?run through scripts/test.sh (PGLEASE_CLUSTER unset)}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"

# q SQL... -- run SQL in $TESTDB, print unaligned tuples only
q() { psql_q -d "$TESTDB" "$@"; }

# check NAME SQL -- the SQL must return exactly 't'
check() {
	local name="$1" sql="$2" got
	got="$(q -c "$sql" 2>&1)" || true
	if [ "$got" = "t" ]; then
		echo "ok - $name"
	else
		echo "not ok - $name: $sql returned '$got'"
		failures=$((failures + 1))
	fi
}


# fresh_db NAME -- a new database with the extension
fresh_db() {
	TESTDB="$1"
	psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS \"$TESTDB\"" -c "CREATE DATABASE \"$TESTDB\""
	q -c "CREATE EXTENSION pg_lease"
}

restart_cluster() { "$ROOT/scripts/cluster.sh" restart "$PGLEASE_CLUSTER" "${1:-fast}"; }


# sqlstate_of SQL -- the SQLSTATE the SQL fails with (empty if it succeeds)
sqlstate_of() {
	local out
	out="$(q -v VERBOSITY=sqlstate -c "$1" 2>&1 >/dev/null || true)"
	sed -n 's/^.*ERROR: *//p' <<<"$out" | head -1
}

# --- background sessions, each with a deadline ---------------------------
SESSIONS_DIR="$(mktemp -d)"
declare -A SESSION_PID=()
on_exit 'for p in "${SESSION_PID[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$SESSIONS_DIR"'

# start_session NAME LINE... -- run the lines (SQL or psql meta-commands) in
# one background psql session (application_name NAME, killed after 30 s);
# its output is session_out NAME
start_session() {
	local name="$1"
	shift
	local line
	for line in "$@"; do
		# a line ending in a meta-command (\gset) is complete; SQL gets its ';'
		case "$line" in *'\'*) echo "$line" ;; *) echo "$line;" ;; esac
	done >"$SESSIONS_DIR/$name.sql"
	PGAPPNAME="$name" timeout 30 psql -X -q -A -t -v ON_ERROR_STOP=1 -v VERBOSITY=sqlstate \
		-d "$TESTDB" -f "$SESSIONS_DIR/$name.sql" >"$SESSIONS_DIR/$name.out" 2>&1 &
	SESSION_PID[$name]=$!
}

# wait_session NAME SECONDS -- wait for it to end; false if it is still running
wait_session() {
	local name="$1" limit_ms=$(($2 * 1000)) start
	start="$(now_ms)"
	while kill -0 "${SESSION_PID[$name]}" 2>/dev/null; do
		[ $(($(now_ms) - start)) -ge "$limit_ms" ] && return 1
		sleep 0.01
	done
	wait "${SESSION_PID[$name]}" 2>/dev/null || true
	return 0
}

session_out() { cat "$SESSIONS_DIR/$1.out"; }

# backend_of NAME -- the server PID of a session, once it is connected (5 s)
backend_of() {
	local pid="" i
	for i in $(seq 1 500); do
		pid="$(q -c "SELECT pid FROM pg_stat_activity WHERE application_name = '$1'")"
		[ -n "$pid" ] && break
		sleep 0.01
	done
	echo "$pid"
}

# wait_for_waiters RESOURCE N -- wait (5 s at most) until N sessions run a
# waiting acquire of RESOURCE; the checks that follow tell if they never did
wait_for_waiters() {
	local resource="$1" n="$2" i got=0
	for i in $(seq 1 500); do
		got="$(q -c "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%lease.acquire(''$resource''%wait%'")"
		[ "$got" -ge "$n" ] && return 0
		sleep 0.01
	done
	echo "# only $got of $n waiters for $resource seen after 5 s"
}

# ms_between EPOCH_A EPOCH_B -- milliseconds from A to B (server epochs, fractional)
ms_between() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%d", (b - a) * 1000 }'; }
