#!/usr/bin/env bash
# pg_dump of a database using leases, restored into a new database: the
# leases are there and the next tokens are higher than the old ones.
source "$(dirname "$0")/lib.sh"
bindir="$(pg_config --bindir)"
fresh_db shell_dump_src

q -c "SELECT lease.acquire('d/' || i, '10 min') FROM generate_series(1, 20) i" >/dev/null
q -c "SELECT lease.release('d/1', token) FROM lease.grants WHERE resource = 'd/1'" >/dev/null
before="$(q -c "SELECT max(token) FROM lease.grants")"
held="$(q -c "SELECT token FROM lease.grants WHERE resource = 'd/2'")"

dump="$(mktemp)"
"$bindir/pg_dump" -Fc -d shell_dump_src -f "$dump"
psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS shell_dump_dst" -c "CREATE DATABASE shell_dump_dst"
"$bindir/pg_restore" --exit-on-error -d shell_dump_dst "$dump"
rm -f "$dump"

TESTDB=shell_dump_dst
check "restored_rows_kept" "SELECT count(*) = 20 FROM lease.grants"
check "restored_lease_current" "SELECT lease.is_current('d/2', $held)"
after="$(q -c "SELECT lease.acquire('d/1', '1 min')")"
expect "restored_next_token_higher" "token $after after restore, max before $before" '[ "$after" -gt "$before" ]'
after_new="$(q -c "SELECT lease.acquire('d/new', '1 min')")"
expect "restored_new_resource_token_higher" "token $after_new, max before $before" '[ "$after_new" -gt "$before" ]'
finish
