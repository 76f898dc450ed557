#!/usr/bin/env bash
# Contention (issue 35): eight sessions take turns on one resource as fast as
# they can, CONTENTION_SECONDS per mix (5 in make test; 30 in make faults:
# faults.contention.*), through pgbench: (a) exclusive locks, (b) readers
# and writers, (c) permits of a semaphore of 3, (d) election campaigns with
# lease.leader reads.  Eight clients on one resource once deadlocked inside
# the extension (40P01, fixed in 5b3e95d); no other test drives a resource
# this hard.
#
# Each client logs every request into grants_log: asked_at just before the
# acquire, granted_at just after it, released_at just after the release.
# Both ends are read in the statement that acquires or releases, before its
# commit, so a grant's logged interval lies inside the time it really held
# and the next grant's granted_at comes after that commit: an overlap of two
# logged intervals is a real overlap, never one of measurement.
#
# Per mix: pgbench saw no failed transaction and no aborted client (any
# error but a NULL token, i.e. a wait that timed out, aborts a client); the
# server log written meanwhile has no deadlock, no statement or lock timeout
# and no ERROR; exclusion holds in the log; tokens strictly increase in grant
# order; enough grants; every client granted; and, as waiters are served
# first come, first served in both modes (docs/sql.md, "Waiting"), no grant
# overtakes a waiter that asked well before it, and exclusive locks spread
# evenly over the clients.
source "$(dirname "$0")/lib.sh"
fresh_db shell_contention

mode="$(cat "$PGLEASE_CLUSTER/mode")" # only reported: every check holds in both modes
SERVER_LOG="$PGLEASE_CLUSTER/server.log"
CLIENTS=8
DURATION="${CONTENTION_SECONDS:-5}"
# a waiter asking this much before another must not be granted after it:
# more than a warm backend takes from its clock_timestamp() to the acquire's
# first look at the queue, with 8 clients and pgbench on 2 shared cores
FIFO_MARGIN_MS=20
# grants each mix must reach in DURATION s: 50 a second.  Measured on this
# project's 2-core machine, both modes, 17 runs of 10 s (fsync on, each
# grant's commit is flushed, so the rate follows the disk and varies): locks
# 1133-5344, readers and writers 1531-4748, permits 1950-8065, elections
# 1421-4600
MIN_GRANTS=$((50 * DURATION))
echo "# $mode cluster: $CLIENTS clients, $DURATION s per mix"
WORK="$(mktemp -d)"
on_exit 'rm -rf "$WORK"'

q -c "CREATE TABLE grants_log (
	mix text NOT NULL,
	client int NOT NULL,
	mode text NOT NULL,            -- exclusive, shared, permit
	token bigint,                  -- NULL: not granted within the wait
	asked_at timestamptz NOT NULL,
	granted_at timestamptz NOT NULL, -- when the acquire returned, NULL token too
	released_at timestamptz,
	released boolean,              -- lease.release's answer
	seen_term bigint,              -- elections: lease.leader while leading
	seen_value text)"

# write_script FILE MIX MODE RESOURCE ACQUIRE [election] -- a pgbench script:
# one request, logged; a grant held for 0.2 ms and released.  ACQUIRE is the
# call with %r for the quoted resource.  pgbench gives a NULL as an empty
# string, hence coalesce(..., 0).  The target list is evaluated in order, so
# asked and got bracket the acquire.
#
# A client's first transaction first makes the same call once on a resource
# of its own: the first lease call of a new backend loads the catalog and
# prepares its plans, eight of them at once on 2 cores, so a first contended
# request would be logged as asked up to 30 ms (measured) before it even
# reached the extension's queue, and the FIFO check would blame the queue.
write_script() {
	local file="$1" mix="$2" kind="$3" resource="$4" acquire="$5" election="${6:-}"
	local seen="NULL, NULL" own="'c/warmup/$mix/' || :client_id" quoted="'$resource'"
	{
		echo '\if :warm = 0'
		[ -z "$election" ] || echo "SELECT * FROM lease.leader($own);"
		echo "SELECT lease.release($own, ${acquire//%r/"$own"});"
		echo '\set warm 1'
		echo '\endif'
		[ -z "$election" ] || echo "SELECT * FROM lease.leader('$resource');"
		echo "SELECT clock_timestamp() AS asked, coalesce(${acquire//%r/"$quoted"}, 0) AS tok, clock_timestamp() AS got \\gset"
		echo '\if :tok > 0'
		if [ -n "$election" ]; then
			echo "SELECT coalesce(term, 0) AS seen_term, coalesce(value, '') AS seen_value FROM lease.leader('$resource') \\gset"
			seen=":seen_term, ':seen_value'"
		fi
		echo "SELECT pg_sleep(0.0002);"
		echo "SELECT lease.release('$resource', :tok) AS rel, clock_timestamp() AS rel_at \\gset"
		echo "INSERT INTO grants_log VALUES ('$mix', :client_id, '$kind', :tok, ':asked', ':got', ':rel_at', ':rel', $seen);"
		echo '\else'
		echo "INSERT INTO grants_log (mix, client, mode, asked_at, granted_at) VALUES ('$mix', :client_id, '$kind', ':asked', ':got');"
		echo '\endif'
	} >"$file"
}

HOLDER="holder => 'client ' || :client_id"
write_script "$WORK/lock.sql" lock exclusive c/lock \
	"lease.acquire(%r, '30 s', wait => '2 s', $HOLDER)"
write_script "$WORK/writer.sql" rw exclusive c/rw \
	"lease.acquire(%r, '30 s', wait => '2 s', $HOLDER)"
write_script "$WORK/reader.sql" rw shared c/rw \
	"lease.acquire_shared(%r, '30 s', wait => '2 s', $HOLDER)"
write_script "$WORK/permit.sql" permit permit c/permit \
	"lease.acquire_permit(%r, '30 s', 3, wait => '2 s', $HOLDER)"
write_script "$WORK/election.sql" election exclusive c/election \
	"lease.acquire(%r, '30 s', '2 s', 'client ' || :client_id, false, 'value of client ' || :client_id)" election

# g MIX -- the granted rows of a mix, as a CTE for the checks' SQL
g() { echo "WITH g AS (SELECT * FROM grants_log WHERE mix = '$1' AND token IS NOT NULL)"; }

# run_mix MIX MIN_GRANTS SCRIPT... -- pgbench for DURATION s, then the checks
# every mix shares; the mix's own follow
run_mix() {
	local mix="$1" min_grants="$2" log_from out rc processed failed log_part
	shift 2
	local -a scripts=()
	local s
	for s in "$@"; do scripts+=(-f "$s"); done
	log_from="$(stat -c %s "$SERVER_LOG")"
	out="$WORK/$mix.pgbench"
	rc=0
	pgbench -n -c "$CLIENTS" -j 2 -T "$DURATION" -D warm=0 "${scripts[@]}" -d "$TESTDB" >"$out" 2>&1 || rc=$?
	processed="$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$out")"
	failed="$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$out")"
	expect "${mix}_pgbench_has_no_failed_transaction_and_no_aborted_client" \
		"exit $rc, failed '$failed', $(grep -m3 -iE 'abort|error' "$out" | tr '\n' ' ')" \
		'[ "$rc" -eq 0 ] && [ "$failed" = 0 ] && ! grep -qi abort "$out"'

	# the part of the server log this mix wrote
	log_part="$(tail -c "+$((log_from + 1))" "$SERVER_LOG")"
	expect "${mix}_server_log_has_no_deadlock" "$(grep -m3 'deadlock detected' <<<"$log_part")" \
		'! grep -q "deadlock detected" <<<"$log_part"'
	expect "${mix}_server_log_has_no_statement_timeout" "$(grep -m3 'statement timeout' <<<"$log_part")" \
		'! grep -q "canceling statement due to statement timeout" <<<"$log_part"'
	expect "${mix}_server_log_has_no_lock_timeout" "$(grep -m3 'lock timeout' <<<"$log_part")" \
		'! grep -q "lock timeout" <<<"$log_part"'
	expect "${mix}_server_log_has_no_error" "$(grep -m3 -A1 'ERROR:' <<<"$log_part" | tr '\n' ' ')" \
		'! grep -q "ERROR:" <<<"$log_part"'

	local rows stats
	rows="$(q -c "SELECT count(*) FROM grants_log WHERE mix = '$mix'")"
	expect "${mix}_log_has_a_row_per_transaction" "$rows rows for $processed transactions" \
		'[ "$rows" = "$processed" ]'
	stats="$(q -F ' ' -c "$(g "$mix") SELECT count(*), (SELECT count(*) FROM grants_log WHERE mix = '$mix' AND token IS NULL),
		count(*) FILTER (WHERE released IS NOT TRUE) FROM g")"
	read -r GRANTS TIMEOUTS NOT_RELEASED <<<"$stats"
	echo "# $mix: $GRANTS grants, $TIMEOUTS timed out, in $processed transactions"
	expect "${mix}_at_least_${min_grants}_grants" "$GRANTS grants in ${DURATION} s" \
		'[ "$GRANTS" -ge "$min_grants" ]'
	expect "${mix}_every_release_ends_a_current_grant" "$NOT_RELEASED of $GRANTS releases returned false" \
		'[ "$NOT_RELEASED" -eq 0 ]'

	# tokens strictly increase in grant order (ties of granted_at by token,
	# so a token given twice shows as no increase)
	local disorder
	disorder="$(q -F ' ' -c "$(g "$mix") SELECT count(*), coalesce(min(token)::text, '-') FROM (
		SELECT token, lag(token) OVER (ORDER BY granted_at, token) AS prev FROM g) x WHERE token <= prev")"
	expect "${mix}_tokens_strictly_increase_in_grant_order" \
		"$(cut -d' ' -f1 <<<"$disorder") grants with a token not above the previous grant's (first: token $(cut -d' ' -f2 <<<"$disorder"))" \
		'[ "$(cut -d" " -f1 <<<"$disorder")" -eq 0 ]'

	# the holders at once: a sweep over the grant and release instants, a
	# release before a grant at the same instant
	read -r MAX_WRITERS MAX_OTHERS MAX_HOLDERS OTHERS_WITH_WRITER <<<"$(q -F ' ' -c "$(g "$mix"),
		ev AS (SELECT granted_at AS t, 1 AS o, (mode = 'exclusive')::int AS dw, (mode <> 'exclusive')::int AS dr FROM g
			UNION ALL
			SELECT released_at, 0, -(mode = 'exclusive')::int, -(mode <> 'exclusive')::int FROM g),
		run AS (SELECT sum(dw) OVER w AS writers, sum(dr) OVER w AS others FROM ev
			WINDOW w AS (ORDER BY t, o ROWS UNBOUNDED PRECEDING))
		SELECT coalesce(max(writers), 0), coalesce(max(others), 0), coalesce(max(writers + others), 0),
			coalesce(max(others) FILTER (WHERE writers > 0), 0) FROM run")"

	# grants per client
	read -r MIN_PER_CLIENT MAX_PER_CLIENT PER_CLIENT <<<"$(q -F ' ' -c "$(g "$mix")
		SELECT min(n), max(n), string_agg(n::text, ',' ORDER BY c) FROM (
			SELECT c, count(g.token) AS n FROM generate_series(0, $CLIENTS - 1) c LEFT JOIN g ON g.client = c GROUP BY c) x")"
	echo "# $mix: grants per client $PER_CLIENT"
	expect "${mix}_every_client_granted" "grants per client $PER_CLIENT" '[ "$MIN_PER_CLIENT" -ge 1 ]'
}

# fifo MIX -- no grant overtakes a waiter that asked more than
# FIFO_MARGIN_MS before it (among the granted requests of the mix); the
# message names the worst case, its times from the mix's first request.
# Where to look when it fails: a request that finds nobody queued tries the
# table before it queues, and that try can wait for the resource's row
# (behind another acquire's commit) while later requests go ahead; eight
# clients starting at once make that likely at the start of a mix.
fifo() {
	local mix="$1" found
	found="$(q -c "$(g "$mix"),
		x AS (SELECT *, min(asked_at) OVER (ORDER BY granted_at, token ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS later_asked FROM g),
		bad AS (SELECT * FROM x WHERE later_asked < asked_at - interval '$FIFO_MARGIN_MS ms'),
		w AS (SELECT * FROM bad ORDER BY asked_at - later_asked DESC LIMIT 1),
		t0 AS (SELECT min(asked_at) AS t0 FROM grants_log WHERE mix = '$mix')
		SELECT (SELECT count(*) FROM bad) || ' ' || coalesce((SELECT format(
			'token %s of client %s (asked at %s ms, granted at %s ms) went before token %s of client %s (asked %s ms earlier, granted at %s ms)',
			w.token, w.client, round(extract(epoch FROM w.asked_at - t0) * 1000, 1), round(extract(epoch FROM w.granted_at - t0) * 1000, 1),
			a.token, a.client, round(extract(epoch FROM w.asked_at - a.asked_at) * 1000, 1), round(extract(epoch FROM a.granted_at - t0) * 1000, 1))
			FROM w, t0, g a WHERE a.asked_at = w.later_asked AND a.granted_at > w.granted_at LIMIT 1), '')")"
	expect "${mix}_no_grant_overtakes_a_waiter_that_asked_${FIFO_MARGIN_MS}_ms_before" \
		"${found%% *} of $GRANTS grants went before a waiter that had asked more than $FIFO_MARGIN_MS ms earlier; the worst: ${found#* }" \
		'[ "${found%% *}" -eq 0 ]'
}

# --- (a) exclusive locks ----------------------------------------------------------
run_mix lock "$MIN_GRANTS" "$WORK/lock.sql"
expect "lock_never_two_holders" "up to $MAX_HOLDERS holders at once" '[ "$MAX_HOLDERS" -le 1 ]'
expect "lock_grants_even_over_clients" "grants per client $PER_CLIENT: the most above twice the fewest" \
	'[ "$MIN_PER_CLIENT" -ge 1 ] && [ "$MAX_PER_CLIENT" -le $((2 * MIN_PER_CLIENT)) ]'
fifo lock

# --- (b) readers and writers: two readers to a writer ---------------------------------
run_mix rw "$MIN_GRANTS" "$WORK/reader.sql@2" "$WORK/writer.sql@1"
expect "rw_never_two_writers" "up to $MAX_WRITERS writers at once" '[ "$MAX_WRITERS" -le 1 ]'
expect "rw_no_reader_beside_a_writer" "up to $OTHERS_WITH_WRITER readers beside a writer" '[ "$OTHERS_WITH_WRITER" -eq 0 ]'
expect "rw_readers_together" "at most $MAX_OTHERS readers at once" '[ "$MAX_OTHERS" -ge 2 ]'
writers="$(q -c "SELECT count(*) FROM grants_log WHERE mix = 'rw' AND token IS NOT NULL AND mode = 'exclusive'")"
echo "# rw: $writers of $GRANTS grants to writers"
# a third of the requests are a writer's: readers must not shut them out
expect "rw_writers_granted_among_readers" "$writers of $GRANTS grants to writers" '[ "$writers" -ge $((GRANTS / 6)) ]'
fifo rw

# --- (c) permits of a semaphore of 3 --------------------------------------------------
run_mix permit "$MIN_GRANTS" "$WORK/permit.sql"
expect "permit_at_most_3_holders" "up to $MAX_HOLDERS permits at once" '[ "$MAX_HOLDERS" -le 3 ]'
expect "permit_holders_together" "at most $MAX_HOLDERS permits at once" '[ "$MAX_HOLDERS" -ge 2 ]'
fifo permit

# --- (d) elections: campaign with a value, lead, resign; lease.leader reads -------------
run_mix election "$MIN_GRANTS" "$WORK/election.sql"
expect "election_never_two_leaders" "up to $MAX_HOLDERS leaders at once" '[ "$MAX_HOLDERS" -le 1 ]'
wrong="$(q -c "SELECT count(*) FROM grants_log WHERE mix = 'election' AND token IS NOT NULL
	AND (seen_term IS DISTINCT FROM token OR seen_value IS DISTINCT FROM 'value of client ' || client)")"
expect "election_leader_names_the_holder_while_it_leads" "$wrong of $GRANTS leaders saw another term or value" \
	'[ "$wrong" -eq 0 ]'
fifo election

finish
