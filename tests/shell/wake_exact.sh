#!/usr/bin/env bash
# Wake-ups reach exactly the waiters they are for:
# - a release committed with COMMIT PREPARED wakes the head of its queue (it
#   used to be dropped at PREPARE, leaving the waiter to its poll interval);
# - a backend that took many session-bound grants and released them wakes
#   nobody when it exits (it used to remember 16 and then wake everyone).
# Preloaded, waiters poll every 1 s: a grant within 300 ms of the commit can
# only come from a wake-up.  Not preloaded, they poll every 200 ms.
source "$(dirname "$0")/lib.sh"
fresh_db shell_wake_exact

mode="$(cat "$PGLEASE_CLUSTER/mode")"
if [ "$mode" = preload ]; then POLL=1s; BOUND_MS=300; else POLL=200ms; BOUND_MS=600; fi
EPOCH="extract(epoch from clock_timestamp())"

# --- COMMIT PREPARED of a release wakes the waiter (three times, so a lucky
# poll cannot pass it) --------------------------------------------------------
for round in 1 2 3; do
	r="wx/prepared-$round"
	t="$(q -c "SELECT lease.acquire('$r', '30 s', holder => 'h')")"
	start_session "w_prep$round" "SET lease.poll_interval = '$POLL'" \
		"SELECT lease.acquire('$r', '30 s', wait => '10 s', holder => 'w') || ' ' || $EPOCH"
	wait_for_waiters "$r" 1
	q -c "BEGIN" -c "SELECT lease.release('$r', $t)" -c "PREPARE TRANSACTION 'wx_$round'" >/dev/null
	sleep 0.$((round * 2))
	committed_at="$(q -c "COMMIT PREPARED 'wx_$round'" -c "SELECT $EPOCH")"
	wait_session "w_prep$round" 5 || true
	out="$(session_out "w_prep$round")"
	lat="$(ms_between "$committed_at" "${out##* }")"
	expect "commit_prepared_release_wakes_waiter_round_$round" \
		"granted $lat ms after COMMIT PREPARED (bound $BOUND_MS ms), output: $out" \
		'[ "${out%% *}" -gt "$t" ] && [ "$lat" -lt "$BOUND_MS" ]'
done

# --- ROLLBACK PREPARED of a release: the waiter is not granted ------------------
t="$(q -c "SELECT lease.acquire('wx/rolled-back', '30 s', holder => 'h')")"
q -c "BEGIN" -c "SELECT lease.release('wx/rolled-back', $t)" -c "PREPARE TRANSACTION 'wx_rb'" >/dev/null
q -c "ROLLBACK PREPARED 'wx_rb'" >/dev/null
check "rollback_prepared_release_keeps_grant" "SELECT lease.is_current('wx/rolled-back', $t)"

# --- a backend's exit wakes only the waiters of its session-bound grants --------
if [ "$mode" = preload ]; then
	q -c "SELECT lease.acquire('wx/unrelated', '30 s', holder => 'h')" >/dev/null
	start_session w_unrelated "SET lease.poll_interval = '1s'" \
		"SELECT lease.acquire('wx/unrelated', '30 s', wait => '20 s', holder => 'w')"
	wait_for_waiters wx/unrelated 1
	# 40 session-bound grants taken and released, then the backend exits
	start_session many_sessions \
		"SELECT count(lease.release('wx/s/' || i, lease.acquire('wx/s/' || i, '30 s', session_bound => true))) FROM generate_series(1, 40) i" \
		"SELECT pg_sleep(0.5)"
	for i in $(seq 1 300); do
		[ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'many_sessions' AND query LIKE '%pg_sleep%'")" = 1 ] && break
		sleep 0.01
	done
	before="$(q -c "SELECT wakeups FROM lease.stats()")"
	wait_session many_sessions 5 || true
	sleep 0.2
	after="$(q -c "SELECT wakeups FROM lease.stats()")"
	expect "exit_after_released_session_grants_wakes_nobody" \
		"wake-ups went from $before to $after when the backend exited; output: $(session_out many_sessions)" \
		'[ -n "$before" ] && [ "$before" = "$after" ]'
	q -c "SELECT pg_cancel_backend($(backend_of w_unrelated))" >/dev/null
fi
finish
