#!/usr/bin/env bash
# crash.sh -- 8 workers loop acquire -> fenced write -> release on 16
# resources while the postmaster is killed with SIGKILL and, alternately,
# stopped with pg_ctl -m immediate, at random moments; the server is
# restarted each time.  The history checker must pass, and every worker must
# survive (the client reports "unavailable", it never crashes).
source "$(dirname "$0")/lib.sh"
PORT="${FAULTS_PORT:-24400}"
if [ "$QUICK" = 1 ]; then CRASHES=3; else CRASHES=10; fi
SECONDS_RUN=$((CRASHES * 4 + 6))

start_cluster "$WORK/pg" "$PORT"
use_cluster "$WORK/pg" "$PORT"
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE faults"
export PGDATABASE=faults
psql -X -q -v ON_ERROR_STOP=1 -f "$ROOT/tests/faults/schema.sql"

for n in $(seq 1 8); do
	"$WORKER" "w$n" 16 "$SECONDS_RUN" "$WORK/w$n.log" 2>"$WORK/w$n.err" &
	WORKER_PIDS+=($!)
done

sleep 2
for i in $(seq 1 "$CRASHES"); do
	sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", 0.5 + rand() * 2 }')"
	if [ $((i % 2)) -eq 1 ]; then
		kill -9 "$(postmaster_pid "$WORK/pg")"
		how="SIGKILL of the postmaster"
	else
		PGLEASE_TEST_PORT="$PORT" "$CLUSTER" stop "$WORK/pg" immediate
		how="pg_ctl stop -m immediate"
	fi
	restart_after_crash "$WORK/pg" "$PORT" || exit 1
	echo "# crash $i: $how, restarted"
done

status=0
wait_workers 60 "${WORKER_PIDS[@]}" || status=$?
WORKER_PIDS=()
expect "workers_survive_every_crash" "a worker exited with status $status: $(cat "$WORK"/w*.err | head -5)" '[ "$status" -eq 0 ]'
unavailable="$(cat "$WORK"/w*.log | grep -c '^U ' || true)"
acked="$(cat "$WORK"/w*.log | grep -c '^A ' || true)"
expect "workers_saw_the_server_unavailable" "no worker ever saw the outage" '[ "$unavailable" -gt 0 ]'
expect "workers_made_progress_between_crashes" "only $acked acknowledged writes" '[ "$acked" -gt 50 ]'
echo "# $CRASHES crashes survived; $acked acknowledged fenced writes; $unavailable unavailable replies"

if "$ROOT/tests/faults/check_history.sh" faults "$WORK"/w*.log; then :; else failures=$((failures + 1)); fi
expect "server_log_has_no_panic_or_assertion" "see $WORK/pg/server.log" 'log_is_clean "$WORK/pg"'
finish
