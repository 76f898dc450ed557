#!/usr/bin/env bash
# run.sh [--quick] -- pg_lease through automatic failovers of pg_auto_failover.
#
# A monitor, a primary and a synchronous secondary (tests/ha/formation.sh);
# fault workers (tests/faults/fault_worker.cpp) loop acquire -> fenced write
# -> release through a multi-host conninfo; the primary node is lost (its
# keeper and Postgres killed together with SIGKILL), the monitor promotes
# the secondary, the lost node is started again and rejoins as secondary,
# and the next failover goes the other way.  Then the fault suite's history
# checker, and what it cost: time from each kill to the first grant on the
# new primary, grants lost, leases lost by their holders.  A `pglease run`
# holds a lease through the first failover and must see it renewed on the new
# primary.
#
#   --quick (or HA_QUICK=1)  2 failovers, 4 workers (make test); else 4 and 8
#   HA_TIMEOUTS=default      keep pg_auto_failover's own timeouts (slow)
#   (the monitor and both nodes on loopback ports free when they start:
#   ha_formation_up, tests/ha/formation.sh)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
QUICK="${HA_QUICK:-0}"
[ "${1:-}" = --quick ] && QUICK=1
if [ "$QUICK" = 1 ]; then FAILOVERS=2 WORKERS=4 AFTER_GRANTS=30; else FAILOVERS=4 WORKERS=8 AFTER_GRANTS=200; fi
HA_TIMEOUTS="${HA_TIMEOUTS:-fast}"
HA_DB=faults
HA_DIR="$(mktemp -d /tmp/pg_lease_ha.XXXXXX)"
WORKER="$ROOT/build/client/pglease_fault_worker"
CLI="$ROOT/build/client/pglease"
ELECTION_WORKER="$ROOT/build/client/election_worker"
source "$ROOT/tests/ha/formation.sh"
for b in "$WORKER" "$CLI" "$ELECTION_WORKER"; do
	[ -x "$b" ] || { echo "not ok - $b missing: build it with 'make client'"; exit 1; }
done
declare -a WORKER_PIDS=() CANDIDATE_PIDS=()
HELD_PID=""

stop_all() {
	local p
	# pglease run passes SIGTERM on to its command
	[ -z "$HELD_PID" ] || { kill -TERM "$HELD_PID" 2>/dev/null && timeout 10 tail --pid="$HELD_PID" -f /dev/null; } || true
	for p in "${WORKER_PIDS[@]}" "${CANDIDATE_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	ha_cleanup
}
on_exit stop_all

grants() { cat "$HA_DIR"/w*.log | awk '$1 == "G"'; }
echo "# pg_auto_failover $(pg_autoctl --version | sed -n 's/^pg_autoctl version //p'), timeouts: $HA_TIMEOUTS"
started=$(date +%s)
formed=0
ha_formation_up "$ROOT/tests/faults/schema.sql" || formed=$?
DSN="$(ha_conninfo "$HA_DB")"
echo "# monitor, node1, node2 on ports $HA_PORTS"
expect formation_has_primary_and_synchronous_secondary "monitor, node1, node2 did not come up (logs in $HA_DIR)" \
	'[ "$formed" -eq 0 ] && [ "$(psql -X -A -t -d "$DSN" -c "SHOW synchronous_standby_names")" != "" ]'
[ "$formed" -eq 0 ] || finish
echo "# formation up in $(($(date +%s) - started)) s; synchronous_standby_names = '$(psql -X -A -t -d "$DSN" -c "SHOW synchronous_standby_names")'"
preloaded() { psql -X -A -t -h 127.0.0.1 -p "$(ha_port "$1")" -U postgres -d "$HA_DB" -c "SHOW shared_preload_libraries" | grep -q pg_lease; }
expect pg_lease_preloaded_on_both_nodes "shared_preload_libraries lacks pg_lease" 'preloaded node1 && preloaded node2'

export FAULT_DSN_FILE="$HA_DIR/dsn"
echo "$DSN" >"$FAULT_DSN_FILE"
for n in $(seq 1 "$WORKERS"); do
	"$WORKER" "w$n" 16 3600 "$HA_DIR/w$n.log" 2>"$HA_DIR/w$n.err" &
	WORKER_PIDS+=($!)
done

# three election candidates (tests/client/election_worker.cpp) campaign,
# lead and resign through every failover, following the election meanwhile
for n in 1 2 3; do
	"$ELECTION_WORKER" history "$DSN" ha/election "c$n" 3600 3000 "$HA_DIR/c$n.elect" 2>"$HA_DIR/c$n.err" &
	CANDIDATE_PIDS+=($!)
done

# a lease held through the first failover by the CLI: its command waits for
# the failover, then for a renewal on the new primary, then writes fenced
held_script='
	while [ ! -s "$HA_DIR/failed_over" ]; do [ -d "$HA_DIR" ] || exit 1; sleep 0.2; done
	k="$(cat "$HA_DIR/failed_over")"
	for i in $(seq 1 600); do
		r="$(psql -X -A -t -d "$DSN" -c "SELECT extract(epoch FROM renewed_at) * 1000000 > $k
			FROM lease.leases WHERE resource = '\''ha/held'\'' AND token = $PGLEASE_TOKEN" 2>/dev/null || true)"
		[ "$r" = t ] && break
		sleep 0.2
	done
	[ "$r" = t ] || { echo "not renewed on the new primary" >&2; exit 3; }
	psql -X -q -v ON_ERROR_STOP=1 -d "$DSN" -c "BEGIN" -c "SELECT lease.fence('\''ha/held'\'', $PGLEASE_TOKEN)" -c "COMMIT" >/dev/null
'
# (TTL above the window: 30 s for the test timeouts, 120 s for the defaults)
held_ttl=30s
[ "$HA_TIMEOUTS" = default ] && held_ttl=120s
export HA_DIR DSN # for held_script
"$CLI" run --dsn "$DSN" --resource ha/held --ttl "$held_ttl" --wait 10s -- \
	bash -c "$held_script" >"$HA_DIR/held.out" 2>&1 &
HELD_PID=$!

# first_grant_after US -- when the first grant asked for after US was
# received (µs), waiting up to 180 s; empty if none
first_grant_after() {
	local i first=""
	for i in $(seq 1 1800); do
		first="$(grants | awk -v k="$1" '$5 > k { if (m == "" || $6 < m) m = $6 } END { print m }')"
		[ -n "$first" ] && break
		sleep 0.1
	done
	echo "$first"
}

declare -a WINDOWS_MS=()
sleep 3

for f in $(seq 1 "$FAILOVERS"); do
	primary="$(ha_primary)"
	other="$([ "$primary" = node1 ] && echo node2 || echo node1)"
	ha_node_kill "$primary" || { expect "failover_${f}_lose_$primary" "could not kill it" false; break; }
	killed_at="$HA_KILLED_AT"
	first="$(first_grant_after "$killed_at")"
	if [ -z "$first" ]; then
		expect "failover_${f}_grants_resume_on_$other" "no grant within 180 s of losing $primary" false
		break
	fi
	WINDOWS_MS+=($(((first - killed_at) / 1000)))
	[ "$f" = 1 ] && echo "$killed_at" >"$HA_DIR/failed_over"
	echo "# failover $f: $primary lost (keeper and Postgres SIGKILLed), first grant on $other after ${WINDOWS_MS[-1]} ms"
	for i in $(seq 1 300); do [ "$(ha_primary)" = "$other" ] && break; sleep 0.1; done
	expect "failover_${f}_monitor_promoted_$other" "the monitor holds '$(ha_primary)' as primary" '[ "$(ha_primary)" = "$other" ]'
	for i in $(seq 1 600); do
		[ "$(grants | awk -v k="$killed_at" '$5 > k' | wc -l)" -ge "$AFTER_GRANTS" ] && break
		sleep 0.1
	done
	# tokens told after the failure are above every token told before it (a
	# re-acquire of a grant whose release was lost rightly returns its old token)
	tokens="$(grants | awk -v k="$killed_at" '
		$6 < k { before[$3] = 1; if ($3 > hi) hi = $3 }
		$5 > k { after[$3] = 1 }
		END { for (t in after) if (!(t in before) && (lo == "" || t + 0 < lo)) lo = t + 0; print hi + 0, lo + 0 }')"
	expect "failover_${f}_new_tokens_above_all_told_before" "highest before, lowest new after: $tokens" \
		'[ "${tokens#* }" -gt "${tokens% *}" ]'

	rejoin_started=$(date +%s)
	ha_node_start "$primary"
	expect "failover_${f}_${primary}_rejoins_as_secondary" "see $HA_DIR/$primary.log" \
		'ha_wait_state "$primary" secondary 120 && ha_wait_state "$other" primary 60'
	echo "# failover $f: $primary back as synchronous secondary after $(($(date +%s) - rejoin_started)) s"
	sleep 2
done

kill -TERM "${WORKER_PIDS[@]}" 2>/dev/null || true
status=0
wait_workers 60 "${WORKER_PIDS[@]}" || status=$?
WORKER_PIDS=()
kill -TERM "${CANDIDATE_PIDS[@]}" 2>/dev/null || true
wait_workers 60 "${CANDIDATE_PIDS[@]}" || true
CANDIDATE_PIDS=()
elected=0
# a campaign's bound through a failover: its 2 s wait, the statement grace
# (2 s) and a connect timeout (5 s) to each of the two hosts
CAMPAIGN_BOUND_MS=15000 "$ROOT/tests/providers/election_check.sh" ha_election "$HA_DIR"/c*.elect >"$HA_DIR/elect.check" || elected=$?
sed 's/^/#   /' "$HA_DIR/elect.check"
expect election_through_automatic_failovers_no_overlap_no_term_reused "see above" '[ "$elected" -eq 0 ]'
expect workers_survive_every_failover "a worker exited with $status" '[ "$status" -eq 0 ]'
held=0
wait_workers 120 "$HELD_PID" || held=$?
HELD_PID=""
expect cli_lease_held_through_failover_renewed_on_new_primary "pglease run exited $held: $(tr '\n' ' ' <"$HA_DIR/held.out")" \
	'[ "$held" -eq 0 ]'

checked=0
"$ROOT/tests/faults/check_history.sh" "$DSN" "$HA_DIR"/w*.log >"$HA_DIR/check" || checked=$?
sed 's/^/#   /' "$HA_DIR/check"
expect history_checker_passes_through_automatic_failovers "see above" '[ "$checked" -eq 0 ]'

lost_grants="$(psql -X -A -t -d "$DSN" -c "SELECT count(*) FROM client_grants c WHERE NOT EXISTS
	(SELECT 1 FROM fault_history h WHERE h.resource = c.resource AND h.token = c.token AND h.holder = c.holder)")"
expect no_acknowledged_grant_lost "$lost_grants grants told to workers are not on the final primary" '[ "$lost_grants" -eq 0 ]'
fence_lost="$(cat "$HA_DIR"/w*.log | awk '$1 == "R" && $4 == "LS001"' | wc -l)"
fence_unavailable="$(cat "$HA_DIR"/w*.log | awk '$1 == "R" && $4 != "LS001"' | wc -l)"
unavailable="$(cat "$HA_DIR"/w*.log | awk '$1 == "U" && $3 == "unavailable"' | wc -l)"
internal="$(cat "$HA_DIR"/w*.log | awk '$1 == "U" && $3 != "unavailable"' | wc -l)"
expect calls_cut_by_failover_answer_unavailable "$internal acquires answered internal" '[ "$internal" -eq 0 ] && [ "$unavailable" -gt 0 ]'
sorted="$(printf '%s\n' "${WINDOWS_MS[@]}" | sort -n)"
n="${#WINDOWS_MS[@]}"
expect "at_least_two_automatic_failovers" "$n failovers completed" '[ "$n" -ge 2 ] && [ "$n" -eq "$FAILOVERS" ]'
median="$(awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }' <<<"$sorted")"
echo "# unavailability (kill -> first grant on the new primary) over $n failovers: median $median ms, max $(tail -1 <<<"$sorted") ms (each: ${WINDOWS_MS[*]})"
echo "# grants lost: $lost_grants; leases lost by their holders (fenced write refused, LS001): $fence_lost;" \
	"fenced writes cut off (connection lost): $fence_unavailable; acquires answered unavailable: $unavailable"
echo "# whole run $(($(date +%s) - started)) s"
finish
