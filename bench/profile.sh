#!/usr/bin/env bash
# bench/profile.sh -- where an uncontended pg_lease acquire+release pair spends its
# time, next to the hand-written table lease and the durable floor.
#
#   bench/profile.sh                 8 s per measurement
#   bench/profile.sh --seconds N
#
# Starts one throwaway preloaded cluster (scripts/cluster.sh, port
# PGLEASE_BENCH_PROFILE_PORT, default 54373), fills the tables as bench/run.sh
# does (100k released resources; no checkpoint during the runs), then for
# pg_lease preloaded, pg_lease's statements as plain SQL (bench_grants), the
# handmade table lease, the durable floor and the two-write floor:
#   - 1 client: bench/build/lease_bench (uncontended pairs) with perf attached
#     to its backend (cpu-clock, call graphs): the inclusive share of the
#     functions of extension/lease_*.c and of the executor, commit and WAL
#     flush steps, turned into µs of backend CPU per pair
#   - WAL per pair by record type (pg_waldump --stats=record), commits and WAL
#     flushes per pair (pg_stat_wal, pg_stat_database), 1 and 8 clients
# and EXPLAIN (ANALYZE, BUFFERS) of the statements lease_spi.c runs for an
# acquire and a release, by hand.  Writes bench/results/profile.md.
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$BENCH_DIR/.." && pwd)"
T0="$(date +%s)"

die() { echo "profile.sh: $*" >&2; exit 1; }
log() { echo "profile.sh: [$(( $(date +%s) - T0 )) s] $*" >&2; }

SECONDS_PER_RUN=8
while [ "$#" -gt 0 ]; do
	case "$1" in
	--seconds) [ "$#" -ge 2 ] || die "--seconds needs a value"; SECONDS_PER_RUN="$2"; shift 2 ;;
	-h | --help) sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument '$1' (--seconds N, --help)" ;;
	esac
done
[[ "$SECONDS_PER_RUN" =~ ^[1-9][0-9]*$ ]] && [ "$SECONDS_PER_RUN" -ge 4 ] ||
	die "--seconds must be an integer >= 4, got '$SECONDS_PER_RUN'"
PORT="${PGLEASE_BENCH_PROFILE_PORT:-54373}"
[[ "$PORT" =~ ^[1-9][0-9]*$ ]] || die "PGLEASE_BENCH_PROFILE_PORT must be a port number, got '$PORT'"
NRES=100000

# shellcheck source=bench/common.sh
. "$BENCH_DIR/common.sh"
bench_prerequisites
PG_WALDUMP="$PG_BINDIR/pg_waldump"
[ -x "$PG_WALDUMP" ] || die "pg_waldump not found in $PG_BINDIR: install postgresql-15"
HAVE_PERF=0
if command -v perf >/dev/null 2>&1 && perf record -e cpu-clock -o /dev/null -- true >/dev/null 2>&1; then
	HAVE_PERF=1
else
	log "perf is missing or not permitted (apt-get install linux-perf; kernel.perf_event_paranoid): no CPU profile"
fi

DIR=""
WORK="$(mktemp -d /tmp/pglease-profile-work.XXXXXX)"
cleanup() {
	if [ -n "$DIR" ]; then
		PGLEASE_TEST_PORT="$PORT" "$CLUSTER" stop "$DIR" fast >/dev/null 2>&1 || true
		rm -rf "$DIR"
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

FDATASYNC="$(measure_fdatasync)"
log "fdatasync of 8 kB on /tmp: $FDATASYNC"
DIR="$(mktemp -d /tmp/pglease-profile.XXXXXX)"
log "starting a preloaded cluster in $DIR on port $PORT"
PGLEASE_TEST_PORT="$PORT" "$CLUSTER" start "$DIR" preload
sql "$DIR" "$PORT" postgres -c "ALTER SYSTEM SET checkpoint_timeout = '1d'" \
	-c "ALTER SYSTEM SET max_wal_size = '32GB'" -c "SELECT pg_reload_conf()" -c "CREATE DATABASE bench" >/dev/null
fill_lease "$DIR" "$PORT" bench u/ "$NRES"
fill_statements "$DIR" "$PORT" bench
fill_handmade "$DIR" "$PORT" bench u/ "$NRES"
fill_floor "$DIR" "$PORT" bench
sync

CONN="$(conninfo "$DIR" "$PORT")"
ctl() { sql "$DIR" "$PORT" bench "$@"; }
# WAL position, commits and WAL flushes of the cluster
snapshot() {
	ctl -F ' ' -c "SELECT pg_current_wal_insert_lsn(), (SELECT sum(xact_commit) FROM pg_stat_database),
	                      wal_sync, wal_write FROM pg_stat_wal"
}

declare -A LABEL=([preload]="pg_lease preloaded" [stmts]="pg_lease's statements" [handmade]="handmade table"
	[floor]="durable floor" [floor2]="two-write floor")
SYSTEMS=(preload stmts handmade floor floor2)
# inclusive samples of these functions, in this order (a function inside another one is
# counted in both: read the table as a tree, see the indentation)
PERF_FUNCS=(
	"PostgresMain|backend total (sampled on CPU)"
	"lease_acquire_grant|  lease.acquire (lease_acquire_grant)"
	"lease_read_row|    Q_READ_ROW: SELECT of the row (lease_read_row; only when the one-statement take of a released row fails)"
	"lease_exec_change|    conditional UPDATE in a subtransaction (lease_exec_change, acquire + release)"
	"BeginInternalSubTransaction|      BeginInternalSubTransaction"
	"ReleaseCurrentSubTransaction|      ReleaseCurrentSubTransaction"
	"lease_begin|    lease_begin (catalog lookups, SPI_connect)"
	"acquire_remember_grant|    acquire_remember_grant"
	"lease_queue_may_take|    lease_queue_may_take (wait-queue check, preloaded)"
	"xact_wake_pending|  xact_wake_pending (wake-up at the release's commit, preloaded)"
	"lease_release|  lease.release (lease_release)"
	"fmgr_security_definer|  fmgr_security_definer (SET clauses on functions: none any more, kept to show it)"
	"ProcessGUCArray|    ProcessGUCArray (applying SET clauses)"
	"AtEOXact_GUC|    AtEOXact_GUC (undoing them)"
	"SPI_execute_plan|  SPI_execute_plan (all statements run through SPI)"
	"GetCachedPlan|    GetCachedPlan (plan revalidation)"
	"standard_ExecutorStart|  standard_ExecutorStart (executor set-up, per statement)"
	"ExecInitNode|    ExecInitNode"
	"standard_ExecutorRun|  standard_ExecutorRun"
	"ExecScan|    ExecScan (index scans)"
	"heap_update|      heap_update"
	"heap_page_prune_opt|  heap_page_prune_opt (HOT pruning)"
	"nextval_internal|  nextval_internal (token sequence)"
	"CommitTransactionCommand|  CommitTransactionCommand"
	"XLogFlush|    XLogFlush (WAL write + fdatasync)"
	"fdatasync|      fdatasync (syscall, kernel + virtio)"
	"secure_read|  secure_read (reading the next query)"
	"__send|  send (the reply)"
)

RESULTS="$WORK/results.txt"   # system clients pairs/s cpu_us/pair walsyncs/pair walwrites/pair walbytes/pair
: >"$RESULTS"
PERF_TABLE=""
WAL_DETAIL=""
for clients in 1 8; do
	for sys in "${SYSTEMS[@]}"; do
		log "$sys, $clients client(s), ${SECONDS_PER_RUN} s"
		out="$WORK/$sys-$clients"
		read -r lsn0 x0 s0 w0 < <(snapshot)
		"$DRIVER" --pg-preload "$CONN" --pg-plain "$CONN" --redis 127.0.0.1:1 --reps 1 --max-redos 0 \
			--duration "$((SECONDS_PER_RUN - 1))" --warmup 1 --clients "$clients" --scenarios uncontended \
			--systems "$sys" --out-md "$out.md" --out-json "$out.json" --out-svg "$out.svg" 2>"$out.log" &
		driver_pid=$!
		perf_file=""
		if [ "$clients" = 1 ] && [ "$HAVE_PERF" = 1 ]; then
			sleep 1.5
			backend="$(ctl -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'lease_bench'")"
			[[ "$backend" =~ ^[0-9]+$ ]] || die "no single lease_bench backend found (got '$backend')"
			perf_file="$WORK/perf-$sys.data"
			perf record -e cpu-clock -F 1999 -g -p "$backend" -o "$perf_file" -- sleep "$((SECONDS_PER_RUN - 3))" \
				>/dev/null 2>&1 || die "perf record failed"
		fi
		wait "$driver_pid" || { cat "$out.log" >&2; die "the driver failed for $sys"; }
		sleep 1.5   # backends report their WAL and commit counters when they exit
		read -r lsn1 x1 s1 w1 < <(snapshot)
		pairs_s="$(grep -o '"pairs_per_s": [0-9.e+]*' "$out.json" | tail -1 | awk '{ print $2 }')"
		cpu="$(grep -o '"server_cpu_us_per_op": [0-9.e+]*' "$out.json" | tail -1 | awk '{ print $2 }')"
		# pairs in the whole run = commits / 2 (each call is its own transaction); the two
		# snapshot sessions commit one transaction each
		dump="$("$PG_WALDUMP" -p "$DIR/data/pg_wal" -s "$lsn0" -e "$lsn1" --stats=record 2>&1 || true)"
		awk -v x0="$x0" -v x1="$x1" -v s0="$s0" -v s1="$s1" -v w0="$w0" -v w1="$w1" -v sys="$sys" -v c="$clients" \
			-v ps="$pairs_s" -v cpu="$cpu" -v bytes="$(ctl -c "SELECT pg_wal_lsn_diff('$lsn1', '$lsn0')")" 'BEGIN {
			pairs = (x1 - x0 - 1) / 2
			printf "%s %s %.0f %.0f %.2f %.2f %.0f\n", sys, c, ps, cpu,
				(s1 - s0) / pairs, (w1 - w0) / pairs, bytes / pairs }' >>"$RESULTS"
		if [ "$clients" = 1 ]; then
			pairs="$(awk -v a="$x0" -v b="$x1" 'BEGIN { printf "%.0f", (b - a - 1) / 2 }')"
			top="$(printf '%s\n' "$dump" | awk -v n="$pairs" '
				/^[A-Za-z0-9]+\/[A-Za-z_0-9+]+ / {
					gsub(/\([^)]*\)/, "")
					if ($2 + 0 > 0) printf "%-26s %6.2f records/pair %6.0f bytes/pair\n", $1, $2 / n, $5 / n }' |
				sort -k2 -gr | head -8)"
			WAL_DETAIL+="
**${LABEL[$sys]}** (1 client, $pairs pairs, \`pg_waldump --stats=record\`):

\`\`\`
$top
\`\`\`
"
		fi
		if [ -n "$perf_file" ]; then
			report="$(perf report -i "$perf_file" --children --sort symbol --stdio -g none 2>/dev/null | grep '%' || true)"
			total="$(perf report -i "$perf_file" --stdio --sort pid 2>/dev/null | awk '/^# Samples:/ && !n { print $3; n = 1 }')"
			col=""
			for f in "${PERF_FUNCS[@]}"; do
				sym="${f%%|*}"
				# no early exit in awk: printf would die of SIGPIPE under pipefail
				pct="$(printf '%s\n' "$report" |
					awk -v s="$sym" '!done && ($NF == s || $(NF - 2) == s) { sub("%", "", $1); print $1; done = 1 }')"
				col+="${pct:-0}|"
			done
			echo "$sys|$cpu|$total|$col" >>"$WORK/perf.txt"
		fi
	done
done

# ---- EXPLAIN of the statements lease_spi.c runs (copied from its lease_queries[]) -------------------
log "EXPLAIN (ANALYZE, BUFFERS) of the acquire and release statements"
EXPLAIN="$(ctl <<EOF 2>&1 || echo "(a statement above failed)"
BEGIN;
\\echo '-- Q_TAKE_RELEASED (the first try of every acquire: take a released row), rolled back'
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF)
UPDATE lease.grants SET token = pg_catalog.nextval('lease.token_seq'::pg_catalog.regclass),
       expires_at = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) '30 s',
       granted_at = pg_catalog.clock_timestamp(), renewed_at = pg_catalog.clock_timestamp(),
       owner = 10, released = false, backend_pid = NULL, backend_start = NULL, holder = 'me'
 WHERE resource OPERATOR(pg_catalog.=) 'u/4242' AND released
   AND expires_at OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp()
 RETURNING token;
\\echo '-- Q_RELEASE, rolled back'
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF)
UPDATE lease.grants SET expires_at = pg_catalog.clock_timestamp(), released = true
 WHERE resource OPERATOR(pg_catalog.=) 'u/4242'
   AND expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()
   AND CASE WHEN backend_pid IS NULL THEN true ELSE lease.session_alive(backend_pid, backend_start) END
   AND (owner OPERATOR(pg_catalog.=) 10 OR true)
 RETURNING token;
ROLLBACK;
\\echo '-- for comparison: the handmade acquire (upsert), rolled back'
BEGIN;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF)
INSERT INTO handmade_lease AS l (resource, token, holder, expires_at)
VALUES ('u/4242', nextval('handmade_seq'), 'me', clock_timestamp() + '30 s')
ON CONFLICT (resource) DO UPDATE SET token = excluded.token, holder = excluded.holder, expires_at = excluded.expires_at
 WHERE l.expires_at < clock_timestamp()
RETURNING token;
ROLLBACK;
\\echo '-- call overhead: 2000 acquire+release pairs in one transaction (no WAL flush per call)'
\\timing on
SELECT count(lease.release('u/' || i, lease.acquire('u/' || i, '30 s'))) FROM generate_series(1, 2000) i;
\\echo '-- the same 2000 pairs as the handmade statements, each run through SPI by PL/pgSQL'
DO \$\$
BEGIN
	FOR i IN 2001..4000 LOOP
		INSERT INTO handmade_lease AS l (resource, token, holder, expires_at)
		VALUES ('u/' || i, nextval('handmade_seq'), 'me', clock_timestamp() + '30 s')
		ON CONFLICT (resource) DO UPDATE SET token = excluded.token, holder = excluded.holder,
		                                     expires_at = excluded.expires_at
		 WHERE l.expires_at < clock_timestamp();
		UPDATE handmade_lease SET expires_at = clock_timestamp() WHERE resource = 'u/' || i;
	END LOOP;
END
\$\$;
EOF
)"

# ---- report ---------------------------------------------------------------------------------------------
OUT="$BENCH_DIR/results/profile.md"
mkdir -p "$BENCH_DIR/results"
{
	echo "# Where an uncontended pg_lease pair spends its time"
	echo
	echo "- command: \`bench/profile.sh --seconds $SECONDS_PER_RUN\`; date $(date -u '+%Y-%m-%d %H:%M:%S UTC'); commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "- machine: $(nproc) CPUs, $(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo); fdatasync of 8 kB on /tmp: $FDATASYNC; load average at the end $(cut -d' ' -f1-3 /proc/loadavg) (shared machine)"
	echo "- one preloaded cluster (scripts/cluster.sh, fsync on, synchronous_commit on), $NRES released rows in lease.grants and handmade_lease, no checkpoint during the runs; each run: bench/build/lease_bench, uncontended pairs, 1 s warm-up + $((SECONDS_PER_RUN - 1)) s"
	echo
	echo "## Per pair"
	echo
	echo "| system | clients | pairs/s | backend CPU µs/pair | WAL flushes (wal_sync)/pair | WAL writes/pair | WAL bytes/pair |"
	echo "|---|---:|---:|---:|---:|---:|---:|"
	while read -r sys c ps cpu ws ww wb; do
		echo "| ${LABEL[$sys]} | $c | $ps | $cpu | $ws | $ww | $wb |"
	done <"$RESULTS"
	echo
	echo "Backend CPU: user + kernel time of the clients' backends in the measured window (the WAL write and"
	echo "fdatasync a backend does at its own commit included), per pair. pg_stat_wal and WAL bytes: whole run,"
	echo "warm-up included, per pair = per two committed transactions (each call is its own transaction)."
	if [ -f "$WORK/perf.txt" ]; then
		echo
		echo "## CPU profile of the backend, 1 client (perf, cpu-clock, inclusive)"
		echo
		echo "Share of the backend's on-CPU samples in which the function is on the stack, and that share of"
		echo "the backend CPU per pair. Postgres is built without frame pointers, so a few call chains are cut"
		echo "short: the shares are lower bounds. Static functions of postgres have no symbol and are not listed."
		echo
		header="| function |"; sep="|---|"
		while IFS='|' read -r sys _; do header+=" ${LABEL[$sys]} % | µs/pair |"; sep+="---:|---:|"; done <"$WORK/perf.txt"
		echo "$header"
		echo "$sep"
		i=0
		for f in "${PERF_FUNCS[@]}"; do
			i=$((i + 1))
			row="| \`${f#*|}\` |"
			while IFS='|' read -r sys cpu total rest; do
				pct="$(echo "$rest" | cut -d'|' -f"$i")"
				row+=" $pct | $(awk -v p="$pct" -v c="$cpu" 'BEGIN { printf "%.0f", p * c / 100 }') |"
			done <"$WORK/perf.txt"
			echo "$row" | sed 's/^| `  */| `/'
		done
	fi
	echo
	echo "## WAL records per pair"
	echo "$WAL_DETAIL"
	echo "## EXPLAIN (ANALYZE, BUFFERS) of the statements of extension/lease_spi.c, by hand"
	echo
	echo '```'
	echo "$EXPLAIN"
	echo '```'
} >"$OUT"
log "wrote $OUT"
