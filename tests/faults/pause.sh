#!/usr/bin/env bash
# pause.sh -- a holder is frozen (SIGSTOP) past its TTL while another takes
# over, then resumed (SIGCONT).  Both increment a counter after reading it.
# Fenced, the stale holder's write fails with LS001 and no increment is lost;
# unfenced, the same schedule loses an update.  The test asserts both.
source "$(dirname "$0")/lib.sh"
PORT="${FAULTS_PORT:-24402}"
start_cluster "$WORK/pg" "$PORT"
use_cluster "$WORK/pg" "$PORT"
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE pause" 
export PGDATABASE=pause
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_lease" -c "CREATE TABLE counter (id int PRIMARY KEY, v int)"

# write_sql FENCED TOKENVAR VALUEVAR -- the holder's read-modify-write
write_sql() {
	if [ "$1" = fenced ]; then
		printf '%s\n' "BEGIN;" "SELECT lease.fence('pause/r', :t);" \
			"UPDATE counter SET v = :v + 1 WHERE id = 1;" "COMMIT;"
	else
		printf '%s\n' "UPDATE counter SET v = :v + 1 WHERE id = 1;"
	fi
}

run_schedule() {
	local mode="$1" a_pid i
	psql -X -q -c "DELETE FROM lease.grants" -c "DELETE FROM counter" -c "INSERT INTO counter VALUES (1, 0)"
	{
		echo "SELECT lease.acquire('pause/r', '2 s', holder => 'A') AS t \\gset"
		echo "SELECT v FROM counter WHERE id = 1 \\gset"
		echo "\\echo A-read"
		echo "SELECT pg_sleep(0.5);"
		write_sql "$mode"
		echo "\\echo A-done"
	} >"$WORK/a.sql"
	# psql itself (not under timeout), so that SIGSTOP freezes the holder
	PGAPPNAME=pause_a psql -X -A -t -v VERBOSITY=sqlstate -f "$WORK/a.sql" >"$WORK/a.out" 2>&1 &
	a_pid=$!
	WORKER_PIDS+=("$a_pid")
	# freeze A while it "works" (its pg_sleep), holding the lease
	for i in $(seq 1 500); do
		[ "$(psql -X -A -t -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pause_a' AND query LIKE '%pg_sleep%'")" = 1 ] && break
		sleep 0.01
	done
	kill -STOP "$a_pid"
	sleep 2.5 # past A's TTL
	{
		echo "SELECT lease.acquire('pause/r', '10 s', wait => '5 s', holder => 'B') AS t \\gset"
		echo "SELECT v FROM counter WHERE id = 1 \\gset"
		write_sql "$mode"
		echo "SELECT lease.release('pause/r', :t);"
	} >"$WORK/b.sql"
	timeout 30 psql -X -A -t -v VERBOSITY=sqlstate -v ON_ERROR_STOP=1 -f "$WORK/b.sql" >"$WORK/b.out" 2>&1
	kill -CONT "$a_pid"
	wait_workers 30 "$a_pid" || true
	acked_b="$(grep -c '^UPDATE 1$' "$WORK/b.out" || true)"
	final="$(psql -X -A -t -c "SELECT v FROM counter WHERE id = 1")"
}

run_schedule fenced
expect "fenced_stale_write_fails_LS001" "A's output: $(tr '\n' ' ' <"$WORK/a.out")" 'grep -q LS001 "$WORK/a.out"'
expect "fenced_no_increment_lost" "counter is $final after B's one acknowledged increment" '[ "$final" = 1 ]'

run_schedule unfenced
# the unfenced schedule is a negative control: the stale write must go through and lose an update
negative_control "unfenced_stale_write_succeeds" "the stale holder's unfenced write accepted (A's output: $(tr '\n' ' ' <"$WORK/a.out"))" \
	'grep -q A-done "$WORK/a.out" && ! grep -q ERROR "$WORK/a.out"'
negative_control "unfenced_schedule_loses_an_update" "counter $final after two acknowledged increments" '[ "$final" = 1 ]'
echo "# unfenced: two increments acknowledged, counter = $final (one lost); fenced: the stale one rejected"
expect "server_log_has_no_panic_or_assertion" "see the server log" 'log_is_clean "$WORK/pg"'
finish
