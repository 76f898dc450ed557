#!/usr/bin/env bash
# bench/pgbench.sh -- pgbench comparison of acquire+release pairs:
#   pg_lease   lease.acquire / lease.release            (bench/pgbench/pg_lease.sql)
#   advisory   pg_advisory_lock / pg_advisory_unlock    (bench/pgbench/advisory.sql)
#   handmade   upsert into a hand-written lease table   (bench/pgbench/handmade.sql)
#   handmade_asyncrel  the same, release committed with synchronous_commit=off as
#              pg_lease does for release-only transactions (bench/pgbench/handmade_asyncrel.sql)
#
# Each pgbench "transaction" is one script = one pair of autocommit statements.
# Starts its own throwaway preloaded cluster (scripts/cluster.sh), runs every
# system at each client count, interleaved round-robin within each repetition,
# then measures WAL per pair (pg_stat_wal and pg_waldump) in a separate phase.
# Writes bench/results/pgbench.md (and raw pgbench logs under bench/results/raw/).
#
# Settings (environment):
#   PGLEASE_BENCH_SYSTEMS   systems to run (default "pg_lease advisory handmade handmade_asyncrel")
#   PGLEASE_BENCH_PORT      socket name of the throwaway cluster (default 5432;
#                           it listens on a Unix socket in its own directory only)
#   PGLEASE_BENCH_DURATION  seconds per pgbench run           (default 10)
#   PGLEASE_BENCH_REPS      repetitions                       (default 5)
#   PGLEASE_BENCH_CLIENTS   client counts, space separated    (default "1 8")
#   PGLEASE_BENCH_NRES      number of distinct resources      (default 10000)
#   PGLEASE_BENCH_WAL_PAIRS pairs per system in the WAL phase (default 5000; 0 skips it)
#   PGLEASE_BENCH_OUT       name of the report under bench/results/ (default pgbench)
#
# One hot resource (8 clients taking turns, beside an advisory lock):
#   PGLEASE_BENCH_SYSTEMS="pg_lease_hot advisory_hot" PGLEASE_BENCH_CLIENTS=8 \
#   PGLEASE_BENCH_WAL_PAIRS=0 PGLEASE_BENCH_OUT=pgbench-hot bench/pgbench.sh
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$BENCH_DIR/.." && pwd)"
PORT="${PGLEASE_BENCH_PORT:-5432}"
DURATION="${PGLEASE_BENCH_DURATION:-10}"
REPS="${PGLEASE_BENCH_REPS:-5}"
CLIENTS="${PGLEASE_BENCH_CLIENTS:-1 8}"
NRES="${PGLEASE_BENCH_NRES:-10000}"
WAL_PAIRS="${PGLEASE_BENCH_WAL_PAIRS:-5000}"
read -r -a SYSTEMS <<<"${PGLEASE_BENCH_SYSTEMS:-pg_lease advisory handmade handmade_asyncrel}"
[ "${#SYSTEMS[@]}" -ge 1 ] || die "PGLEASE_BENCH_SYSTEMS is empty"
OUT_DIR="$BENCH_DIR/results"
OUT_MD="$OUT_DIR/${PGLEASE_BENCH_OUT:-pgbench}.md"
RAW_DIR="$OUT_DIR/raw"

source "$REPO/scripts/lib/common.sh" # die, psql_q, on_exit
log() { echo "pgbench.sh: $*" >&2; }

# ---- prerequisites -----------------------------------------------------------
command -v pg_config >/dev/null 2>&1 ||
	die "pg_config not found: install postgresql-server-dev-15 / postgresql-15 (scripts/install-deps.sh)"
PG_BINDIR="$(pg_config --bindir)"
for tool in pgbench psql pg_waldump; do
	[ -x "$PG_BINDIR/$tool" ] || die "$tool not found in $PG_BINDIR: install postgresql-15 and postgresql-client-15"
done
PGBENCH="$PG_BINDIR/pgbench"
PSQL="$PG_BINDIR/psql"
PG_WALDUMP="$PG_BINDIR/pg_waldump"
CLUSTER="$REPO/scripts/cluster.sh"
[ -x "$CLUSTER" ] || die "$CLUSTER not found or not executable"
[ -f "$(pg_config --sharedir)/extension/pg_lease.control" ] ||
	die "pg_lease is not installed: run 'make && make install' in $REPO"
[ -f "$(pg_config --pkglibdir)/pg_lease.so" ] ||
	die "pg_lease.so is not installed: run 'make && make install' in $REPO"
for s in "${SYSTEMS[@]}"; do
	[ -f "$BENCH_DIR/pgbench/$s.sql" ] || die "missing script $BENCH_DIR/pgbench/$s.sql"
done
for v in DURATION REPS NRES WAL_PAIRS PORT; do
	[[ "${!v}" =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer, got '${!v}'"
done
for c in $CLIENTS; do
	[[ "$c" =~ ^[1-9][0-9]*$ ]] || die "PGLEASE_BENCH_CLIENTS must list positive integers, got '$CLIENTS'"
done
[ "$REPS" -ge 1 ] && [ "$DURATION" -ge 1 ] || die "PGLEASE_BENCH_REPS and PGLEASE_BENCH_DURATION must be >= 1"

# ---- throwaway cluster --------------------------------------------------------
CLUSTER_DIR="$(mktemp -d /tmp/pglease-bench.XXXXXX)"
on_exit 'rm -rf "$CLUSTER_DIR"'
on_exit 'PGLEASE_TEST_PORT="$PORT" "$CLUSTER" stop "$CLUSTER_DIR" fast >/dev/null 2>&1 || true'

log "starting cluster in $CLUSTER_DIR on port $PORT"
PGLEASE_TEST_PORT="$PORT" "$CLUSTER" start "$CLUSTER_DIR" preload
eval "$(PGLEASE_TEST_PORT="$PORT" "$CLUSTER" env "$CLUSTER_DIR")"
export PGHOST PGPORT PGUSER PGDATABASE

sql() { psql_q "$@"; }

sql <<'EOF'
CREATE EXTENSION pg_lease;
CREATE SEQUENCE handmade_seq;
CREATE TABLE handmade_lease(resource text PRIMARY KEY, token bigint NOT NULL,
                            holder text, expires_at timestamptz NOT NULL);
EOF
# Pre-populate both tables with every resource, released, so all runs measure the
# steady state (update of an existing row) rather than first-time inserts.
sql -v nres="$NRES" <<'EOF'
SELECT count(lease.release('bench/' || i, lease.acquire('bench/' || i, '30 s')))
  FROM generate_series(1, :nres) i \g /dev/null
INSERT INTO handmade_lease
  SELECT 'bench/' || i, nextval('handmade_seq'), 'me', clock_timestamp()
  FROM generate_series(1, :nres) i;
VACUUM ANALYZE lease.grants;
VACUUM ANALYZE handmade_lease;
CHECKPOINT;
EOF

PG_VERSION="$(sql -c 'SELECT version()')"
SETTINGS="$(sql -c "SELECT string_agg(name || '=' || setting, ', ' ORDER BY name) FROM pg_settings
                    WHERE name IN ('fsync','synchronous_commit','wal_sync_method','full_page_writes',
                                   'shared_buffers','checkpoint_timeout','max_wal_size')")"
NPROC="$(nproc)"
DATE="$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
COMMIT="$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
DIRTY="$(git -C "$REPO" status --porcelain -- extension 2>/dev/null | head -1)"
[ -z "$DIRTY" ] || COMMIT="$COMMIT (extension/ has uncommitted changes)"

mkdir -p "$RAW_DIR"
RESULTS="$(mktemp)"   # lines: system clients rep tps
on_exit 'rm -f "$RESULTS"'

run_pgbench() {   # system clients duration-args... -> prints tps
	local sys="$1" c="$2" logf="$3"; shift 3
	if ! "$PGBENCH" -n -M prepared "$@" -c "$c" -j "$c" -D nres="$NRES" \
		-f "$BENCH_DIR/pgbench/$sys.sql" >"$logf" 2>&1; then
		cat "$logf" >&2
		die "pgbench failed for $sys at $c clients (log: $logf)"
	fi
	local failed
	failed="$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$logf")"
	[ "${failed:-0}" = 0 ] || { cat "$logf" >&2; die "$sys at $c clients: $failed failed transactions"; }
	grep -q 'aborted' "$logf" && { cat "$logf" >&2; die "$sys at $c clients: a client aborted"; }
	sed -n 's/^tps = \([0-9.]*\) (without initial connection time)$/\1/p' "$logf"
}

# ---- throughput phase -----------------------------------------------------------
nsys=${#SYSTEMS[@]}
total=$(( REPS * $(wc -w <<<"$CLIENTS") * nsys ))
n=0
for rep in $(seq 1 "$REPS"); do
	for c in $CLIENTS; do
		# round-robin; the starting system rotates each repetition to spread order effects
		for k in $(seq 0 $((nsys - 1))); do
			sys="${SYSTEMS[$(( (k + rep - 1) % nsys ))]}"
			n=$((n + 1))
			logf="$RAW_DIR/${sys}_c${c}_rep${rep}.log"
			tps="$(run_pgbench "$sys" "$c" "$logf" -T "$DURATION")"
			[ -n "$tps" ] || { cat "$logf" >&2; die "no tps line in pgbench output ($logf)"; }
			echo "$sys $c $rep $tps" >>"$RESULTS"
			log "[$n/$total] rep $rep  clients $c  $sys: $tps pairs/s"
		done
	done
done
cp "$RESULTS" "$RAW_DIR/tps.txt"

# median min max of the tps for one system and client count
stats() {
	awk -v s="$1" -v c="$2" '$1 == s && $2 == c { print $4 }' "$RESULTS" | sort -g |
		awk '{ v[NR] = $1 } END {
			if (NR == 0) { print "nan nan nan"; exit }
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.0f %.0f %.0f\n", m, v[1], v[NR] }'
}
declare -A MED
TABLE="| system | clients | median pairs/s | min–max pairs/s |
|---|---:|---:|---:|"
for c in $CLIENTS; do
	for sys in "${SYSTEMS[@]}"; do
		read -r med lo hi < <(stats "$sys" "$c")
		MED["$sys,$c"]="$med"
		TABLE+="
| $sys | $c | $med | $lo–$hi |"
	done
done
RATIOS=""
# the first system over each other one, at each client count
SUBJECT="${SYSTEMS[0]}"
if [ "${#SYSTEMS[@]}" -ge 2 ]; then
	RATIOS="| clients |"; sep="|---:|"
	for sys in "${SYSTEMS[@]:1}"; do
		RATIOS+=" $SUBJECT / $sys |"; sep+="---:|"
	done
	RATIOS+="
$sep"
	for c in $CLIENTS; do
		RATIOS+="
| $c |"
		for sys in "${SYSTEMS[@]:1}"; do
			RATIOS+=" $(awk -v a="${MED[$SUBJECT,$c]}" -v b="${MED[$sys,$c]}" 'BEGIN { printf (a / b < 0.1 ? "%.3f" : "%.2f"), a / b }') |"
		done
	done
fi

# ---- WAL-per-pair phase -------------------------------------------------------------
# One client, a fixed number of pairs, after an unmeasured warm-up of the same size
# (so every heap/index page already had its post-checkpoint full-page image).
WAL_TABLE=""
WAL_DETAIL=""
if [ "$WAL_PAIRS" -gt 0 ]; then
	WAL_TABLE="| system | WAL records/pair | WAL bytes/pair | of which FPI bytes | FPI/pair | WAL fsyncs/pair | commits/pair |
|---|---:|---:|---:|---:|---:|---:|"
	walsnap() {
		sql -F ' ' -c "SELECT w.wal_records, w.wal_bytes, w.wal_fpi, w.wal_sync, d.xact_commit,
		                      pg_current_wal_insert_lsn()
		               FROM pg_stat_wal w, pg_stat_database d WHERE d.datname = current_database()"
	}
	for sys in "${SYSTEMS[@]}"; do
		sql -c CHECKPOINT
		run_pgbench "$sys" 1 "$RAW_DIR/${sys}_wal_warmup.log" -t "$WAL_PAIRS" >/dev/null
		sleep 1
		read -r r0 b0 f0 s0 x0 l0 < <(walsnap)
		run_pgbench "$sys" 1 "$RAW_DIR/${sys}_wal.log" -t "$WAL_PAIRS" >/dev/null
		sleep 1   # backend stats reach shared memory at backend exit
		read -r r1 b1 f1 s1 x1 l1 < <(walsnap)
		# record types between the two LSNs (root or the postgres user can read pg_wal)
		dump="$("$PG_WALDUMP" -p "$CLUSTER_DIR/data/pg_wal" -s "$l0" -e "$l1" --stats=record 2>&1 || true)"
		printf '%s\n' "$dump" >"$RAW_DIR/${sys}_waldump_stats.txt"
		fpib="$(printf '%s\n' "$dump" | awk -v n="$WAL_PAIRS" '
			/^[A-Za-z0-9]+\/[A-Za-z_0-9+]+ / { gsub(/\([^)]*\)/, ""); t += $4 }
			END { printf "%.0f", t / n }')"
		# the two snapshot sessions' own commits (1 each) are subtracted
		WAL_TABLE+="
| $sys | $(awk -v a="$r0" -v b="$r1" -v n="$WAL_PAIRS" 'BEGIN { printf "%.2f", (b - a) / n }') | $(awk -v a="$b0" -v b="$b1" -v n="$WAL_PAIRS" 'BEGIN { printf "%.0f", (b - a) / n }') | $fpib | $(awk -v a="$f0" -v b="$f1" -v n="$WAL_PAIRS" 'BEGIN { printf "%.3f", (b - a) / n }') | $(awk -v a="$s0" -v b="$s1" -v n="$WAL_PAIRS" 'BEGIN { printf "%.2f", (b - a) / n }') | $(awk -v a="$x0" -v b="$x1" -v n="$WAL_PAIRS" 'BEGIN { printf "%.2f", (b - a - 1) / n }') |"
		# lines: Type N (%) Record-size (%) FPI-size (%) Combined-size (%)
		top="$(printf '%s\n' "$dump" | awk -v n="$WAL_PAIRS" '
			/^[A-Za-z0-9]+\/[A-Za-z_0-9+]+ / {
				gsub(/\([^)]*\)/, "")
				if ($2 + 0 > 0) printf "%-28s %6.2f rec/pair %6.0f B/pair (%.0f B FPI)\n", $1 ":", $2 / n, $5 / n, $4 / n }' |
			sort -k2 -gr | head -8)"
		[ -n "$top" ] || top="(no WAL records)"
		WAL_DETAIL+="
**$sys** (pg_waldump --stats=record over the $WAL_PAIRS measured pairs; bytes are record+FPI):

\`\`\`
$top
\`\`\`
"
		log "WAL measured for $sys"
	done
fi

# ---- report ----------------------------------------------------------------------
mkdir -p "$OUT_DIR"
CMD="bench/pgbench.sh"
for v in PGLEASE_BENCH_SYSTEMS PGLEASE_BENCH_PORT PGLEASE_BENCH_DURATION PGLEASE_BENCH_REPS PGLEASE_BENCH_CLIENTS PGLEASE_BENCH_NRES PGLEASE_BENCH_WAL_PAIRS; do
	[ -z "${!v:-}" ] || CMD="$v='${!v}' $CMD"
done
{
	echo "# pgbench: acquire+release pairs"
	echo
	echo "- command: \`$CMD\` (from the repository root)"
	echo "- date: $DATE; commit: $COMMIT"
	echo "- nproc: $NPROC"
	echo "- server: $PG_VERSION"
	echo "- settings: $SETTINGS (cluster from scripts/cluster.sh, preloaded)"
	echo "- each run: \`pgbench -n -M prepared -T $DURATION -c N -j N -D nres=$NRES -f bench/pgbench/<system>.sql\`;"
	echo "  $REPS repetitions, systems interleaved round-robin within each repetition"
	echo "- one pgbench transaction = one script = one acquire + one release, each its own"
	echo "  autocommit statement; resources drawn uniformly from $NRES (tables pre-populated)"
	echo "- pg_lease commits a release-only transaction with synchronous_commit=off (docs/guarantees.md,"
	echo "  \"Limits\"), acquires are flushed; handmade flushes both,"
	echo "  handmade_asyncrel flushes only the acquire (release via set_config(..., true))"
	echo
	echo "## Throughput (pairs/s, median and min–max over $REPS runs)"
	echo
	echo "$TABLE"
	echo
	if [ -n "$RATIOS" ]; then
		echo "## Ratios of medians"
		echo
		echo "$RATIOS"
	fi
	if [ -n "$WAL_TABLE" ]; then
		echo
		echo "## WAL per pair (1 client, $WAL_PAIRS pairs after a warm-up of $WAL_PAIRS)"
		echo
		echo "$WAL_TABLE"
		echo "$WAL_DETAIL"
	fi
} >"$OUT_MD"
cat "$OUT_MD"
log "wrote $OUT_MD"
