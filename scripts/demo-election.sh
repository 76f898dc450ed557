#!/usr/bin/env bash
# demo-election.sh -- make demo-election: a leader-elected worker, its leader
# frozen, a follower taking over, the frozen leader's late write refused.
#
# Three instances of examples/election/leader_worker.cpp follow the election
# "leader-worker" (each prints every change it is told of) and campaign; the
# leader appends to the table leader_log, each append fenced with its term.
# The demo freezes the leader with SIGSTOP between two appends (no
# transaction open) for 4 s, twice its TTL: a follower is elected with a
# higher term and appends under it.  Then SIGCONT: the old leader, resuming
# where it stopped, tries its next append under its old term -- and
# lease.fence rejects it in the write's own transaction.  Each step is
# printed as it happens, then the timeline and the table, and the steps are
# checked (exit 1 if one did not happen):
#   1. a leader was elected and wrote under its term T1;
#   2. after the SIGSTOP, another instance was elected with a term T2 > T1
#      and the followers printed it;
#   3. after the SIGCONT, the frozen leader's write under T1 was REJECTED;
#   4. the table holds every acknowledged append, terms never going back.
# Run by the test demo.election (tests/CMakeLists.txt) on the CTest fixture's
# cluster (PGLEASE_CLUSTER and libpq's PG* set), or by make demo-election on
# a cluster of its own (Unix socket in a temporary directory).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
WORKER="${PGLEASE_LEADER_WORKER:-$ROOT/build/client/pglease_leader_worker}"
if [ ! -x "$WORKER" ]; then
	[ -z "${PGLEASE_CLUSTER:-}" ] || die "no $WORKER (cmake --build build/client --target pglease_leader_worker)"
	# make demo-election: build the client and the worker first
	cmake -S "$ROOT/client" -B "$ROOT/build/client" >/dev/null
	cmake --build "$ROOT/build/client" -j2 --target pglease_leader_worker >/dev/null
fi

work_dir pg_lease_demo_election
DIR="$WORK"
pids=()
if [ -z "${PGLEASE_CLUSTER:-}" ]; then
	export PGLEASE_TEST_PORT="${PGLEASE_DEMO_PORT:-5432}" # names the socket file only
	on_exit '"$ROOT/scripts/cluster.sh" stop "$DIR/pg" immediate || true'
	"$ROOT/scripts/cluster.sh" start "$DIR/pg" preload >/dev/null
	eval "$("$ROOT/scripts/cluster.sh" env "$DIR/pg")"
	psql_q -c "CREATE EXTENSION pg_lease"
fi
on_exit 'for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done'

sql() { psql_q "$@"; }
T0="$(now_ms)"
# step -- print a step of the demo as it happens, and keep it for the timeline
step() {
	echo "$(now_ms) demo $*" >>"$DIR/demo.log"
	printf '  %6.2f  demo: %s\n' "$(awk -v t="$(now_ms)" -v t0="$T0" 'BEGIN { print (t - t0) / 1000 }')" "$*"
}

sql -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS leader_log" \
	-c "CREATE TABLE leader_log (seq bigserial PRIMARY KEY, writer text, term bigint, entry int)"
echo "three workers follow and campaign for the election \"leader-worker\"; the leader appends to"
echo "leader_log, each append fenced with its term (TTL 2s):"
for n in 1 2 3; do
	PGAPPNAME="worker-$n" "$WORKER" "worker-$n" 14 >"$DIR/worker-$n.log" 2>&1 &
	pids+=($!)
	sleep 0.3
done

# the current leader: the writer of the last append, with its term
last_writer() { sql -c "SELECT writer || ' ' || term FROM leader_log ORDER BY seq DESC LIMIT 1"; }
in_transaction() { # any of the worker's sessions (PGAPPNAME; its observer's are NAME-observer) is in a transaction
	[ "$(sql -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = '$1' AND xact_start IS NOT NULL")" != 0 ]
}
frozen="" t1=""
for attempt in $(seq 1 300); do
	read -r leader term <<<"$(last_writer)" || true
	if [ -n "${leader:-}" ] && [ "$(sql -c "SELECT count(*) FROM leader_log")" -ge 3 ]; then
		pid="${pids[$((${leader#worker-} - 1))]}"
		kill -STOP "$pid"
		# frozen between two appends (no transaction open), and still the last writer?
		if ! in_transaction "$leader" && [ "$(last_writer)" = "$leader $term" ]; then
			frozen="$leader" t1="$term"
			break
		fi
		kill -CONT "$pid"
	fi
	sleep 0.05
done
if [ -z "$frozen" ]; then
	for n in 1 2 3; do
		echo "worker-$n's last lines:" >&2
		tail -n 3 "$DIR/worker-$n.log" >&2
	done
	die "no leader could be frozen between two appends"
fi
step "1. $frozen leads with term $t1 and appends; SIGSTOP $frozen (a GC pause, a stopped VM) for 4s"
sleep 4
read -r successor t2 <<<"$(last_writer)" || true
step "2. $successor now appends with term $t2 (elected once $frozen's TTL ran out); SIGCONT $frozen"
kill -CONT "$pid"
deadline=$(($(now_ms) + 10000))
until grep -q " write REJECTED term $t1 " "$DIR/$frozen.log"; do
	[ "$(now_ms)" -lt "$deadline" ] || break
	sleep 0.05
done
if grep -q " write REJECTED term $t1 " "$DIR/$frozen.log"; then
	step "3. $frozen resumed and tried its next append with term $t1: REJECTED by lease.fence"
fi

deadline=$(($(now_ms) + 30000))
for p in "${pids[@]}"; do
	while kill -0 "$p" 2>/dev/null; do
		[ "$(now_ms)" -lt "$deadline" ] || die "workers did not finish in time"
		sleep 0.1
	done
done
pids=()

echo
echo "timeline (seconds since start):"
cat "$DIR"/worker-*.log "$DIR/demo.log" | sort -n -s -k1,1 |
	awk -v t0="$T0" '{ printf "  %6.2f  %s\n", ($1 - t0) / 1000, substr($0, index($0, " ") + 1) }'
echo
echo "leader_log (first and last rows of each term):"
psql -X -q -c "SELECT term, writer, count(*) AS appends, min(seq) AS first_seq, max(seq) AS last_seq
	FROM leader_log GROUP BY term, writer ORDER BY min(seq)"

# the checks of the banner
problems=""
[[ "${t2:-}" =~ ^[0-9]+$ ]] && [ "$t2" -gt "$t1" ] && [ "$successor" != "$frozen" ] ||
	problems+=" no other leader with a higher term than $t1 while $frozen was frozen (last writer: ${successor:-none} ${t2:-});"
grep -q " elected term $t2\$" "$DIR/$successor.log" 2>/dev/null ||
	problems+=" $successor never printed 'elected term $t2';"
for n in 1 2 3; do
	[ "worker-$n" = "$successor" ] && continue
	grep -q " sees leader $successor term $t2\$" "$DIR/worker-$n.log" ||
		problems+=" worker-$n never printed 'sees leader $successor term $t2';"
done
grep -q " write REJECTED term $t1 " "$DIR/$frozen.log" ||
	problems+=" $frozen's write with term $t1 after SIGCONT was not rejected;"
acked="$(grep -h ' wrote entry ' "$DIR"/worker-*.log | wc -l)"
rows="$(sql -c "SELECT count(*) FROM leader_log")"
backwards="$(sql -c "SELECT count(*) FROM (SELECT term < lag(term) OVER (ORDER BY seq) AS back FROM leader_log) l WHERE back")"
[ "$acked" -eq "$rows" ] || problems+=" $acked acknowledged appends but $rows rows;"
[ "$backwards" -eq 0 ] || problems+=" $backwards rows with a lower term than the row before;"
echo "check: $acked acknowledged appends = $rows rows, $backwards out of term order;" \
	"$frozen (term $t1) deposed by $successor (term ${t2:-?}), its late write rejected"
if [ -n "$problems" ]; then
	echo "check FAILED:$problems" >&2
	exit 1
fi
echo "check passed: one leader at a time, the takeover printed by every follower, the frozen leader fenced off"
