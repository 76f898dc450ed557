#!/usr/bin/env bash
# checker_selftest.sh -- the history checker must catch each kind of
# violation: feed it a history with one planted violation per property and
# expect each property to fail (a checker that cannot fail proves nothing).
source "$(dirname "$0")/lib.sh"
PORT="${FAULTS_PORT:-24401}"
start_cluster "$WORK/pg" "$PORT"
use_cluster "$WORK/pg" "$PORT"

# plant NAME PROPERTY SQL WORKER-LINES -- a fresh history, one violation
plant() {
	local name="$1" property="$2" sql="$3" lines="$4" out
	psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS selftest" -c "CREATE DATABASE selftest"
	psql -X -q -v ON_ERROR_STOP=1 -d selftest -f "$ROOT/tests/faults/schema.sql"
	psql -X -q -v ON_ERROR_STOP=1 -d selftest -c "ALTER TABLE lease.grants DISABLE TRIGGER fault_log" -c "$sql"
	printf '%b' "$lines" >"$WORK/planted.log"
	out="$("$ROOT/tests/faults/check_history.sh" selftest "$WORK/planted.log" || true)"
	# each planted history is a negative control: the one property must fail
	local shown=0
	grep -q "^not ok - $property" <<<"$out" && [ "$(grep -c "^not ok" <<<"$out")" -eq 1 ] && shown=1
	negative_control "checker_catches_$name" "property $property fails, and no other" '[ "$shown" = 1 ]'
	[ "$shown" = 1 ] || sed 's/^/#   checker said: /' <<<"$out"
}

H="INSERT INTO fault_history (op, resource, token, holder, granted_at, expires_at) VALUES"
plant reused_token token_never_given_to_two_grants "$H ('INSERT','a',1,'w1',now(),now()+'1s'), ('INSERT','b',1,'w2',now()+'2s',now()+'3s')" \
	"G a 1 w1 0 0\nG b 1 w2 0 0\n"
plant lost_grant every_acknowledged_grant_is_in_server_history "$H ('INSERT','a',1,'w1',now(),now()+'1s')" \
	"G a 1 w1 0 0\nG a 2 w2 0 0\n"
plant token_backwards tokens_strictly_increase_in_grant_order "$H ('INSERT','a',5,'w1',now(),now()+'1s'), ('UPDATE','a',3,'w2',now()+'2s',now()+'3s')" ""
plant overlap no_two_grants_overlap_in_server_time "$H ('INSERT','a',1,'w1',now(),now()+'10s'), ('UPDATE','a',2,'w2',now()+'2s',now()+'3s')" ""
plant lost_write every_acknowledged_fenced_write_is_in_the_ledger "SELECT" "A a 1 w1:1\n"
plant stale_write_after_newer no_lower_token_write_after_a_higher_one "$H ('INSERT','a',1,'w1',now(),now()+'1s'), ('UPDATE','a',2,'w2',now()+'2s',now()+'3s');
	INSERT INTO fault_ledger (resource, token, write_id) VALUES ('a',2,'w2:1'), ('a',1,'w1:1')" ""
plant write_without_grant every_ledger_write_belongs_to_a_grant "INSERT INTO fault_ledger (resource, token, write_id) VALUES ('a',7,'w1:1')" ""
finish
