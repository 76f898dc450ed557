#!/usr/bin/env bash
# privilege_audit.sh -- what an ordinary role can and cannot do to pg_lease.
#
# On its own throwaway preloaded cluster (port FAULTS_PORT, default 24411),
# two ordinary roles: audit_victim holds leases (one session-bound, its
# backend kept alive in the background), audit_mallory attacks them.  Each
# attempt is a named check printing the SQLSTATE it got:
#
# - writes, reads, locks, copies and DDL on lease.grants, lease.token_seq,
#   the view, the functions, the schema and the extension, by both roles;
# - privilege games: GRANT/REVOKE by a non-owner, SET ROLE, superuser-only
#   settings (lease.max_ttl among them), signals to the victim's backend;
# - the API across roles: renew/release/fence of the other role's lease is
#   42501, break and gc are not PUBLIC's, a holder label is no password;
# - search_path and pg_temp shadowing (privilege_audit.sql): with a lying
#   clock, nextval, '=', '<=', '+', count(*) and look-alike schemas first
#   in the path, acquire/renew/release/fence/is_current and the view still
#   behave (tokens rise, a stale token still fails fence, the victim's lease
#   still is not grantable);
# - the catalog: every function of the extension is C (no SQL body reads the
#   caller's search_path) and none is SECURITY DEFINER, PUBLIC has no right on the table or the
#   sequence, every object belongs to a superuser, the view has exactly the
#   documented columns and shows only current grants, even to a leaky
#   function.
#
# The victim's rows must be byte for byte (ctid, xmin, every column) as they
# were before the attacks.  FAULTS_QUICK=1 tries the per-function DDL on
# three functions instead of all.
source "$(dirname "$0")/lib.sh" # ROOT, QUICK, WORK, start_cluster, ok/not_ok
HERE="$ROOT/tests/faults"
PORT="${FAULTS_PORT:-24411}"
DB=privaudit
M=audit_mallory
V=audit_victim
attempts=0

victim_session=""
on_exit '[ -z "$victim_session" ] || kill "$victim_session" 2>/dev/null || true'

start_cluster "$WORK" "$PORT" preload
use_cluster "$WORK" "$PORT"
start_s=$SECONDS

# su SQL -- as the superuser, tuples only
su() { PSQL_TIMEOUT=30 psql_q -d "$DB" -c "$1"; }

# as ROLE [psql args] -- as an ordinary role; errors as bare SQLSTATEs
as() {
	local role="$1"
	shift
	PSQL_TIMEOUT=30 psql_q -v VERBOSITY=sqlstate -U "$role" -d "$DB" "$@" </dev/null 2>&1
}

state_of() { sed -n 's/^.*ERROR: *\([0-9A-Z]\{5\}\).*$/\1/p' <<<"$1" | head -1; }

# Attempts are queued and played in one session per role (flush), each in a
# subtransaction of pg_temp.try_all, in order; each is still its own check.
#   fails NAME STATES SQL   -- must fail with one of STATES
#   gives NAME WANT SQL     -- must succeed, its first column being WANT
Q_NAME=() Q_KIND=() Q_ARG=() Q_SQL=()
fails() { Q_NAME+=("$1"); Q_KIND+=(fail); Q_ARG+=("$2"); Q_SQL+=("$3"); }
gives() { Q_NAME+=("$1"); Q_KIND+=(give); Q_ARG+=("$2"); Q_SQL+=("$3"); }

TRY_ALL='CREATE FUNCTION pg_temp.try_all(kinds text[], qs text[]) RETURNS SETOF text
LANGUAGE plpgsql AS $try$
DECLARE
	r text;
BEGIN
	FOR i IN 1 .. pg_catalog.array_length(qs, 1) LOOP
		BEGIN
			IF kinds[i] OPERATOR(pg_catalog.=) $k$give$k$ THEN
				EXECUTE qs[i] INTO r;
			ELSE
				EXECUTE qs[i];
				r := $k$(no rows)$k$;
			END IF;
			RETURN NEXT pg_catalog.concat_ws(pg_catalog.chr(31), $k$ok$k$, coalesce(r, $k$NULL$k$));
		EXCEPTION WHEN OTHERS THEN
			RETURN NEXT pg_catalog.concat_ws(pg_catalog.chr(31), $k$err$k$, SQLSTATE, SQLERRM);
		END;
	END LOOP;
END $try$'

# dq TEXT -- TEXT as a dollar-quoted SQL literal
dq() { printf '$q7x$%s$q7x$' "$1"; }

# flush ROLE [PRELUDE] -- play the queued attempts as ROLE, judge and print each
flush() {
	local role="$1" prelude="${2:-}" kinds="" qs="" i out rc=0 line status st rest
	local -a lines=()
	for i in "${!Q_SQL[@]}"; do
		kinds+="${kinds:+, }'${Q_KIND[$i]}'"
		qs+="${qs:+, }$(dq "${Q_SQL[$i]}")"
	done
	{
		[ -n "$prelude" ] && printf '%s;\n' "$prelude"
		printf '%s;\n' "$TRY_ALL"
		printf 'SELECT pg_catalog.replace(t, pg_catalog.chr(10), $k$ $k$) FROM pg_temp.try_all(ARRAY[%s]::text[], ARRAY[%s]::text[]) t;\n' "$kinds" "$qs"
	} >"$WORK/flush.sql"
	# (notices and warnings go to stderr: one result line per attempt on stdout)
	out="$(timeout 120 psql -X -q -A -t -v ON_ERROR_STOP=1 -U "$role" -d "$DB" -f "$WORK/flush.sql" </dev/null 2>"$WORK/flush.err")" || rc=$?
	mapfile -t lines <<<"$out"
	if [ "$rc" -ne 0 ] || [ "${#lines[@]}" -ne "${#Q_SQL[@]}" ]; then
		not_ok "flush_as_$role" "psql exited $rc with ${#lines[@]} results for ${#Q_SQL[@]} attempts: $(head -c 500 "$WORK/flush.err") $(head -c 500 <<<"$out")"
	else
		for i in "${!Q_SQL[@]}"; do
			attempts=$((attempts + 1))
			IFS=$'\x1f' read -r status st rest <<<"${lines[$i]}"
			if [ "${Q_KIND[$i]}" = fail ]; then
				if [ "$status" = ok ]; then
					not_ok "${Q_NAME[$i]}" "succeeded as $role: ${Q_SQL[$i]}"
				elif [[ " ${Q_ARG[$i]} " == *" $st "* ]]; then
					ok "${Q_NAME[$i]} (SQLSTATE $st)"
				else
					not_ok "${Q_NAME[$i]}" "as $role failed with $st ($rest), expected ${Q_ARG[$i]}: ${Q_SQL[$i]}"
				fi
			elif [ "$status" = ok ] && [ "$st" = "${Q_ARG[$i]}" ]; then
				ok "${Q_NAME[$i]}"
			else
				not_ok "${Q_NAME[$i]}" "as $role: ${Q_SQL[$i]} gave '$status $st $rest', expected '${Q_ARG[$i]}'"
			fi
		done
	fi
	Q_NAME=() Q_KIND=() Q_ARG=() Q_SQL=()
}

# attempt NAME ROLE STATES SQL -- in a session of its own (statements that
# cannot run inside a function): must fail with one of STATES
attempt() {
	local name="$1" role="$2" states="$3" sql="$4" out rc=0 st
	attempts=$((attempts + 1))
	out="$(as "$role" -c "$sql")" || rc=$?
	st="$(state_of "$out")"
	if [ "$rc" -eq 0 ]; then
		not_ok "$name" "succeeded as $role: $sql -> $(head -c 300 <<<"$out")"
	elif [[ " $states " == *" $st "* ]]; then
		ok "$name (SQLSTATE $st)"
	else
		not_ok "$name" "as $role failed with '${st:-no SQLSTATE}', expected $states: $(head -c 300 <<<"$out")"
	fi
}

# attempt_no_effect NAME ROLE SQL CHECK -- whatever the SQL says (error or
# warning), the superuser's CHECK must return t afterwards
attempt_no_effect() {
	local name="$1" role="$2" sql="$3" check="$4" out seen got
	attempts=$((attempts + 1))
	out="$(as "$role" -c "$sql")" || true
	seen="$(state_of "$out")"
	[ -z "$seen" ] && seen="$(sed -n 's/^.*WARNING: *\([0-9A-Z]\{5\}\).*$/warning \1/p' <<<"$out" | head -1)"
	got="$(su "$check" 2>&1)" || true
	if [ "$got" = t ]; then
		ok "$name (${seen:-no error}, no effect)"
	else
		not_ok "$name" "as $role: $sql (${seen:-no error}) took effect: $check returned '$got'"
	fi
}

# su_check NAME SQL [WHY] -- the superuser's SQL must return t
su_check() {
	local got
	attempts=$((attempts + 1))
	got="$(su "$2" 2>&1)" || true
	if [ "$got" = t ]; then ok "$1"; else not_ok "$1" "${3:-$2} (got '$got')"; fi
}

# --- setup: the roles, the victim's leases, the attacker's schema -----------
timeout 30 psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE $DB"
su "CREATE EXTENSION pg_lease"
su "CREATE ROLE $V LOGIN; CREATE ROLE $M LOGIN;
    GRANT CREATE ON DATABASE $DB TO $M;
    CREATE SCHEMA mallory_tricks AUTHORIZATION $M"
as "$M" -v ON_ERROR_STOP=1 -f "$HERE/privilege_audit.sql" >/dev/null ||
	{ echo "privilege_audit.sql failed as $M" >&2; exit 1; }

TA="$(as "$V" -c "SELECT lease.acquire('victim/a', '10 min', holder => 'victim-holder')")"
TOLD="$(as "$V" -c "SELECT lease.acquire('victim/old', '10 min', holder => 'victim-holder')")"
as "$V" -c "SELECT lease.release('victim/old', $TOLD)" >/dev/null
TM="$(as "$M" -c "SELECT lease.acquire('mallory/own', '10 min', holder => 'mallory')")"
TMR="$(as "$M" -c "SELECT lease.acquire('mallory/released', '10 min', holder => 'mallory')")"
as "$M" -c "SELECT lease.release('mallory/released', $TMR)" >/dev/null

# the victim's session-bound lease, its backend alive until the end
timeout 300 psql -X -q -U "$V" -d "$DB" -c "SELECT lease.acquire('victim/sb', '10 min', holder => 'victim-sb', session_bound => true)" \
	-c "SELECT pg_sleep(280)" >/dev/null 2>&1 &
victim_session=$!
TSB=""
for _ in $(seq 1 500); do
	TSB="$(su "SELECT token FROM lease.leases WHERE resource = 'victim/sb'")"
	[ -n "$TSB" ] && break
	sleep 0.01
done
VPID=""
for _ in $(seq 1 500); do
	VPID="$(su "SELECT pid FROM pg_stat_activity WHERE usename = '$V' AND query LIKE '%pg_sleep%'")"
	[ -n "$VPID" ] && break
	sleep 0.01
done
[ -n "$TSB" ] && [ -n "$VPID" ] || { echo "the victim's session-bound lease was not granted" >&2; exit 1; }
echo "# victim tokens: victim/a $TA, victim/old $TOLD (released), victim/sb $TSB (backend $VPID); mallory/own $TM"

victim_rows() {
	su "COPY (SELECT ctid::text, xmin::text, g.* FROM lease.grants g
	          WHERE owner = '$V'::regrole ORDER BY resource) TO STDOUT"
}
victim_rows >"$WORK/victim.before"
seq_before="$(su "SELECT last_value FROM lease.token_seq")"

# --- the table, the sequence, the view: by both ordinary roles ---------------
for R in "$M" "$V"; do
	fails "${R}_insert_grants" 42501 "INSERT INTO lease.grants (resource, token, expires_at, granted_at, renewed_at, owner, holder) VALUES ('x', 1, now() + '1 day', now(), now(), 10, 'x')"
	fails "${R}_insert_on_conflict_grants" 42501 "INSERT INTO lease.grants (resource, token, expires_at, granted_at, renewed_at, owner, holder) VALUES ('victim/a', 1, now(), now(), now(), 10, 'x') ON CONFLICT DO NOTHING"
	fails "${R}_update_grants" 42501 "UPDATE lease.grants SET expires_at = now()"
	fails "${R}_update_grants_owner" 42501 "UPDATE lease.grants SET owner = '$M'::regrole WHERE resource = 'victim/a'"
	fails "${R}_delete_grants" 42501 "DELETE FROM lease.grants"
	fails "${R}_truncate_grants" 42501 "TRUNCATE lease.grants"
	fails "${R}_merge_grants" 42501 "MERGE INTO lease.grants g USING (SELECT 'victim/a' AS r) s ON g.resource = s.r WHEN MATCHED THEN UPDATE SET expires_at = now()"
	fails "${R}_select_grants" 42501 "SELECT * FROM lease.grants"
	fails "${R}_select_grants_column" 42501 "SELECT resource, token FROM lease.grants"
	fails "${R}_select_grants_count" 42501 "SELECT count(*) FROM lease.grants"
	fails "${R}_select_grants_for_share" 42501 "SELECT 1 FROM lease.grants FOR SHARE"
	attempt "${R}_lock_grants_exclusive" "$R" 42501 "BEGIN; LOCK TABLE lease.grants IN ACCESS EXCLUSIVE MODE; COMMIT"
	attempt "${R}_lock_grants_share" "$R" 42501 "BEGIN; LOCK TABLE lease.grants IN ACCESS SHARE MODE; COMMIT"
	attempt "${R}_copy_grants_out" "$R" 42501 "COPY lease.grants TO STDOUT"
	attempt "${R}_copy_grants_in" "$R" 42501 "COPY lease.grants (resource) FROM STDIN"
	fails "${R}_alter_grants_add_column" 42501 "ALTER TABLE lease.grants ADD COLUMN evil int"
	fails "${R}_alter_grants_drop_not_null" 42501 "ALTER TABLE lease.grants ALTER COLUMN token DROP NOT NULL"
	fails "${R}_drop_grants_index" 42501 "DROP INDEX lease.grants_resource"
	fails "${R}_alter_grants_owner" 42501 "ALTER TABLE lease.grants OWNER TO $R"
	fails "${R}_alter_grants_rename" 42501 "ALTER TABLE lease.grants RENAME TO grants_old"
	fails "${R}_alter_grants_unlogged" 42501 "ALTER TABLE lease.grants SET UNLOGGED"
	fails "${R}_alter_grants_storage" 42501 "ALTER TABLE lease.grants SET (fillfactor = 10)"
	fails "${R}_alter_grants_rls" 42501 "ALTER TABLE lease.grants ENABLE ROW LEVEL SECURITY"
	fails "${R}_alter_grants_disable_triggers" 42501 "ALTER TABLE lease.grants DISABLE TRIGGER ALL"
	fails "${R}_alter_grants_set_schema" 42501 "ALTER TABLE lease.grants SET SCHEMA public"
	fails "${R}_create_policy_grants" 42501 "CREATE POLICY p ON lease.grants USING (true)"
	fails "${R}_create_index_grants" 42501 "CREATE INDEX ON lease.grants (holder)"
	fails "${R}_create_trigger_grants" 42501 "CREATE TRIGGER t BEFORE UPDATE ON lease.grants FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger()"
	fails "${R}_cluster_grants" 42501 "CLUSTER lease.grants USING grants_resource"
	fails "${R}_reindex_grants" 42501 "REINDEX TABLE lease.grants"
	fails "${R}_comment_grants" 42501 "COMMENT ON TABLE lease.grants IS 'mine'"
	fails "${R}_drop_grants" 42501 "DROP TABLE lease.grants"
	attempt_no_effect "${R}_vacuum_full_grants" "$R" "VACUUM FULL lease.grants" \
		"SELECT relfilenode = $(su "SELECT relfilenode FROM pg_class WHERE oid = 'lease.grants'::regclass") FROM pg_class WHERE oid = 'lease.grants'::regclass"

	fails "${R}_insert_resources" 42501 "INSERT INTO lease.resources VALUES ('$R/x')"
	fails "${R}_delete_resources" 42501 "DELETE FROM lease.resources"
	fails "${R}_lock_resources_row" 42501 "SELECT 1 FROM lease.resources FOR UPDATE"

	fails "${R}_nextval_token_seq" 42501 "SELECT nextval('lease.token_seq')"
	fails "${R}_setval_token_seq" 42501 "SELECT setval('lease.token_seq', 1)"
	fails "${R}_setval3_token_seq" 42501 "SELECT setval('lease.token_seq', 1, false)"
	fails "${R}_currval_token_seq" 42501 "SELECT currval('lease.token_seq')"
	fails "${R}_lastval_after_acquire" 42501 "SELECT lease.acquire('$R/lastval', '1 s'); SELECT lastval()"
	fails "${R}_select_token_seq" 42501 "SELECT last_value FROM lease.token_seq"
	fails "${R}_last_value_fn_token_seq" 42501 "SELECT pg_sequence_last_value('lease.token_seq'::regclass)"
	fails "${R}_alter_token_seq_restart" 42501 "ALTER SEQUENCE lease.token_seq RESTART WITH 1"
	fails "${R}_alter_token_seq_increment" 42501 "ALTER SEQUENCE lease.token_seq INCREMENT BY -1 MINVALUE -100"
	fails "${R}_alter_token_seq_cycle" 42501 "ALTER SEQUENCE lease.token_seq MAXVALUE 200 CYCLE"
	fails "${R}_alter_token_seq_owner" 42501 "ALTER SEQUENCE lease.token_seq OWNER TO $R"
	fails "${R}_alter_token_seq_rename" 42501 "ALTER SEQUENCE lease.token_seq RENAME TO token_seq_old"
	fails "${R}_drop_token_seq" 42501 "DROP SEQUENCE lease.token_seq"

	fails "${R}_insert_view" 42501 "INSERT INTO lease.leases (resource, holder, token) VALUES ('x', 'x', 1)"
	fails "${R}_update_view" 42501 "UPDATE lease.leases SET holder = 'x'"
	fails "${R}_delete_view" 42501 "DELETE FROM lease.leases"
	fails "${R}_replace_view" 42501 "CREATE OR REPLACE VIEW lease.leases AS SELECT * FROM lease.leases"
	fails "${R}_alter_view_rename" 42501 "ALTER VIEW lease.leases RENAME TO leases_old"
	fails "${R}_alter_view_owner" 42501 "ALTER VIEW lease.leases OWNER TO $R"
	fails "${R}_alter_view_options" 42501 "ALTER VIEW lease.leases SET (security_barrier = true)"
	fails "${R}_alter_view_default" 42501 "ALTER VIEW lease.leases ALTER COLUMN holder SET DEFAULT 'x'"
	fails "${R}_create_rule_view" 42501 "CREATE RULE r AS ON UPDATE TO lease.leases DO INSTEAD NOTHING"
	fails "${R}_drop_view" 42501 "DROP VIEW lease.leases"
	fails "${R}_select_grants_through_own_view" 42501 \
		"CREATE TEMP VIEW peek AS SELECT * FROM lease.grants; SELECT * FROM peek"

	fails "${R}_create_table_in_lease" 42501 "CREATE TABLE lease.evil (a int)"
	fails "${R}_create_function_in_lease" 42501 "CREATE FUNCTION lease.evil() RETURNS int LANGUAGE sql AS 'SELECT 1'"
	fails "${R}_create_overload_in_lease" 42501 "CREATE FUNCTION lease.acquire(text, interval, text) RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint'"
	fails "${R}_create_view_in_lease" 42501 "CREATE VIEW lease.evil AS SELECT 1 AS a"
	fails "${R}_create_sequence_in_lease" 42501 "CREATE SEQUENCE lease.evil"
	fails "${R}_create_type_in_lease" 42501 "CREATE TYPE lease.evil AS (a int)"
	fails "${R}_create_operator_in_lease" 42501 "CREATE OPERATOR lease.= (LEFTARG = text, RIGHTARG = text, FUNCTION = texteq)"
	fails "${R}_alter_schema_rename" 42501 "ALTER SCHEMA lease RENAME TO lease_old"
	fails "${R}_alter_schema_owner" 42501 "ALTER SCHEMA lease OWNER TO $R"
	fails "${R}_drop_schema" 42501 "DROP SCHEMA lease CASCADE"

	fails "${R}_drop_extension" 42501 "DROP EXTENSION pg_lease CASCADE"
	fails "${R}_alter_extension_update" 42501 "ALTER EXTENSION pg_lease UPDATE TO '9.9'"
	fails "${R}_alter_extension_schema" 42501 "ALTER EXTENSION pg_lease SET SCHEMA public"
	fails "${R}_alter_extension_drop_member" 42501 "ALTER EXTENSION pg_lease DROP FUNCTION lease.waiters(text)"
	fails "${R}_comment_extension" 42501 "COMMENT ON EXTENSION pg_lease IS 'mine'"
	fails "${R}_break" 42501 "SELECT lease.break('victim/a')"
	fails "${R}_gc" 42501 "SELECT lease.gc('0')"
	fails "${R}_gc_default" 42501 "SELECT lease.gc()"
	fails "${R}_set_max_ttl" 42501 "SET lease.max_ttl = '100 days'"
	flush "$R"
done

# --- DDL on each function of the extension ----------------------------------
if [ "$QUICK" = 1 ]; then
	funcs="$(su "SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
	             JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid AND d.deptype = 'e'
	             WHERE e.extname = 'pg_lease' AND p.proname IN ('acquire', 'fence', 'session_alive') ORDER BY 1::text")"
else
	funcs="$(su "SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
	             JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid AND d.deptype = 'e'
	             WHERE e.extname = 'pg_lease' ORDER BY 1::text")"
fi
while IFS= read -r f; do
	[ -n "$f" ] || continue
	fname="$(sed 's/(.*//; s/^lease\.//; s/"//g' <<<"$f")"
	rettype="$(su "SELECT pg_get_function_result('$f'::regprocedure)")"
	fails "${M}_alter_${fname}_security_definer" 42501 "ALTER FUNCTION $f SECURITY DEFINER"
	fails "${M}_alter_${fname}_search_path" 42501 "ALTER FUNCTION $f SET search_path = mallory_tricks, pg_catalog"
	fails "${M}_alter_${fname}_reset_all" 42501 "ALTER FUNCTION $f RESET ALL"
	fails "${M}_alter_${fname}_owner" 42501 "ALTER FUNCTION $f OWNER TO $M"
	fails "${M}_alter_${fname}_rename" 42501 "ALTER FUNCTION $f RENAME TO ${fname}_old"
	fails "${M}_replace_${fname}" 42501 \
		"CREATE OR REPLACE FUNCTION $f RETURNS $rettype LANGUAGE sql AS 'SELECT NULL'"
	fails "${M}_drop_${fname}" 42501 "DROP FUNCTION $f"
	fails "${M}_comment_${fname}" 42501 "COMMENT ON FUNCTION $f IS 'mine'"
done <<<"$funcs"
flush "$M"

# --- privilege games ----------------------------------------------------------
fails "${M}_grant_self_select_grants" 42501 "GRANT SELECT ON lease.grants TO $M"
fails "${M}_grant_self_token_seq" 42501 "GRANT ALL ON SEQUENCE lease.token_seq TO $M"
fails "${M}_grant_self_break" 42501 "GRANT EXECUTE ON FUNCTION lease.break(text) TO $M"
attempt_no_effect "${M}_grant_self_create_on_lease" "$M" "GRANT CREATE ON SCHEMA lease TO $M" \
	"SELECT NOT has_schema_privilege('$M', 'lease', 'CREATE')"
attempt_no_effect "${M}_revoke_public_acquire" "$M" "REVOKE EXECUTE ON FUNCTION lease.acquire(text, interval, interval, text, boolean) FROM PUBLIC" \
	"SELECT has_function_privilege('$V', 'lease.acquire(text, interval, interval, text, boolean)', 'EXECUTE')"
attempt_no_effect "${M}_revoke_public_view" "$M" "REVOKE SELECT ON lease.leases FROM PUBLIC" \
	"SELECT has_table_privilege('$V', 'lease.leases', 'SELECT')"
attempt_no_effect "${M}_revoke_public_schema_usage" "$M" "REVOKE USAGE ON SCHEMA lease FROM PUBLIC" \
	"SELECT has_schema_privilege('$V', 'lease', 'USAGE')"
fails "${M}_grant_victim_role_to_self" 42501 "GRANT $V TO $M"
fails "${M}_set_role_victim" 42501 "SET ROLE $V"
fails "${M}_set_session_authorization" 42501 "SET SESSION AUTHORIZATION $V"
fails "${M}_become_superuser" 42501 "ALTER ROLE $M SUPERUSER"
fails "${M}_reassign_owned_by_superuser" 42501 "REASSIGN OWNED BY postgres TO $M"
fails "${M}_set_config_max_ttl" 42501 "SELECT set_config('lease.max_ttl', '8640000', false)"
fails "${M}_alter_role_max_ttl" 42501 "ALTER ROLE $M SET lease.max_ttl = '100 days'"
fails "${M}_alter_database_max_ttl" 42501 "ALTER DATABASE $DB SET lease.max_ttl = '100 days'"
attempt "${M}_alter_system_max_ttl" "$M" 42501 "ALTER SYSTEM SET lease.max_ttl = '100 days'"
fails "${M}_function_set_max_ttl" 42501 "CREATE FUNCTION mallory_tricks.long_lease() RETURNS bigint LANGUAGE sql SET lease.max_ttl = '100 days' AS 'SELECT 1::bigint'"
fails "${M}_ttl_over_max_still_refused" 22023 "SELECT lease.acquire('mallory/long', '2 days')"
fails "${M}_session_replication_role" 42501 "SET session_replication_role = replica"
fails "${M}_create_event_trigger" 42501 \
	"CREATE FUNCTION mallory_tricks.evt() RETURNS event_trigger LANGUAGE plpgsql AS 'BEGIN END'; CREATE EVENT TRIGGER evt ON ddl_command_start EXECUTE FUNCTION mallory_tricks.evt()"
fails "${M}_load_library" 42501 "LOAD 'pg_lease'"
fails "${M}_move_own_table_into_lease" 42501 "CREATE TABLE mallory_tricks.moved (a int); ALTER TABLE mallory_tricks.moved SET SCHEMA lease"
fails "${M}_move_own_function_into_lease" 42501 "ALTER FUNCTION mallory_tricks.waiters(text) SET SCHEMA lease"
fails "${M}_add_own_function_to_extension" 42501 "ALTER EXTENSION pg_lease ADD FUNCTION mallory_tricks.waiters(text)"
fails "${M}_create_pg_prefixed_schema" 42939 "CREATE SCHEMA pg_lease_evil"
fails "${M}_terminate_victim_backend" 42501 "SELECT pg_terminate_backend($VPID)"
fails "${M}_cancel_victim_backend" 42501 "SELECT pg_cancel_backend($VPID)"
flush "$M"

# --- the API across roles -------------------------------------------------------
fails "${M}_renew_victims_lease" 42501 "SELECT lease.renew('victim/a', $TA, '1 min')"
fails "${M}_release_victims_lease" 42501 "SELECT lease.release('victim/a', $TA)"
fails "${M}_fence_victims_lease" 42501 "SELECT lease.fence('victim/a', $TA)"
attempt "${M}_fence_victims_lease_in_transaction" "$M" 42501 "BEGIN; SELECT lease.fence('victim/a', $TA); COMMIT"
fails "${M}_renew_victims_session_bound_lease" 42501 "SELECT lease.renew('victim/sb', $TSB, '10 min')"
fails "${M}_release_victims_session_bound_lease" 42501 "SELECT lease.release('victim/sb', $TSB)"
fails "${M}_fence_victims_session_bound_lease" 42501 "SELECT lease.fence('victim/sb', $TSB)"
fails "${M}_renew_victims_released_grant" 42501 "SELECT lease.renew('victim/old', $TOLD, '1 min')"
fails "${M}_break_victims_session_bound_lease" 42501 "SELECT lease.break('victim/sb')"
gives "${M}_renew_victims_resource_wrong_token_false" false "SELECT lease.renew('victim/a', $TA + 1000000, '1 min')"
gives "${M}_acquire_victims_lease_null" true "SELECT lease.acquire('victim/a', '1 min') IS NULL"
gives "${M}_acquire_with_victims_holder_label_null" true "SELECT lease.acquire('victim/a', '1 min', holder => 'victim-holder') IS NULL"
gives "${M}_try_acquire_victims_session_bound_null" true "SELECT lease.try_acquire('victim/sb', '1 min', holder => 'victim-sb', session_bound => true) IS NULL"
gives "${M}_is_current_victims_lease" true "SELECT lease.is_current('victim/a', $TA)"
flush "$M"
fails "${V}_renew_mallorys_lease" 42501 "SELECT lease.renew('mallory/own', $TM, '1 min')"
fails "${V}_release_mallorys_lease" 42501 "SELECT lease.release('mallory/own', $TM)"
fails "${V}_fence_mallorys_lease" 42501 "SELECT lease.fence('mallory/own', $TM)"
flush "$V"

# --- search_path and pg_temp shadowing ----------------------------------------
# the session-local half of the shadows; the persistent half is privilege_audit.sql
PRELUDE="SET search_path = pg_temp, mallory_tricks, \"PG_CATALOG\", pg_catalog, public;
CREATE FUNCTION pg_temp.clock_timestamp() RETURNS timestamptz LANGUAGE sql AS \$\$ SELECT '2999-01-01 00:00:00+00'::timestamptz \$\$;
CREATE FUNCTION pg_temp.nextval(regclass) RETURNS bigint LANGUAGE sql AS \$\$ SELECT 1::bigint \$\$;
CREATE FUNCTION pg_temp.session_alive(integer, timestamptz) RETURNS boolean LANGUAGE sql AS \$\$ SELECT false \$\$;
CREATE FUNCTION pg_temp.always(text, text) RETURNS boolean LANGUAGE sql AS \$\$ SELECT true \$\$;
CREATE OPERATOR pg_temp.= (LEFTARG = text, RIGHTARG = text, FUNCTION = pg_temp.always);
CREATE TEMP TABLE grants (resource text, token bigint, expires_at timestamptz, owner oid, holder text, released boolean);
INSERT INTO grants VALUES ('victim/a', 1, 'infinity', 0, 'mallory', false);
CREATE TEMP SEQUENCE token_seq;
CREATE TEMP VIEW leases AS SELECT * FROM grants"
J="pg_catalog.concat_ws('|'"	# results of several columns, joined (concat_ws itself is not shadowed)

# the shadows work on the attacker's own SQL, so the checks below are not vacuous
gives "shadows_in_effect" "2999|t|t|42|1" \
	"SELECT $J, extract(year FROM clock_timestamp()), 'a'::text = 'b'::text, 5::bigint = 6::bigint,
	        (SELECT count(*) FROM pg_class WHERE false), nextval('lease.token_seq'::regclass))"
gives "shadowed_acquire_victims_lease_null" true "SELECT lease.acquire('victim/a', '1 min', holder => 'victim-holder') IS NULL"
gives "shadowed_try_acquire_victims_lease_null" true "SELECT lease.try_acquire('victim/a', '1 min') IS NULL"
gives "shadowed_acquire_victims_session_bound_null" true "SELECT lease.acquire('victim/sb', '1 min', holder => 'victim-sb') IS NULL"
fails "shadowed_renew_victims_lease" 42501 "SELECT lease.renew('victim/a', $TA, '1 min')"
fails "shadowed_release_victims_lease" 42501 "SELECT lease.release('victim/a', $TA)"
fails "shadowed_fence_victims_lease" 42501 "SELECT lease.fence('victim/a', $TA)"
gives "shadowed_renew_victims_resource_wrong_token_false" false "SELECT lease.renew('victim/a', $TA + 1000000, '1 min')"
gives "shadowed_renew_own" true "SELECT lease.renew('mallory/own', $TM, '5 min')"
gives "shadowed_renew_wrong_token_false" false "SELECT lease.renew('mallory/own', $TM + 1000000, '5 min')"
gives "shadowed_renew_released_false" false "SELECT lease.renew('mallory/released', $TMR, '5 min')"
fails "shadowed_fence_stale_token" LS001 "SELECT lease.fence('mallory/released', $TMR)"
fails "shadowed_fence_wrong_token" LS001 "SELECT lease.fence('mallory/own', $TM + 1000000)"
gives "shadowed_fence_current_token" "$TM" "SELECT lease.fence('mallory/own', $TM)"
gives "shadowed_is_current_victims_lease" true "SELECT lease.is_current('victim/a', $TA)"
gives "shadowed_is_current_victims_session_bound" true "SELECT lease.is_current('victim/sb', $TSB)"
gives "shadowed_is_current_stale_false" false "SELECT lease.is_current('victim/old', $TOLD)"
gives "shadowed_is_current_wrong_token_false" false "SELECT lease.is_current('victim/a', $TA + 1)"
fails "shadowed_break" 42501 "SELECT lease.break('victim/a')"
fails "shadowed_gc" 42501 "SELECT lease.gc('0')"
gives "shadowed_view_victims_lease" "1|$TA|$V|victim-holder|0|t|f" \
	"SELECT $J, pg_catalog.count(*), pg_catalog.max(token), pg_catalog.max(owner::text), pg_catalog.max(holder),
	        pg_catalog.max(waiters),
	        pg_catalog.bool_and(remaining OPERATOR(pg_catalog.<) '10 min'::interval AND remaining OPERATOR(pg_catalog.>) '0'::interval),
	        pg_catalog.bool_or(session_bound))
	   FROM lease.leases WHERE resource OPERATOR(pg_catalog.=) 'victim/a'"
gives "shadowed_view_session_bound" "1|t" \
	"SELECT $J, pg_catalog.count(*), pg_catalog.bool_and(session_bound)) FROM lease.leases WHERE resource OPERATOR(pg_catalog.=) 'victim/sb'"
gives "shadowed_view_hides_released" 0 \
	"SELECT pg_catalog.count(*) FROM lease.leases WHERE resource OPERATOR(pg_catalog.=) ANY (ARRAY['victim/old', 'mallory/released'])"
gives "shadowed_acquire_new" true "SELECT lease.acquire('mallory/shadowed', '5 min', holder => 'mallory') IS NOT NULL"
flush "$M" "$PRELUDE"
su_check "shadowed_renew_expiry_is_server_time_plus_ttl" \
	"SELECT expires_at BETWEEN clock_timestamp() + '4 min 50 s' AND clock_timestamp() + '5 min' FROM lease.grants WHERE resource = 'mallory/own'"
T1="$(su "SELECT token FROM lease.grants WHERE resource = 'mallory/shadowed'")"
su_check "shadowed_acquire_drew_the_next_token ($T1 > $seq_before)" \
	"SELECT $T1 > $seq_before AND $T1 = last_value FROM lease.token_seq"
su_check "shadowed_acquire_expiry_is_server_time_plus_ttl" \
	"SELECT expires_at BETWEEN clock_timestamp() + '4 min 50 s' AND clock_timestamp() + '5 min' AND owner = '$M'::regrole
	   FROM lease.grants WHERE resource = 'mallory/shadowed'"

gives "shadowed_reacquire_same_token" "$T1" "SELECT lease.acquire('mallory/shadowed', '5 min', holder => 'mallory')"
gives "shadowed_release_own" "t|f" \
	"SELECT $J, lease.release('mallory/shadowed', $T1), lease.is_current('mallory/shadowed', $T1))"
gives "shadowed_view_hides_released_own" 0 \
	"SELECT pg_catalog.count(*) FROM lease.leases WHERE resource OPERATOR(pg_catalog.=) 'mallory/shadowed'"
gives "shadowed_next_grant" true "SELECT lease.acquire('mallory/shadowed', '5 min', holder => 'mallory') IS NOT NULL"
fails "shadowed_fence_previous_grant" LS001 "SELECT lease.fence('mallory/shadowed', $T1)"
flush "$M" "$PRELUDE"
su_check "shadowed_next_grant_higher_token" \
	"SELECT token > $T1 AND token = (SELECT last_value FROM lease.token_seq) FROM lease.grants WHERE resource = 'mallory/shadowed'"

# --- the catalog ----------------------------------------------------------------
EXTFUNCS="SELECT p.* FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
           JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid AND d.deptype = 'e'
          WHERE e.extname = 'pg_lease'"
nfuncs="$(su "SELECT count(*) FROM ($EXTFUNCS) f")"
# No SET clauses (they cost every call): the functions are C, and the statements they run
# are schema-qualified and run with the search path pinned to pg_catalog by the
# extension itself; the shadowing attempts above are what proves it.
su_check "every_function_is_c ($nfuncs functions)" \
	"SELECT count(*) > 0 AND bool_and(l.lanname = 'c') FROM ($EXTFUNCS) f JOIN pg_language l ON l.oid = f.prolang" \
	"not C: $(su "SELECT coalesce(string_agg(f.oid::regprocedure::text, ', '), '') FROM ($EXTFUNCS) f JOIN pg_language l ON l.oid = f.prolang WHERE l.lanname <> 'c'")"
su_check "no_security_definer_function" \
	"SELECT NOT EXISTS (SELECT 1 FROM ($EXTFUNCS) f WHERE prosecdef)"
for priv in SELECT INSERT UPDATE DELETE TRUNCATE REFERENCES TRIGGER; do
	su_check "public_has_no_${priv,,}_on_grants" "SELECT NOT has_table_privilege('public', 'lease.grants', '$priv')"
done
su_check "public_has_no_column_privilege_on_grants" "SELECT NOT has_any_column_privilege('public', 'lease.grants', 'SELECT, INSERT, UPDATE, REFERENCES')"
for priv in USAGE SELECT UPDATE; do
	su_check "public_has_no_${priv,,}_on_token_seq" "SELECT NOT has_sequence_privilege('public', 'lease.token_seq', '$priv')"
done
su_check "no_acl_entry_for_public_on_grants_or_token_seq" \
	"SELECT NOT EXISTS (SELECT 1 FROM pg_class c, aclexplode(c.relacl) a WHERE c.oid IN ('lease.grants'::regclass, 'lease.token_seq'::regclass) AND a.grantee = 0)"
for R in "$M" "$V"; do
	su_check "${R}_has_no_right_on_grants_or_token_seq" \
		"SELECT NOT has_table_privilege('$R', 'lease.grants', 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
		    AND NOT has_sequence_privilege('$R', 'lease.token_seq', 'USAGE, SELECT, UPDATE')"
done
su_check "public_cannot_create_in_lease" "SELECT NOT has_schema_privilege('public', 'lease', 'CREATE')"
su_check "public_cannot_break_or_gc" \
	"SELECT NOT has_function_privilege('public', 'lease.break(text)', 'EXECUTE') AND NOT has_function_privilege('public', 'lease.gc(interval)', 'EXECUTE')"
su_check "public_can_call_the_api" \
	"SELECT bool_and(has_function_privilege('public', f, 'EXECUTE')) FROM unnest(ARRAY[
	   'lease.acquire(text, interval, interval, text, boolean)', 'lease.try_acquire(text, interval, text, boolean)',
	   'lease.renew(text, bigint, interval)', 'lease.release(text, bigint)', 'lease.fence(text, bigint)',
	   'lease.is_current(text, bigint)', 'lease.stats()']) f"
su_check "public_reads_view_only" \
	"SELECT has_table_privilege('public', 'lease.leases', 'SELECT') AND NOT has_table_privilege('public', 'lease.leases', 'INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')"
su_check "extension_objects_owned_by_superuser" \
	"SELECT bool_and(r.rolsuper) FROM (
	   SELECT relowner AS o FROM pg_class WHERE relnamespace = 'lease'::regnamespace
	   UNION ALL SELECT proowner FROM pg_proc WHERE pronamespace = 'lease'::regnamespace
	   UNION ALL SELECT nspowner FROM pg_namespace WHERE nspname = 'lease'
	   UNION ALL SELECT typowner FROM pg_type WHERE typnamespace = 'lease'::regnamespace) x JOIN pg_roles r ON r.oid = x.o"
echo "# functions PUBLIC may execute: $(su "SELECT string_agg(oid::regprocedure::text, ', ' ORDER BY proname) FROM ($EXTFUNCS) f WHERE has_function_privilege('public', oid, 'EXECUTE')")"

# the view as the attacker sees it: the documented columns, current grants only
attempts=$((attempts + 1))
header="$(timeout 30 psql -X -q -A -U "$M" -d "$DB" -c "SELECT * FROM lease.leases ORDER BY resource" | head -1)"
want="resource|holder|token|owner|granted_at|renewed_at|expires_at|remaining|session_bound|waiters|value|mode|permits"
if [ "$header" = "$want" ]; then ok "view_has_the_documented_columns"; else not_ok "view_has_the_documented_columns" "'$header', expected '$want'"; fi
gives "view_lists_current_grants_only" "mallory/own|mallory/shadowed|victim/a|victim/sb" \
	"SELECT string_agg(resource, '|' ORDER BY resource) FROM lease.leases"
flush "$M"
# a cheap function in the WHERE clause runs before the view's own filter
# unless the view is a security barrier: it must not see non-current rows
attempts=$((attempts + 1))
leak="$(timeout 30 psql -X -q -A -t -U "$M" -d "$DB" -c "CREATE FUNCTION pg_temp.leak(r text, h text, t bigint) RETURNS boolean LANGUAGE plpgsql COST 0.0000001 AS
	\$\$ BEGIN RAISE NOTICE 'leaked: % % %', r, h, t; RETURN true; END \$\$" \
	-c "SELECT count(*) FROM lease.leases WHERE pg_temp.leak(resource, holder, token)" 2>&1 | grep -E 'victim/old|mallory/released' || true)"
if [ -z "$leak" ]; then
	ok "view_hides_non_current_grants_from_leaky_functions"
else
	not_ok "view_hides_non_current_grants_from_leaky_functions" \
		"lease.leases is not a security_barrier view: a cheap function in WHERE saw released grants: $(tr '\n' ' ' <<<"$leak")"
fi

# --- nothing of the victim's changed ----------------------------------------------
victim_rows >"$WORK/victim.after"
attempts=$((attempts + 1))
if cmp -s "$WORK/victim.before" "$WORK/victim.after" && [ "$(wc -l <"$WORK/victim.before")" -eq 3 ]; then
	ok "victims_rows_unchanged (3 rows, byte for byte)"
else
	not_ok "victims_rows_unchanged" "$(diff "$WORK/victim.before" "$WORK/victim.after" | tr '\n' ' ')"
fi
su_check "victims_session_bound_lease_still_current" "SELECT lease.is_current('victim/sb', $TSB)"
log_bad="$(grep -nE 'TRAP:|PANIC|terminated by signal|server process|Assert|assertion|segmentation|core dumped|leak|SPI stack|out of memory' "$WORK/server.log" | head -10 || true)"
attempts=$((attempts + 1))
if [ -z "$log_bad" ]; then ok "server_log_clean"; else not_ok "server_log_clean" "$log_bad"; fi

echo "# $attempts checks, $failures failed, $((SECONDS - start_s))s"
exit $((failures > 0))
