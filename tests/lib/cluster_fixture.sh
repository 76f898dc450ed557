#!/usr/bin/env bash
# cluster_fixture.sh start|stop DIR MODE -- the CTest fixture of the
# postgres tests (tests/CMakeLists.txt): a throwaway cluster (scripts/cluster.sh)
# preloaded or not; the preloaded one also gets the database pglease_client
# with the extension, for the client tests.  stop also checks that the
# server log shows no crash and no deadlock (a test that crashed a backend,
# or whose statement deadlocked and was retried, can pass on its own).
#
# PGLEASE_TEST_PORT and PG* come from the fixture's environment.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
CLUSTER="$ROOT/scripts/cluster.sh"
[ $# -eq 3 ] || die "usage: cluster_fixture.sh start|stop DIR preload|nopreload"
cmd="$1" dir="$2" mode="$3"

case "$cmd" in
start)
	# a cluster left by an interrupted run would keep its old state
	"$CLUSTER" stop "$dir" immediate >/dev/null 2>&1 || true
	rm -rf "$dir"
	mkdir -p "$(dirname "$dir")"
	chmod 755 "$(dirname "$dir")"
	"$CLUSTER" start "$dir" "$mode"
	if [ "$mode" = preload ]; then
		psql_q -d postgres -c "CREATE DATABASE pglease_client"
		psql_q -d pglease_client -c "CREATE EXTENSION pg_lease"
	fi
	ok "cluster_${mode}_started"
	;;
stop)
	"$CLUSTER" stop "$dir"
	expect "server_log_of_${mode}_cluster_is_clean" "$(grep -E 'PANIC|TRAP:|terminated by signal' "$dir/server.log" | head -5)" \
		'! grep -qE "PANIC|TRAP:|terminated by signal" "$dir/server.log"'
	# and no deadlock between two statements (40P01; issue 35: acquires of one
	# resource once deadlocked inside the extension).  No test provokes one on
	# purpose: nested.sql's LS002 only says "could deadlock", and
	# fast_path_keeps_no_lock.spec expects none.
	expect "server_log_of_${mode}_cluster_has_no_deadlock" "$(grep -A3 'deadlock detected' "$dir/server.log" | head -12 | tr '\n' ' ')" \
		'! grep -q "deadlock detected" "$dir/server.log"'
	# the log is shown on a failure (ctest --output-on-failure); the data goes
	[ "$failures" -gt 0 ] || rm -rf "$dir"
	finish
	;;
*)
	die "unknown command $cmd"
	;;
esac
