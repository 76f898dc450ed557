#!/usr/bin/env bash
# A dump restored into another cluster, whose roles have other OIDs: each
# lease still belongs to the role of the same name.  The real owner renews,
# releases and fences it; a role that happens to have the old OID there
# cannot.
source "$(dirname "$0")/lib.sh"
bindir="$(pg_config --bindir)"
mode="$(cat "$PGLEASE_CLUSTER/mode")"
port_a="${PGLEASE_TEST_PORT:-5432}" # socket names (scripts/cluster.sh), each in its cluster's directory
port_b=$((port_a + 1))
other="$PGLEASE_CLUSTER-restore"
dump="$(mktemp)"
stop_other() {
	PGLEASE_TEST_PORT="$port_b" "$ROOT/scripts/cluster.sh" stop "$other" immediate >/dev/null 2>&1 || true
	rm -rf "$other" "$dump"
}
on_exit stop_other

# cluster A: alice, then bob
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "SET client_min_messages = warning" \
	-c "DROP ROLE IF EXISTS lease_restore_alice" -c "DROP ROLE IF EXISTS lease_restore_bob" \
	-c "CREATE ROLE lease_restore_alice" -c "CREATE ROLE lease_restore_bob"
fresh_db shell_restore_src
token="$(q -c "SET ROLE lease_restore_alice" -c "SELECT lease.acquire('rs/alice', '10 min', holder => 'alice-1')")"
oid_alice_a="$(q -c "SELECT 'lease_restore_alice'::regrole::oid")"
"$bindir/pg_dump" -Fc -d shell_restore_src -f "$dump"
chmod 644 "$dump"

# cluster B: bob, then alice, after padding roles, so every OID differs
PGLEASE_TEST_PORT="$port_b" "$ROOT/scripts/cluster.sh" start "$other" "$mode"
eval "$(PGLEASE_TEST_PORT="$port_b" "$ROOT/scripts/cluster.sh" env "$other")"
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE ROLE lease_restore_pad1" -c "CREATE ROLE lease_restore_pad2" \
	-c "CREATE ROLE lease_restore_bob" -c "CREATE ROLE lease_restore_alice" -c "CREATE DATABASE shell_restore_dst"
"$bindir/pg_restore" --exit-on-error -d shell_restore_dst "$dump"
TESTDB=shell_restore_dst
oid_alice_b="$(q -c "SELECT 'lease_restore_alice'::regrole::oid")"
expect "role_oids_differ_between_clusters" "alice is $oid_alice_a in A and $oid_alice_b in B" \
	'[ "$oid_alice_a" != "$oid_alice_b" ]'

check "restored_owner_is_the_role_by_name" \
	"SELECT owner::text = 'lease_restore_alice' FROM lease.leases WHERE resource = 'rs/alice'"
who_has_old_oid="$(q -c "SELECT coalesce((SELECT rolname FROM pg_roles WHERE oid = $oid_alice_a), 'nobody')")"
state="$(sqlstate_of "SET ROLE lease_restore_bob; SELECT lease.renew('rs/alice', $token, '10 min')")"
expect "other_role_cannot_renew_restored_lease" "bob got SQLSTATE '$state' (the old OID $oid_alice_a is $who_has_old_oid here)" \
	'[ "$state" = 42501 ]'
got="$(q -c "SET ROLE lease_restore_alice" -c "SELECT lease.renew('rs/alice', $token, '10 min')" 2>&1)" || true
expect "real_owner_renews_restored_lease" "renew as alice returned '$got'" '[ "$got" = t ]'
got="$(q -c "SET ROLE lease_restore_alice" -c "BEGIN" -c "SELECT lease.fence('rs/alice', $token)" -c "COMMIT" 2>&1)" || true
expect "real_owner_fences_restored_lease" "fence as alice: '$got'" '[ "$got" = "$token" ]'
got="$(q -c "SET ROLE lease_restore_alice" -c "SELECT lease.acquire('rs/alice', '10 min', holder => 'alice-1')" 2>&1)" || true
expect "real_owner_reacquires_same_token" "re-acquire as alice returned '$got', token $token" '[ "$got" = "$token" ]'
got="$(q -c "SET ROLE lease_restore_alice" -c "SELECT lease.release('rs/alice', $token)" 2>&1)" || true
expect "real_owner_releases_restored_lease" "release as alice returned '$got'" '[ "$got" = t ]'

# back to cluster A for the cleanup
eval "$("$ROOT/scripts/cluster.sh" env "$PGLEASE_CLUSTER")"
psql -X -q -d postgres -c "DROP DATABASE shell_restore_src" \
	-c "DROP ROLE lease_restore_alice" -c "DROP ROLE lease_restore_bob" >/dev/null
finish
