#!/usr/bin/env bash
# A zero-wait permit is refused only when no permit is free (issue 36, item
# 7): in each of ROUNDS rounds (default 8), five sessions call
# lease.acquire_permit(limit 3, wait => '0') on a new resource at one
# instant by the server's clock, and exactly three are granted.  Every
# session commits slowly (commit_delay = 20 ms, as a busy disk does): a
# granting try holds the resource's row until its commit, and the others
# wait for that row, a short internal lock, not for a permit.  Before the
# fix the grace of that wait was 10 ms, and a commit that took longer made
# the tries behind it return NULL with permits free (here 1 granted).
# Not preloaded, a newcomer also found the queue's lock taken by another
# newcomer's look at it, and gave up.
source "$(dirname "$0")/lib.sh"
fresh_db shell_zero_wait_permits

ROUNDS="${ROUNDS:-8}"

# try NAME RESOURCE AT -- session NAME: one zero-wait try at the server's
# time AT, slow to commit; its last line is the token or "refused"
try() {
	start_session "$1" "SET commit_delay = 20000" "SET commit_siblings = 0" \
		"SELECT pg_sleep_until('$3')" \
		"SELECT coalesce(lease.acquire_permit('$2', '30 s', 3, wait => '0')::text, 'refused')"
}

for ((round = 1; round <= ROUNDS; round++)); do
	res="zw/$round"
	at="$(q -c "SELECT clock_timestamp() + interval '1 s'")"
	for i in 1 2 3 4 5; do try "t$i" "$res" "$at"; done
	granted=0 refused=0 other=""
	for i in 1 2 3 4 5; do
		wait_session "t$i" 10 || true
		out="$(session_out "t$i" | tail -n 1)"
		case "$out" in
		refused) refused=$((refused + 1)) ;;
		[0-9]*) granted=$((granted + 1)) ;;
		*) other+=" t$i: $(session_out "t$i" | tr '\n' ' ')" ;;
		esac
	done
	held="$(q -c "SELECT count(*) FROM lease.leases WHERE resource = '$res'")"
	expect "round_${round}_five_zero_wait_tries_get_three_permits" \
		"$granted granted, $refused refused, $held held;$other" \
		'[ "$granted" -eq 3 ] && [ "$refused" -eq 2 ] && [ "$held" -eq 3 ]'
done

# --- another newcomer's look at the queue does not refuse a try ---------------
# Not preloaded, a newcomer looks at the resource's queue lock (the advisory
# lock (0x4C5300, hash of the resource), lease_lockqueue.c) and gives it
# back; a session holding it in share mode stands for another newcomer
# caught in that instant.  Before the fix a look took it exclusive, so the
# try found it taken and returned NULL with every permit free.  Preloaded,
# the queue is in shared memory and the advisory lock is nobody's: granted.
start_session look "SELECT pg_advisory_lock_shared(x'4C5300'::int, hashtext('zw/look'))" \
	"SELECT pg_sleep(20)"
for i in $(seq 1 500); do
	[ "$(q -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND mode = 'ShareLock'
	             AND classid = x'4C5300'::int::oid")" = 1 ] && break
	sleep 0.01
done
got="$(q -c "SELECT coalesce(lease.acquire_permit('zw/look', '30 s', 3, wait => '0')::text, 'refused')")"
expect "a_newcomers_look_at_the_queue_refuses_no_try" "the try gave '$got'" '[ "$got" != refused ]'
q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'look'" >/dev/null
wait_session look 5 || true
finish
