#!/usr/bin/env bash
# hostile_input.sh -- a storm of hostile arguments against every function of
# the SQL API; each call must succeed per docs/sql.md or fail with a
# documented SQLSTATE, and no lease may change unless a valid call had to
# change it.
#
# On its own throwaway preloaded cluster (port FAULTS_PORT, default 24410):
#
# - hostile/setup.sql makes two ordinary storm roles (hostile_caller;
#   hostile_admin, which may also break and gc), and bystander leases held
#   by a third role and by hostile_caller under a label the storm never uses,
#   on fixed names some of which the storm fights over;
# - hostile/generate.sql makes the calls: a sweep of every pool value
#   through every parameter of every function (the same on every run), then
#   calls drawn from a seed (FAULTS_SEED, printed; random by default).  The
#   pools: NULLs, empty, 10 kB and 1 MB names, multibyte, emoji, combining
#   and control characters, NUL bytes (which must fail at input), quote and
#   backslash soups, 'infinity', negative, month, huge, sub-microsecond and
#   mixed-sign intervals, extreme tokens, odd holders, NULL session_bound;
#   positional, named and mixed notation;
# - hostile/run.sql plays them in batches as the storm roles under READ
#   COMMITTED, REPEATABLE READ and SERIALIZABLE, in odd time zones and
#   IntervalStyles, and judges each call (see its header).
#
# Then: every call per spec; only documented SQLSTATEs; the bystanders' rows
# byte for byte as before (ctid, xmin, every column); tokens only forward
# (the sequence, and every resource's token); no crash, assertion failure or
# leak warning in the server log.
#
# FAULTS_QUICK=1: 2,800 calls (CI); default: 22,000.
source "$(dirname "$0")/lib.sh" # ROOT, WORK, start_cluster, ok/not_ok
HERE="$ROOT/tests/faults"
PORT="${FAULTS_PORT:-24410}"
SEED="${FAULTS_SEED:-$(((RANDOM << 15 | RANDOM) % 1000000))}"
if [ "${FAULTS_QUICK:-0}" = 1 ]; then
	BATCHES=4 PER_BATCH=700 MIN_CALLS=2000 BATCH_LIMIT=90
else
	BATCHES=11 PER_BATCH=2000 MIN_CALLS=20000 BATCH_LIMIT=150
fi
TOTAL=$((BATCHES * PER_BATCH))
DB=hostile

start_cluster "$WORK" "$PORT" preload
use_cluster "$WORK" "$PORT"

# q [psql args] -- superuser, the storm database, tuples only, bounded
q() { PSQL_TIMEOUT=60 psql_q -d "$DB" "$@"; }

start_s=$SECONDS
echo "# seed $SEED (rerun with FAULTS_SEED=$SEED), $BATCHES batches of $PER_BATCH calls"
timeout 60 psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE $DB"
q -c "CREATE EXTENSION pg_lease"
q -f "$HERE/hostile/setup.sql" -f "$HERE/hostile/generate.sql" -f "$HERE/hostile/run.sql" >/dev/null
q -c "SELECT hostile.generate($SEED / 1000000.0, $TOTAL)" >/dev/null

# the bystanders' rows, byte for byte
bystander_rows() {
	q -c "COPY (SELECT ctid::text, xmin::text, g.* FROM lease.grants g
	             WHERE resource IN (SELECT resource FROM hostile.bystanders)
	             ORDER BY resource COLLATE \"C\") TO STDOUT"
}
bystander_rows >"$WORK/bystanders.before"
seq_start="$(q -c "SELECT last_value FROM lease.token_seq")"
q -c "INSERT INTO hostile.token_marks SELECT resource, token FROM lease.grants"

# batch_plan B -- role and isolation level of batch B (the first one, which
# plays the start of the sweep, may break and gc)
batch_plan() {
	case $(($1 % 7)) in
	0) echo "hostile_admin read committed" ;;
	1) echo "hostile_caller read committed" ;;
	2) echo "hostile_caller repeatable read" ;;
	3) echo "hostile_admin serializable" ;;
	4) echo "hostile_caller read committed" ;;
	5) echo "hostile_caller serializable" ;;
	6) echo "hostile_admin repeatable read" ;;
	esac
}

ZONES=(UTC America/St_Johns Asia/Kathmandu Pacific/Chatham Europe/Berlin)
STYLES=(postgres iso_8601 sql_standard postgres_verbose)
seq_prev="$seq_start"
for b in $(seq 0 $((BATCHES - 1))); do
	read -r role iso <<<"$(batch_plan "$b")"
	from=$((b * PER_BATCH + 1))
	to=$(((b + 1) * PER_BATCH))
	rc=0
	# odd session settings too: a TTL is exact in any time zone, and the
	# oracle reads every literal under the same IntervalStyle as the call
	tz="${ZONES[$((b % ${#ZONES[@]}))]}"
	style="${STYLES[$((b % ${#STYLES[@]}))]}"
	out="$(timeout "$BATCH_LIMIT" psql -X -q -v ON_ERROR_STOP=1 -U "$role" -d "$DB" \
		-c "SET default_transaction_isolation = '$iso'" \
		-c "SET TimeZone = '$tz'" -c "SET IntervalStyle = '$style'" \
		-c "CALL hostile.run($b, $from, $to, 25)" 2>&1)" || rc=$?
	ran="$(q -c "SELECT count(*) FROM hostile.results WHERE batch = $b")"
	if [ "$rc" -eq 0 ] && [ "$ran" -eq "$PER_BATCH" ]; then
		ok "batch_${b}_ran ($role, $iso, $tz, IntervalStyle $style, $ran calls)"
	else
		not_ok "batch_${b}_ran ($role, $iso)" "psql exited $rc after $ran of $PER_BATCH calls ($([ "$rc" = 124 ] && echo "timed out after ${BATCH_LIMIT}s"); last call tried: $(q -c "SELECT id FROM hostile.cases WHERE id = $from + $ran") $(q -c "SELECT left(call, 300) FROM hostile.cases WHERE id = $from + $ran")): $out"
	fi

	# the next batch must not see this backend as alive (session-bound grants)
	for _ in $(seq 1 500); do
		[ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE usename IN ('hostile_caller', 'hostile_admin')")" = 0 ] && break
		sleep 0.02
	done

	# tokens only move forward: the sequence, and each resource's token
	seq_now="$(q -c "SELECT last_value FROM lease.token_seq")"
	back="$(q -c "SELECT coalesce(string_agg(format('%s: %s -> %s', left(m.resource, 40), m.token, g.token), '; '), '')
	               FROM lease.grants g JOIN hostile.token_marks m USING (resource) WHERE g.token < m.token")"
	above="$(q -c "SELECT count(*) FROM lease.grants WHERE token > $seq_now")"
	if [ "$seq_now" -ge "$seq_prev" ] && [ -z "$back" ] && [ "$above" = 0 ]; then
		ok "batch_${b}_tokens_forward (sequence $seq_prev -> $seq_now)"
	else
		not_ok "batch_${b}_tokens_forward" "sequence $seq_prev -> $seq_now, $above rows above it, went back: $back"
	fi
	seq_prev="$seq_now"
	q -c "INSERT INTO hostile.token_marks SELECT resource, token FROM lease.grants
	      ON CONFLICT (resource) DO UPDATE SET token = greatest(hostile.token_marks.token, excluded.token)"
done
storm_s=$((SECONDS - start_s))

# --- the verdicts -----------------------------------------------------------
tried="$(q -c "SELECT count(*) FROM hostile.results")"
echo "# $tried calls tried in ${storm_s}s; outcomes per function:"
q -F ' ' -c "SELECT '#   ' || fn, string_agg(outcome || '=' || n, ' ' ORDER BY outcome)
               FROM (SELECT fn, outcome, count(*) n FROM hostile.results GROUP BY 1, 2) s GROUP BY fn ORDER BY fn"
if [ "$tried" -ge "$MIN_CALLS" ]; then ok "calls_tried ($tried >= $MIN_CALLS)"; else not_ok "calls_tried" "$tried < $MIN_CALLS"; fi

off="$(q -c "SELECT count(*) FROM hostile.results WHERE verdict IS NOT NULL")"
if [ "$off" = 0 ]; then
	ok "every_call_per_spec ($tried calls)"
else
	# one line per kind of failure (the verdict without its details), with
	# the first example and its arguments
	KIND="regexp_replace(verdict, '(: .*)|[0-9]+', '', 'g')"
	q -c "SELECT format('not ok - off_spec: %s -> %s: %s (%s calls), e.g. call %s [batch %s, %s, %s]: %s  args: %s  returned: %s',
	                     fn, outcome, verdict, n, id, batch, role, isolation, call, args, result)
	        FROM (SELECT DISTINCT ON (fn, outcome, $KIND) *, count(*) OVER (PARTITION BY fn, outcome, $KIND) n
	                FROM hostile.results WHERE verdict IS NOT NULL ORDER BY fn, outcome, $KIND, id) s
	       ORDER BY n DESC"
	failures=$((failures + $(q -c "SELECT count(DISTINCT (fn, outcome, $KIND)) FROM hostile.results WHERE verdict IS NOT NULL")))
fi

undocumented="$(q -c "SELECT coalesce(string_agg(outcome || ' (' || n || ' calls: ' || fns || ')', ', '), '')
                        FROM (SELECT outcome, count(*) n, string_agg(DISTINCT fn, ',') fns FROM hostile.results
                               WHERE outcome <> ALL ('{ok,22023,22004,42501,LS001,LS002,0A000}'::text[] || hostile.input_states())
                               GROUP BY outcome) s")"
if [ -z "$undocumented" ]; then
	ok "only_documented_sqlstates"
else
	not_ok "only_documented_sqlstates" "$undocumented"
fi

# the storm must have reached the paths it is meant to test
missing="$(q -c "SELECT coalesce(string_agg(w, ', '), '') FROM (VALUES
	('acquire granted', EXISTS (SELECT 1 FROM hostile.results WHERE fn IN ('acquire', 'try_acquire') AND outcome = 'ok' AND result <> 'NULL')),
	('acquire refused', EXISTS (SELECT 1 FROM hostile.results WHERE fn IN ('acquire', 'try_acquire') AND outcome = 'ok' AND result = 'NULL')),
	('renew true', EXISTS (SELECT 1 FROM hostile.results WHERE fn = 'renew' AND result = 'true')),
	('release true', EXISTS (SELECT 1 FROM hostile.results WHERE fn = 'release' AND result = 'true')),
	('fence passed', EXISTS (SELECT 1 FROM hostile.results WHERE fn = 'fence' AND outcome = 'ok')),
	('is_current true', EXISTS (SELECT 1 FROM hostile.results WHERE fn = 'is_current' AND result = 'true')),
	('break done', EXISTS (SELECT 1 FROM hostile.results WHERE fn = 'break' AND outcome = 'ok')),
	('gc done', EXISTS (SELECT 1 FROM hostile.results WHERE fn = 'gc' AND outcome = 'ok')),
	('LS001', EXISTS (SELECT 1 FROM hostile.results WHERE outcome = 'LS001')),
	('42501', EXISTS (SELECT 1 FROM hostile.results WHERE outcome = '42501')),
	('22004', EXISTS (SELECT 1 FROM hostile.results WHERE outcome = '22004')),
	('22023', EXISTS (SELECT 1 FROM hostile.results WHERE outcome = '22023')),
	('bystander attacked', EXISTS (SELECT 1 FROM hostile.cases WHERE exprs && ARRAY(SELECT expr FROM hostile.bystanders)))
	) v(w, seen) WHERE NOT seen")"
if [ -z "$missing" ]; then ok "storm_reached_every_path"; else not_ok "storm_reached_every_path" "never seen: $missing"; fi

# a NUL byte cannot be in a text: every call with an argument that would
# carry one fails at input (22021 or 54000, or another argument's input
# error; a non-constant one may meet break/gc's EXECUTE check first), before
# any function of the extension runs
read -r nul_calls nul_refused <<<"$(q -F ' ' -c "SELECT count(*), count(*) FILTER (WHERE r.outcome = ANY (hostile.input_states())
                                                  OR (r.outcome = '42501' AND r.fn IN ('break', 'gc')))
                                     FROM hostile.results r JOIN hostile.cases c USING (id)
                                    WHERE c.exprs && ARRAY(SELECT expr FROM hostile.nul_exprs)")"
if [ "$nul_calls" -gt 0 ] && [ "$nul_calls" = "$nul_refused" ]; then
	ok "nul_fails_at_input ($nul_calls calls)"
else
	not_ok "nul_fails_at_input" "$nul_refused of $nul_calls calls with a NUL argument failed at input"
fi
echo "# also seen: $(q -c "SELECT string_agg(DISTINCT outcome, ' ' ORDER BY outcome) FROM hostile.results WHERE outcome IN ('0A000', 'LS002')")"

bystander_rows >"$WORK/bystanders.after"
if cmp -s "$WORK/bystanders.before" "$WORK/bystanders.after" && [ -s "$WORK/bystanders.before" ]; then
	ok "bystanders_unchanged ($(wc -l <"$WORK/bystanders.before") rows, byte for byte)"
else
	not_ok "bystanders_unchanged" "$(diff "$WORK/bystanders.before" "$WORK/bystanders.after" | head -20 | tr '\n' ' ')"
fi

seq_end="$(q -c "SELECT last_value FROM lease.token_seq")"
if [ "$seq_end" -gt "$seq_start" ]; then
	ok "token_sequence_forward ($seq_start -> $seq_end)"
else
	not_ok "token_sequence_forward" "$seq_start -> $seq_end"
fi

# the server log: no crash, no assertion, no leak
log_bad="$(grep -nE 'TRAP:|PANIC|terminated by signal|server process|Assert|assertion|segmentation|core dumped|leak|SPI stack|out of memory|stuck spinlock|FATAL|was not properly shut down|reinitializing' "$WORK/server.log" | head -20 || true)"
if [ -z "$log_bad" ]; then
	ok "server_log_clean"
else
	not_ok "server_log_clean" "$log_bad"
fi

echo "# $tried calls, seed $SEED, $((SECONDS - start_s))s"
exit $((failures > 0))
