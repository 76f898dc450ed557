#!/usr/bin/env bash
# ALTER EXTENSION pg_lease UPDATE from each earlier release (0.1.0, 0.2.0, 0.3.0):
# leases, tokens and privileges survive, grants made before have no value and
# become exclusive locks (0.4.0), shared leases work after it,
# elections work after it, and the updated schema is exactly a fresh install's.
source "$(dirname "$0")/lib.sh"
here="$(dirname "$0")"
mode="$(cat "$PGLEASE_CLUSTER/mode")"
current="$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$ROOT/pg_lease.control")"

psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "SET client_min_messages = warning" \
	-c "DROP ROLE IF EXISTS lease_upgrade_app" -c "CREATE ROLE lease_upgrade_app" \
	-c "DROP ROLE IF EXISTS lease_upgrade_admin" -c "CREATE ROLE lease_upgrade_admin"

# upgrade_from VERSION -- install VERSION, make leases, update, check
upgrade_from() {
	local from="$1" db="shell_upgrade_${1//./_}"
	psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "SET client_min_messages = warning" \
		-c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
	TESTDB=$db
	q -c "CREATE EXTENSION pg_lease VERSION '$from'"
	check "installed_release_$from" "SELECT extversion = '$from' FROM pg_extension WHERE extname = 'pg_lease'"

	# leases of two roles, one released, one granted then expired; a privilege granted
	q -c "GRANT EXECUTE ON FUNCTION lease.break(text) TO lease_upgrade_admin"
	app_token="$(q -c "SET ROLE lease_upgrade_app" -c "SELECT lease.acquire('up/app', '10 min', holder => 'app-1')")"
	own_token="$(q -c "SELECT lease.acquire('up/own', '10 min', holder => 'owner-1', session_bound => false)")"
	q -c "SELECT lease.release('up/released', lease.acquire('up/released', '10 min'))" >/dev/null
	before_rows="$(q -c "SELECT string_agg(format('%s %s %s %s %s %s', resource, token, holder, owner::regrole, expires_at, released), E'\n' ORDER BY resource) FROM lease.grants")"
	max_before="$(q -c "SELECT max(token) FROM lease.grants")"

	q -c "ALTER EXTENSION pg_lease UPDATE"
	check "updated_to_current_version" "SELECT extversion = '$current' FROM pg_extension WHERE extname = 'pg_lease'"

	after_rows="$(q -c "SELECT string_agg(format('%s %s %s %s %s %s', resource, token, holder, owner::regrole, expires_at, released), E'\n' ORDER BY resource) FROM lease.grants")"
	expect "grants_unchanged_by_update" "before:
$before_rows
	after:
$after_rows" '[ "$before_rows" = "$after_rows" ]'
	check "grants_without_value_after_update_from_$from" "SELECT count(*) = 0 FROM lease.grants WHERE value IS NOT NULL"
	check "grants_are_exclusive_locks_after_update_from_$from" "SELECT bool_and(mode = 'exclusive' AND permits = 0) FROM lease.grants"
	check "resource_rows_made_by_update_from_$from" "SELECT count(*) = (SELECT count(DISTINCT resource) FROM lease.grants) FROM lease.resources"
	check "held_lease_still_current" "SELECT lease.is_current('up/app', $app_token) AND lease.is_current('up/own', $own_token)"
	check "owner_role_kept" "SELECT owner::text = 'lease_upgrade_app' FROM lease.leases WHERE resource = 'up/app'"
	got="$(q -c "SET ROLE lease_upgrade_app" -c "SELECT lease.renew('up/app', $app_token, '10 min')")"
	expect "owner_renews_after_update" "renew returned '$got'" '[ "$got" = t ]'
	state="$(sqlstate_of "SET ROLE lease_upgrade_admin; SELECT lease.renew('up/app', $app_token, '10 min')")"
	expect "other_role_refused_after_update" "SQLSTATE '$state'" '[ "$state" = 42501 ]'
	check "granted_execute_kept" "SELECT has_function_privilege('lease_upgrade_admin', 'lease.break(text)', 'EXECUTE')"
	check "public_still_without_break" "SELECT NOT has_function_privilege('lease_upgrade_app', 'lease.break(text)', 'EXECUTE')"
	check "public_still_without_table_rights" "SELECT NOT has_table_privilege('lease_upgrade_app', 'lease.grants', 'SELECT')"
	next="$(q -c "SELECT lease.acquire('up/released', '1 min')")"
	expect "tokens_go_on_upward_after_update" "next token $next, max before $max_before" '[ "$next" -gt "$max_before" ]'
	if [ "$mode" = preload ]; then
		check "stats_after_update" "SELECT wakeups >= 0 AND grants >= 0 FROM lease.stats()"
	fi
	term="$(q -c "SELECT lease.acquire('up/election', '1 min', '0', 'c1', false, 'v1')")"
	check "campaign_after_update_from_$from" "SELECT term = $term AND value = 'v1' FROM lease.leader('up/election')"
	check "leases_show_value_after_update_from_$from" "SELECT value = 'v1' FROM lease.leases WHERE resource = 'up/election'"
	check "proclaim_after_update_from_$from" "SELECT lease.proclaim('up/election', $term, 'v2')"
	check "observe_after_update_from_$from" "SELECT value = 'v2' FROM lease.observe('up/election', $term, 'v1', '1 s')"

	# held exclusively since before the update: a reader waits, a reader of a free resource is granted
	check "reader_kept_out_by_lock_from_$from" "SELECT lease.acquire_shared('up/own', '1 min', holder => 'reader') IS NULL"
	check "reader_after_update_from_$from" "SELECT lease.acquire_shared('up/read', '1 min', holder => 'reader') > $max_before"

	# the updated schema equals a fresh install's
	TESTDB=$db
	updated="$(q -f "$here/sql/describe_extension.sql")"
	diff_out="$(diff <(echo "$fresh") <(echo "$updated") || true)"
	expect "updated_schema_from_${from}_equals_fresh_install" "diff (< fresh, > updated):
$diff_out" '[ -z "$diff_out" ] && [ -n "$fresh" ]'
	psql -X -q -d postgres -c "DROP DATABASE $db" >/dev/null
}

# the schema of a fresh install of the current version
fresh_db shell_upgrade_fresh
q -c "GRANT EXECUTE ON FUNCTION lease.break(text) TO lease_upgrade_admin"	# as granted below
fresh="$(q -f "$here/sql/describe_extension.sql")"

upgrade_from 0.1.0
upgrade_from 0.2.0
upgrade_from 0.3.0

psql -X -q -d postgres -c "DROP DATABASE shell_upgrade_fresh" \
	-c "DROP ROLE lease_upgrade_app" -c "DROP ROLE lease_upgrade_admin" >/dev/null
finish
