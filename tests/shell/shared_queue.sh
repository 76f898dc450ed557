#!/usr/bin/env bash
# Shared and counted leases waiting (since 0.4.0): a writer waits for every
# reader, a released permit admits exactly one waiter, each granted with a
# token above those before.  Preloaded, the one FIFO queue of the resource
# also gives: permits in arrival order, readers that came after a waiting
# writer held back until it leaves, then all of them granted together.
#
# Preloaded, waiters run with lease.poll_interval = 1s: a grant within
# 300 ms of the release can only come from a wake-up, not from polling.
# Not preloaded, they poll every 200 ms and must be granted within 600 ms.
source "$(dirname "$0")/lib.sh"
fresh_db shell_shared_queue

mode="$(cat "$PGLEASE_CLUSTER/mode")"
if [ "$mode" = preload ]; then POLL=1s; BOUND_MS=300; else POLL=200ms; BOUND_MS=600; fi
SETPOLL="SET lease.poll_interval = '$POLL'"
EPOCH="extract(epoch from clock_timestamp())"

# a waiting acquire in a background session, printing "token epoch-of-return"
writer_sql() { echo "SELECT lease.acquire('$1', '30 s', wait => '10 s', holder => '$2') || ' ' || $EPOCH"; }
reader_sql() { echo "SELECT lease.acquire_shared('$1', '30 s', wait => '10 s', holder => '$2') || ' ' || $EPOCH"; }
permit_sql() { echo "SELECT lease.acquire_permit('$1', '30 s', $3, wait => '10 s', holder => '$2') || ' ' || $EPOCH"; }
token_of() { session_out "$1" | awk 'NF == 2 { print $1 }'; }
granted_at() { session_out "$1" | awk 'NF == 2 { print $2 }'; }
running() { kill -0 "${SESSION_PID[$1]}" 2>/dev/null; }

# active_on HOLDER N -- wait (5 s at most) until N sessions run an acquire for HOLDER
active_on() {
	local i
	for i in $(seq 1 500); do
		[ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%holder => ''$1''%' AND pid <> pg_backend_pid()")" -ge "$2" ] && return 0
		sleep 0.01
	done
	echo "# no active acquire of holder $1 after 5 s"
}

# release_at RESOURCE TOKEN -- release, printing the server epoch of it
release_at() { q -c "SELECT $EPOCH FROM (SELECT 1) x, LATERAL (SELECT lease.release('$1', $2)) r"; }

# --- a writer waits for every reader ------------------------------------------
r1="$(q -c "SELECT lease.acquire_shared('sq/rw', '30 s', holder => 'r1')")"
r2="$(q -c "SELECT lease.acquire_shared('sq/rw', '30 s', holder => 'r2')")"
start_session w "$SETPOLL" "$(writer_sql sq/rw w)"
active_on w 1
sleep 0.3
release_at sq/rw "$r1" >/dev/null
sleep 0.5
expect "writer_waits_while_one_reader_holds" "writer output: $(session_out w)" 'running w'
released_at="$(release_at sq/rw "$r2")"
wait_session w 5 || true
lat="$(ms_between "$released_at" "$(granted_at w)")"
expect "writer_granted_when_the_last_reader_leaves" "granted $lat ms after (bound $BOUND_MS), output: $(session_out w)" \
	'[ "$(token_of w)" -gt "$r2" ] && [ "$lat" -lt "$BOUND_MS" ]'

# --- a released permit admits exactly one waiter --------------------------------
p1="$(q -c "SELECT lease.acquire_permit('sq/sem', '30 s', 2, holder => 'p1')")"
p2="$(q -c "SELECT lease.acquire_permit('sq/sem', '30 s', 2, holder => 'p2')")"
start_session a "$SETPOLL" "$(permit_sql sq/sem a 2)"
active_on a 1
sleep 0.1
start_session b "$SETPOLL" "$(permit_sql sq/sem b 2)"
active_on b 1
sleep 0.3
released_at="$(release_at sq/sem "$p1")"
for i in $(seq 1 300); do running a && running b || break; sleep 0.01; done
sleep 0.5
n_done=0
running a || n_done=$((n_done + 1))
running b || n_done=$((n_done + 1))
expect "released_permit_admits_exactly_one" "$n_done waiters granted; a: $(session_out a); b: $(session_out b)" '[ "$n_done" = 1 ]'
first=a second=b
running a && first=b second=a
expect "permit_token_above_earlier_ones" "$(session_out $first)" '[ "$(token_of $first)" -gt "$p2" ]'
check "permits_held_never_above_limit" "SELECT count(*) = 2 FROM lease.leases WHERE resource = 'sq/sem'"
if [ "$mode" = preload ]; then
	lat="$(ms_between "$released_at" "$(granted_at a)")"
	expect "permits_granted_in_arrival_order" "first granted: $first, $lat ms after the release" \
		'[ "$first" = a ] && [ "$lat" -lt "$BOUND_MS" ]'
fi
release_at sq/sem "$p2" >/dev/null
wait_session "$second" 5 || true
expect "next_permit_after_the_next_release" "$(session_out $second)" '[ "$(token_of $second)" -gt "$(token_of $first)" ]'

# --- preloaded: readers after a waiting writer queue behind it -----------------------
if [ "$mode" = preload ]; then
	h="$(q -c "SELECT lease.acquire_shared('sq/pref', '30 s', holder => 'h')")"
	start_session pw "$SETPOLL" "$(writer_sql sq/pref pw)"
	active_on pw 1
	sleep 0.1
	start_session pr1 "$SETPOLL" "$(reader_sql sq/pref pr1)"
	start_session pr2 "$SETPOLL" "$(reader_sql sq/pref pr2)"
	active_on pr1 1
	active_on pr2 1
	sleep 0.5
	expect "readers_held_back_by_a_waiting_writer" "pr1: $(session_out pr1); pr2: $(session_out pr2)" \
		'running pr1 && running pr2'
	check "queue_holds_writer_and_readers" "SELECT lease.waiters('sq/pref') = 3"
	release_at sq/pref "$h" >/dev/null
	wait_session pw 5 || true
	sleep 0.3
	expect "writer_granted_before_later_readers" "pw: $(session_out pw); pr1 running: $(running pr1 && echo yes)" \
		'[ "$(token_of pw)" -gt "$h" ] && running pr1 && running pr2'
	released_at="$(release_at sq/pref "$(token_of pw)")"
	wait_session pr1 5 || true
	wait_session pr2 5 || true
	lat1="$(ms_between "$released_at" "$(granted_at pr1)")"
	lat2="$(ms_between "$released_at" "$(granted_at pr2)")"
	expect "queued_readers_all_granted_when_the_writer_leaves" \
		"pr1 $lat1 ms, pr2 $lat2 ms after (bound $BOUND_MS); $(session_out pr1) / $(session_out pr2)" \
		'[ "$(token_of pr1)" -gt "$(token_of pw)" ] && [ "$(token_of pr2)" -gt "$(token_of pw)" ] && [ "$lat1" -lt "$BOUND_MS" ] && [ "$lat2" -lt "$BOUND_MS" ]'
	check "both_readers_hold_together" "SELECT count(*) = 2 AND bool_and(mode = 'shared') FROM lease.leases WHERE resource = 'sq/pref'"
fi

psql -X -q -d postgres -c "DROP DATABASE shell_shared_queue" >/dev/null
finish
