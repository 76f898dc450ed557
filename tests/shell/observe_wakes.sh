#!/usr/bin/env bash
# lease.observe sleeps in the server and another session's change ends the
# sleep when it commits: a release, a proclaim, a takeover of an expired
# grant, a break, and the exit of a session-bound leader.  Preloaded, an
# observer's safety-net read comes every 1 s, so a return within 300 ms of
# the change can only come from a wake-up (each case runs after the observer
# has slept 400 ms).  Not preloaded, observe polls every lease.poll_interval
# (200 ms here): within 600 ms.
source "$(dirname "$0")/lib.sh"
fresh_db shell_observe_wakes

mode="$(cat "$PGLEASE_CLUSTER/mode")"
if [ "$mode" = preload ]; then BOUND_MS=300; else BOUND_MS=600; fi
EPOCH="extract(epoch from clock_timestamp())"

# wait_for_observer NAME -- wait (5 s at most) until the session sleeps in lease.observe
wait_for_observer() {
	local i got=0
	for i in $(seq 1 500); do
		got="$(q -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = '$1'
			AND state = 'active' AND wait_event_type = 'Extension' AND query LIKE '%lease.observe%'")"
		[ "$got" -ge 1 ] && return 0
		sleep 0.01
	done
	echo "# observer $1 not seen sleeping after 5 s"
}

# observe_case NAME ELECTION AFTER_TERM AFTER_VALUE CHANGE_SQL EXPECTED
# -- observe from (AFTER_TERM, AFTER_VALUE), run CHANGE_SQL in another session,
# expect the observer to return "value|term-is-null" = EXPECTED within the bound
observe_case() {
	local name="$1" el="$2" term="$3" value="$4" change="$5" expected="$6"
	start_session "$name" "SET lease.poll_interval = '200ms'" \
		"SELECT coalesce(value, '-') || '|' || (term IS NULL) || ' ' || $EPOCH
		   FROM lease.observe('$el', $term, $value, '20 s')"
	wait_for_observer "$name"
	sleep 0.4
	local changed_at out got lat
	# the instant before the change: the observer may return before the
	# changing session has read the clock again
	changed_at="$(q -c "SELECT $EPOCH" -c "$change")"
	changed_at="${changed_at%%$'\n'*}"
	wait_session "$name" 25 || true
	out="$(session_out "$name")"
	got="${out% *}"
	lat="$(ms_between "$changed_at" "${out##* }")"
	expect "${name}_returns_new_state" "got '$out', expected '$expected'" '[ "$got" = "$expected" ]'
	expect "${name}_within_${BOUND_MS}ms" "returned ${lat} ms after the change" \
		'[ "$lat" -ge 0 ] && [ "$lat" -le "$BOUND_MS" ]'
}

t="$(q -c "SELECT lease.acquire('ow/release', '30 s', '0', 'c1', false, 'v1')")"
observe_case release ow/release "$t" "'v1'" "SELECT lease.release('ow/release', $t)" "-|true"

t="$(q -c "SELECT lease.acquire('ow/proclaim', '30 s', '0', 'c1', false, 'v1')")"
observe_case proclaim ow/proclaim "$t" "'v1'" "SELECT lease.proclaim('ow/proclaim', $t, 'v2')" "v2|false"

# an expired grant nobody took over: the observer saw no leader; a takeover
t="$(q -c "SELECT lease.acquire('ow/takeover', '0.1 s', '0', 'c1', false, 'v1')")"
sleep 0.2
observe_case takeover ow/takeover 0 NULL \
	"SELECT lease.acquire('ow/takeover', '30 s', '0', 'c2', false, 'v3')" "v3|false"
check "takeover_counted_as_takeover_term" \
	"SELECT term > $t FROM lease.leader('ow/takeover')"

t="$(q -c "SELECT lease.acquire('ow/break', '30 s', '0', 'c1', false, 'v1')")"
observe_case break ow/break "$t" "'v1'" "SELECT lease.break('ow/break')" "-|true"

# a session-bound leader whose backend exits
start_session leader "SELECT lease.acquire('ow/session', '30 s', '0', 'c1', true, 'v1')" "SELECT pg_sleep(20)"
for i in $(seq 1 500); do
	t="$(q -c "SELECT term FROM lease.leader('ow/session')")"
	[ -n "$t" ] && break
	sleep 0.01
done
leader_pid="$(backend_of leader)"
observe_case session_exit ow/session "${t:-0}" "'v1'" \
	"SELECT pg_terminate_backend($leader_pid, 5000)" "-|true"

finish
