#!/usr/bin/env bash
# Waiting: woken (preloaded) or polled (not preloaded), first come first
# served in both modes, and a waiter that gives up or dies never blocks the
# next.
#
# Preloaded, waiters run with lease.poll_interval = 1s: a grant within
# 300 ms of the release can only come from a wake-up, not from polling.
# Not preloaded, they poll every 200 ms and must be granted within 600 ms.
source "$(dirname "$0")/lib.sh"
fresh_db shell_wait

mode="$(cat "$PGLEASE_CLUSTER/mode")"
if [ "$mode" = preload ]; then POLL=1s; BOUND_MS=300; else POLL=200ms; BOUND_MS=600; fi
SETPOLL="SET lease.poll_interval = '$POLL'"
EPOCH="extract(epoch from clock_timestamp())"

# acquire_sql RESOURCE HOLDER WAIT -- prints "token epoch-of-return"
acquire_sql() { echo "SELECT lease.acquire('$1', '30 s', wait => '$3', holder => '$2') || ' ' || $EPOCH"; }
token_of() { session_out "$1" | awk 'NF == 2 { print $1 }'; }
granted_at() { session_out "$1" | awk 'NF == 2 { print $2 }'; }

# --- wake on release ------------------------------------------------------
t1="$(q -c "SELECT lease.acquire('wq/release', '30 s', holder => 'h')")"
start_session w_release "$SETPOLL" "$(acquire_sql wq/release w 10s)"
wait_for_waiters wq/release 1
sleep 0.3
released_at="$(q -c "SELECT $EPOCH FROM (SELECT 1) x, LATERAL (SELECT lease.release('wq/release', $t1)) r")"
wait_session w_release 5 || true
lat="$(ms_between "$released_at" "$(granted_at w_release)")"
expect "wake_on_release" "granted $lat ms after release (bound $BOUND_MS), output: $(session_out w_release)" \
	'[ "$(token_of w_release)" -gt "$t1" ] && [ "$lat" -lt "$BOUND_MS" ]'

# --- wake on expiry: at the expiry instant, in both modes --------------------
q -c "SELECT lease.acquire('wq/expiry', '1 s', holder => 'h')" >/dev/null
expires="$(q -c "SELECT extract(epoch from expires_at) FROM lease.grants WHERE resource = 'wq/expiry'")"
start_session w_expiry "SET lease.poll_interval = '1s'" "$(acquire_sql wq/expiry w 10s)"
wait_session w_expiry 5 || true
lat="$(ms_between "$expires" "$(granted_at w_expiry)")"
expect "wake_on_expiry" "granted $lat ms after expiry, output: $(session_out w_expiry)" \
	'[ -n "$(token_of w_expiry)" ] && [ "$lat" -ge 0 ] && [ "$lat" -lt 150 ]'

# --- wake on break ----------------------------------------------------------
q -c "SELECT lease.acquire('wq/break', '30 s', holder => 'h')" >/dev/null
start_session w_break "$SETPOLL" "$(acquire_sql wq/break w 10s)"
wait_for_waiters wq/break 1
sleep 0.3
broken_at="$(q -c "SELECT $EPOCH FROM (SELECT 1) x, LATERAL (SELECT lease.break('wq/break')) r")"
wait_session w_break 5 || true
lat="$(ms_between "$broken_at" "$(granted_at w_break)")"
expect "wake_on_break" "granted $lat ms after break (bound $BOUND_MS), output: $(session_out w_break)" \
	'[ -n "$(token_of w_break)" ] && [ "$lat" -lt "$BOUND_MS" ]'

# --- wake on the exit of a session-bound holder -----------------------------
start_session h_exit "SELECT lease.acquire('wq/exit', '30 s', holder => 'h', session_bound => true)" \
	"SELECT pg_sleep(25)"
holder_pid="$(backend_of h_exit)"
for i in $(seq 1 300); do
	[ "$(q -c "SELECT count(*) FROM lease.leases WHERE resource = 'wq/exit'")" = 1 ] && break
	sleep 0.01
done
start_session w_exit "$SETPOLL" "$(acquire_sql wq/exit w 10s)"
wait_for_waiters wq/exit 1
sleep 0.3
killed_at="$(q -c "SELECT $EPOCH FROM (SELECT pg_terminate_backend($holder_pid)) x")"
wait_session w_exit 5 || true
lat="$(ms_between "$killed_at" "$(granted_at w_exit)")"
expect "wake_on_holder_backend_exit" "granted $lat ms after the holder's backend was terminated (bound $BOUND_MS), output: $(session_out w_exit)" \
	'[ -n "$(token_of w_exit)" ] && [ "$lat" -lt "$BOUND_MS" ]'

# --- cancel and timeout leave the queue -------------------------------------
t1="$(q -c "SELECT lease.acquire('wq/cancel', '30 s', holder => 'h')")"
start_session w_cancelled "$SETPOLL" "$(acquire_sql wq/cancel w1 20s)"
wait_for_waiters wq/cancel 1
start_session w_after_cancel "$SETPOLL" "$(acquire_sql wq/cancel w2 20s)"
wait_for_waiters wq/cancel 2
if [ "$mode" = preload ]; then
	check "view_counts_waiters" "SELECT waiters = 2 FROM lease.leases WHERE resource = 'wq/cancel'"
else
	check "view_waiters_null_without_preload" "SELECT waiters IS NULL FROM lease.leases WHERE resource = 'wq/cancel'"
fi
q -c "SELECT pg_cancel_backend($(backend_of w_cancelled))" >/dev/null
wait_session w_cancelled 5 || true
expect "cancelled_waiter_gets_57014" "output: $(session_out w_cancelled)" \
	'session_out w_cancelled | grep -q 57014'
released_at="$(q -c "SELECT $EPOCH FROM (SELECT 1) x, LATERAL (SELECT lease.release('wq/cancel', $t1)) r")"
wait_session w_after_cancel 5 || true
lat="$(ms_between "$released_at" "$(granted_at w_after_cancel)")"
expect "cancelled_waiter_does_not_block_next" "next granted $lat ms after release, output: $(session_out w_after_cancel)" \
	'[ -n "$(token_of w_after_cancel)" ] && [ "$lat" -lt "$BOUND_MS" ]'

t1="$(q -c "SELECT lease.acquire('wq/timeout', '30 s', holder => 'h')")"
start_session w_timed_out "$SETPOLL" "$(acquire_sql wq/timeout w1 1s)"
wait_for_waiters wq/timeout 1
start_session w_after_timeout "$SETPOLL" "$(acquire_sql wq/timeout w2 20s)"
wait_session w_timed_out 5 || true
expect "timed_out_waiter_gets_null" "output: $(session_out w_timed_out)" '[ -z "$(session_out w_timed_out)" ]'
released_at="$(q -c "SELECT $EPOCH FROM (SELECT 1) x, LATERAL (SELECT lease.release('wq/timeout', $t1)) r")"
wait_session w_after_timeout 5 || true
lat="$(ms_between "$released_at" "$(granted_at w_after_timeout)")"
expect "timed_out_waiter_does_not_block_next" "next granted $lat ms after release, output: $(session_out w_after_timeout)" \
	'[ -n "$(token_of w_after_timeout)" ] && [ "$lat" -lt "$BOUND_MS" ]'

# --- a terminated waiter does not block the next ------------------------------
t1="$(q -c "SELECT lease.acquire('wq/term', '30 s', holder => 'h')")"
start_session w_terminated "$SETPOLL" "$(acquire_sql wq/term w1 20s)"
wait_for_waiters wq/term 1
start_session w_after_term "$SETPOLL" "$(acquire_sql wq/term w2 20s)"
wait_for_waiters wq/term 2
q -c "SELECT pg_terminate_backend($(backend_of w_terminated))" >/dev/null
wait_session w_terminated 5 || true
released_at="$(q -c "SELECT $EPOCH FROM (SELECT 1) x, LATERAL (SELECT lease.release('wq/term', $t1)) r")"
wait_session w_after_term 5 || true
lat="$(ms_between "$released_at" "$(granted_at w_after_term)")"
expect "terminated_waiter_does_not_block_next" "next granted $lat ms after release, output: $(session_out w_after_term)" \
	'[ -n "$(token_of w_after_term)" ] && [ "$lat" -lt "$BOUND_MS" ]'

# --- statement_timeout ends a wait with 57014 ---------------------------------
q -c "SELECT lease.acquire('wq/stmt', '30 s', holder => 'h')" >/dev/null
start_ms="$(now_ms)"
state="$(sqlstate_of "SET statement_timeout = '300ms'; SELECT lease.acquire('wq/stmt', '30 s', wait => '5 s', holder => 'w')")"
took=$(($(now_ms) - start_ms))
expect "statement_timeout_ends_wait_57014" "SQLSTATE '$state' after $took ms" \
	'[ "$state" = 57014 ] && [ "$took" -lt 1500 ]'
# acquire sets the lock timeout behind the GUC's back while it waits: the
# caller's is back after a wait ended by an error too (SHOW reads the variable)
shown="$(q -v ON_ERROR_STOP=0 -c "SET lock_timeout = '7ms'" -c "SET statement_timeout = '300ms'" \
	-c "SELECT lease.acquire('wq/stmt', '30 s', wait => '5 s', holder => 'w')" -c "SHOW lock_timeout" 2>/dev/null || true)"
expect "lock_timeout_is_the_callers_after_a_cancelled_wait" "SHOW lock_timeout after the cancelled wait: '$shown'" \
	'[ "$shown" = 7ms ]'

# --- first come, first served: the shared queue (preloaded) or the lock
# manager's (not preloaded: lease_lockqueue.c) -------------------------------
t1="$(q -c "SELECT lease.acquire('wq/fifo', '30 s', holder => 'h')")"
for i in 1 2 3 4 5; do
	start_session "w_fifo$i" "$SETPOLL" \
		"SELECT lease.acquire('wq/fifo', '30 s', wait => '20 s', holder => 'w$i') AS t \\gset" \
		"SELECT :t || ' ' || $EPOCH" "SELECT pg_sleep(0.05)" "SELECT lease.release('wq/fifo', :t)"
	wait_for_waiters wq/fifo "$i"
	sleep 0.05
done
q -c "SELECT lease.release('wq/fifo', $t1)" >/dev/null
order=""
for i in 1 2 3 4 5; do
	wait_session "w_fifo$i" 10 || true
	order="$order $(token_of "w_fifo$i")"
done
sorted="$(tr ' ' '\n' <<<"$order" | sed '/^$/d' | sort -n | tr '\n' ' ')"
expect "fifo_five_waiters_in_arrival_order" "tokens by arrival:$order" \
	'[ "$(echo $order)" = "$(echo $sorted)" ] && [ "$(wc -w <<<"$order")" -eq 5 ]'

# try_acquire does not barge past a queued waiter: the head is stopped
# (SIGSTOP on its backend) when the resource frees up
t1="$(q -c "SELECT lease.acquire('wq/barge', '30 s', holder => 'h')")"
start_session w_barge "$SETPOLL" "$(acquire_sql wq/barge w 20s)"
wait_for_waiters wq/barge 1
head_pid="$(backend_of w_barge)"
kill -STOP "$head_pid"
q -c "SELECT lease.release('wq/barge', $t1)" >/dev/null
check "try_acquire_does_not_barge" "SELECT lease.try_acquire('wq/barge', '30 s', holder => 'newcomer') IS NULL"
check "acquire_without_wait_does_not_barge" "SELECT lease.acquire('wq/barge', '30 s', holder => 'newcomer') IS NULL"
kill -CONT "$head_pid"
wait_session w_barge 5 || true
expect "queued_waiter_granted_after_newcomers" "output: $(session_out w_barge)" '[ -n "$(token_of w_barge)" ]'
finish
