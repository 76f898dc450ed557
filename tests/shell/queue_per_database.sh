#!/usr/bin/env bash
# The wait queue is per database: a waiter queued for a resource name in one
# database never blocks, or counts as a waiter of, the same name in another.
source "$(dirname "$0")/lib.sh"
fresh_db shell_queue_db_b
fresh_db shell_queue_db_a

# in database b: a holder, and a waiter queued behind it
TESTDB=shell_queue_db_b
q -c "SELECT lease.acquire('payments/leader', '30 s', holder => 'b-holder')" >/dev/null
start_session b_waiter "SELECT lease.acquire('payments/leader', '30 s', wait => '20 s', holder => 'b-waiter')"
wait_for_waiters payments/leader 1

# in database a the same name is free
TESTDB=shell_queue_db_a
check "free_in_other_database_try_acquire_grants" \
	"SELECT lease.try_acquire('payments/leader', '30 s', holder => 'a-holder') IS NOT NULL"
check "waiters_of_other_database_not_counted" \
	"SELECT coalesce(waiters, 0) = 0 FROM lease.leases WHERE resource = 'payments/leader'"
q -c "SELECT lease.release('payments/leader', token) FROM lease.grants WHERE resource = 'payments/leader'" >/dev/null
start_ms="$(now_ms)"
got="$(q -c "SELECT lease.acquire('payments/leader', '30 s', wait => '2 s', holder => 'a-waiter') IS NOT NULL")"
took=$(($(now_ms) - start_ms))
expect "free_in_other_database_acquire_does_not_wait" "granted '$got' after $took ms (a waiter in another database must not delay it)" \
	'[ "$got" = t ] && [ "$took" -lt 1000 ]'

# the waiter in b is still counted there
if [ "$(cat "$PGLEASE_CLUSTER/mode")" = preload ]; then
	TESTDB=shell_queue_db_b
	check "waiter_counted_in_its_own_database" \
		"SELECT waiters = 1 FROM lease.leases WHERE resource = 'payments/leader'"
fi
finish
