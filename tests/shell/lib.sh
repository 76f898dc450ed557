# lib.sh -- helpers for the shell-driven tests (sourced, not run).
#
# The harness (scripts/test.sh) exports PGHOST/PGPORT/PGUSER for a running
# throwaway cluster and PGLEASE_CLUSTER, its directory (for restarts).
# Each test prints "ok - name" or "not ok - name: why" per check and exits
# non-zero if any check failed.

set -euo pipefail

: "${PGLEASE_CLUSTER:?run through scripts/test.sh (PGLEASE_CLUSTER unset)}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
failures=0

# q SQL... -- run SQL in $TESTDB, print unaligned tuples only
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$TESTDB" "$@"; }

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

# expect NAME WHY 'SHELL-CONDITION' -- the condition (eval'd) must hold
expect() {
	local name="$1" why="$2" cond="$3"
	if eval "$cond"; then
		echo "ok - $name"
	else
		echo "not ok - $name: $why"
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

now_ms() { echo $(($(date +%s%N) / 1000000)); }

finish() { exit $((failures > 0)); }

# sqlstate_of SQL -- the SQLSTATE the SQL fails with (empty if it succeeds)
sqlstate_of() {
	local out
	out="$(q -v VERBOSITY=sqlstate -c "$1" 2>&1 >/dev/null || true)"
	sed -n 's/^.*ERROR: *//p' <<<"$out" | head -1
}
