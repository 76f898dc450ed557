#!/usr/bin/env bash
# wait bounds every acquire: a grant or fence that another transaction has
# not finished (open, or prepared with PREPARE TRANSACTION) makes an acquire
# return NULL within its wait (at least 100 ms on a locked row: the grace),
# instead of blocking until that transaction ends.  Ordering is kept: an
# expired grant is never taken over while a fencing transaction is open.
source "$(dirname "$0")/lib.sh"
fresh_db shell_wait_bound

SLACK_MS=300	# the statement's own work; psql's start and connection are not counted

# bounded NAME CALL WAIT_MS -- CALL (an acquire expression) returns NULL
# within WAIT_MS + slack, timed by the server's clock from before the call to
# after it: what the SQL promises, and what a CPU-starved psql client cannot
# stretch (the wall clock around psql measured its start-up too and failed on
# a loaded machine).  A call that blocks is ended after 30 s.
bounded() {
	local name="$1" call="$2" wait_ms="$3" out got took
	out="$(PSQL_TIMEOUT=30 q -c "DO \$\$ DECLARE t0 timestamptz := clock_timestamp(); r bigint;
	             BEGIN r := $call;
	             RAISE NOTICE 'bounded:%|%', coalesce(r::text, ''),
	                 round(extract(epoch FROM clock_timestamp() - t0) * 1000)::int; END \$\$" 2>&1)" || true
	got="${out#*bounded:}" got="${got%%|*}" took="${out##*|}"
	[[ "$took" =~ ^[0-9]+$ ]] || { got="$out" took=-1; }
	expect "$name" "returned '$got' after $took ms by the server's clock (bound: $wait_ms ms + $SLACK_MS ms)" \
		'[ -z "$got" ] && [ "$took" -ge 0 ] && [ "$took" -lt $((wait_ms + SLACK_MS)) ]'
}

# wait_in_sleep NAME -- until session NAME sleeps inside its open transaction
wait_in_sleep() {
	for i in $(seq 1 500); do
		[ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = '$1'
		             AND backend_xid IS NOT NULL AND query LIKE '%pg_sleep%'")" = 1 ] && return 0
		sleep 0.01
	done
	echo "# session $1 never reached its sleep"
}

# end_session NAME -- terminate its backend (if it still runs) and wait for it
end_session() {
	q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '$1'" >/dev/null
	wait_session "$1" 5 || true
}

# --- an uncommitted grant of a new resource (an INSERT in flight) -------------
start_session g_new "BEGIN" "SELECT lease.acquire('wb/new', '30 s', holder => 'open')" "SELECT pg_sleep(20)"
wait_in_sleep g_new
bounded "try_acquire_bounded_by_uncommitted_new_grant" \
	"lease.try_acquire('wb/new', '30 s', holder => 'other')" 0
bounded "acquire_wait_500ms_bounded_by_uncommitted_new_grant" \
	"lease.acquire('wb/new', '30 s', wait => '500 ms', holder => 'other')" 500
end_session g_new
check "free_again_after_uncommitted_grant_ends" \
	"SELECT lease.try_acquire('wb/new', '30 s', holder => 'other') IS NOT NULL"

# --- an uncommitted grant of a released resource (an UPDATE in flight) --------
q -c "SELECT lease.release('wb/released', lease.acquire('wb/released', '30 s'))" >/dev/null
start_session g_rel "BEGIN" "SELECT lease.acquire('wb/released', '30 s', holder => 'open')" "SELECT pg_sleep(20)"
wait_in_sleep g_rel
bounded "try_acquire_bounded_by_uncommitted_regrant" \
	"lease.try_acquire('wb/released', '30 s', holder => 'other')" 0
bounded "acquire_wait_500ms_bounded_by_uncommitted_regrant" \
	"lease.acquire('wb/released', '30 s', wait => '500 ms', holder => 'other')" 500
end_session g_rel

# --- a prepared transaction holding a grant outlives its backend ---------------
q -c "SELECT lease.release('wb/prepared', lease.acquire('wb/prepared', '30 s'))" >/dev/null
q -c "BEGIN" -c "SELECT lease.acquire('wb/prepared', '30 s', holder => 'prepared')" \
	-c "PREPARE TRANSACTION 'wb_prepared'" >/dev/null
bounded "try_acquire_bounded_by_prepared_grant" \
	"lease.try_acquire('wb/prepared', '30 s', holder => 'other')" 0
bounded "acquire_wait_500ms_bounded_by_prepared_grant" \
	"lease.acquire('wb/prepared', '30 s', wait => '500 ms', holder => 'other')" 500
check "prepared_grant_not_listed" "SELECT count(*) = 0 FROM lease.leases WHERE resource = 'wb/prepared'"
q -c "ROLLBACK PREPARED 'wb_prepared'" >/dev/null
check "free_after_rollback_prepared" \
	"SELECT lease.try_acquire('wb/prepared', '30 s', holder => 'other') IS NOT NULL"

# --- an expired grant inside an open fencing transaction -------------------------
# (a TTL long enough for a slow machine to start the fencing session before
# it ends, then a wait for the expiry by the server's clock)
t="$(q -c "SELECT lease.acquire('wb/fenced', '3 s', holder => 'fencer')")"
start_session f_open "BEGIN" "SELECT lease.fence('wb/fenced', $t)" "SELECT pg_sleep(20)"
wait_in_sleep f_open
for _ in $(seq 1 200); do	# the grant expires while the fencing transaction is open
	[ "$(q -c "SELECT expires_at < clock_timestamp() FROM lease.grants WHERE resource = 'wb/fenced'")" = t ] && break
	sleep 0.05
done
bounded "acquire_wait_500ms_bounded_by_fenced_expired_grant" \
	"lease.acquire('wb/fenced', '30 s', wait => '500 ms', holder => 'other')" 500
check "fenced_grant_not_taken_over_while_fence_open" \
	"SELECT token = $t FROM lease.grants WHERE resource = 'wb/fenced'"
end_session f_open
check "expired_grant_taken_over_after_fence_ends" \
	"SELECT lease.acquire('wb/fenced', '30 s', wait => '1 s', holder => 'other') > $t"
finish
