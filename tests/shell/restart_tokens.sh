#!/usr/bin/env bash
# Tokens after a clean restart and after an immediate-mode stop (a crash:
# no checkpoint, recovery from WAL) are higher than every token issued
# before; a lease whose TTL outlives the restart is still current.
source "$(dirname "$0")/lib.sh"
fresh_db shell_restart

# more grants than the sequence logs ahead (32), some with synchronous_commit off
q -c "SELECT lease.acquire('r/' || i, '10 min') FROM generate_series(1, 40) i" >/dev/null
q -c "SET synchronous_commit = off; SELECT lease.acquire('r/async', '10 min')" >/dev/null
before="$(q -c "SELECT max(token) FROM lease.grants")"
held="$(q -c "SELECT token FROM lease.grants WHERE resource = 'r/1'")"

restart_cluster fast
after="$(q -c "SELECT lease.acquire('r/after-clean', '1 min')")"
expect "clean_restart_token_higher" "token $after after restart, max before $before" '[ "$after" -gt "$before" ]'
check "lease_survives_clean_restart" "SELECT lease.is_current('r/1', $held)"

q -c "SELECT lease.acquire('r/x' || i, '10 min') FROM generate_series(1, 40) i" >/dev/null
q -c "SET synchronous_commit = off; SELECT lease.acquire('r/async2', '10 min')" >/dev/null
before="$(q -c "SELECT max(token) FROM lease.grants")"

restart_cluster immediate
after="$(q -c "SELECT lease.acquire('r/after-crash', '1 min')")"
expect "crash_restart_token_higher" "token $after after crash, max before $before" '[ "$after" -gt "$before" ]'
check "async_session_grant_survives_crash" "SELECT count(*) = 1 FROM lease.leases WHERE resource = 'r/async2'"
check "lease_survives_crash" "SELECT lease.is_current('r/1', $held)"
finish
