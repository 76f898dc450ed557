#!/usr/bin/env bash
# A waiting acquire never holds the lease row between tries, so the holder's
# renew and release return at once while a waiter waits; the waiter is granted
# soon after the release, with a higher token.  Bounded: every step has a
# deadline.
source "$(dirname "$0")/lib.sh"
fresh_db shell_waiter

t1="$(q -c "SELECT lease.acquire('w/hot', '30 s', holder => 'holder')")"

out="$(mktemp)"
q -c "SELECT lease.acquire('w/hot', '30 s', wait => '4 s', holder => 'waiter')" >"$out" 2>&1 &
waiter=$!
sleep 0.5

# timed by psql (\timing: the statement's round trip): a blocked row
# shows, psql's own start and connection on a loaded machine do not
timed() { q -c '\timing on' -c "SELECT $1" | awk '/^Time: / { printf " %d\n", $2; next } { printf "%s", $0 }'; }
read -r renewed renew_ms < <(timed "lease.renew('w/hot', $t1, '30 s')")
expect "holder_renew_returns_at_once" "renew took ${renew_ms} ms (result $renewed)" \
	'[ "$renewed" = t ] && [ "$renew_ms" -lt 500 ]'

read -r released release_ms < <(timed "lease.release('w/hot', $t1)")
expect "holder_release_returns_at_once" "release took ${release_ms} ms (result $released)" \
	'[ "$released" = t ] && [ "$release_ms" -lt 500 ]'

# the waiter has until 2 s after the release (its own wait runs to 4 s)
start="$(now_ms)"
while kill -0 "$waiter" 2>/dev/null && [ $(($(now_ms) - start)) -lt 2000 ]; do sleep 0.02; done
grant_ms=$(($(now_ms) - start))
if kill -0 "$waiter" 2>/dev/null; then kill "$waiter"; fi
wait "$waiter" || true
t2="$(cat "$out")"
rm -f "$out"
expect "waiter_granted_after_release" "waiter returned '$t2' ${grant_ms} ms after the release" \
	'[ -n "$t2" ] && [ "$t2" -gt "$t1" ] 2>/dev/null'
expect "waiter_granted_within_a_second" "granted ${grant_ms} ms after the release" '[ "$grant_ms" -lt 1000 ]'
finish
