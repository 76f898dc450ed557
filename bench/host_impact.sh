#!/usr/bin/env bash
# bench/host_impact.sh -- what lease pairs cost the database they live in
# (issue 38): pgbench's TPC-B (scale 10, 8 clients) alone, and beside
# acquire+release pairs at a fixed rate (500/s and 2,000/s: pgbench --rate) on
# the same cluster; then the same pairs alone, for the WAL and the server CPU
# each pair costs.  One run, the phases interleaved within each repetition (the
# order rotating), on a throwaway preloaded cluster of its own (scripts/cluster.sh,
# Unix socket), checkpointed before each phase that runs TPC-B.  Writes bench/results/host-impact.md.
#
#   TPS ratio      TPC-B's transactions/s beside the pairs over alone (medians)
#   WAL per pair   pg_current_wal_lsn's advance over the pairs-alone phase / pairs
#   CPU per pair   the server's CPU (the postmaster and every process it started,
#                  exited ones through the postmaster's cutime+cstime) over the
#                  pairs-alone phase / pairs
#
# Settings (environment): PGLEASE_IMPACT_DURATION (s per phase, default 20),
# PGLEASE_IMPACT_REPS (default 3), PGLEASE_IMPACT_RATES (default "500 2000"),
# PGLEASE_IMPACT_OUT (report name under bench/results/, default host-impact).
# Installs nothing: it stops, saying how to get them, without pgbench or
# pg_lease installed ('make deps', 'make install').
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$BENCH_DIR/.." && pwd)"
source "$REPO/scripts/lib/common.sh" # die, psql_q, on_exit, work_dir
log() { echo "host_impact.sh: $*" >&2; }

DURATION="${PGLEASE_IMPACT_DURATION:-20}"
REPS="${PGLEASE_IMPACT_REPS:-3}"
read -r -a RATES <<<"${PGLEASE_IMPACT_RATES:-500 2000}"
OUT_MD="$BENCH_DIR/results/${PGLEASE_IMPACT_OUT:-host-impact}.md"
NRES=10000 SCALE=10 TPCB_CLIENTS=8
for v in DURATION REPS; do
	[[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
done

command -v pg_config >/dev/null 2>&1 || die "pg_config not found: run 'make deps'"
BIN="$(pg_config --bindir)"
for tool in pgbench psql; do
	[ -x "$BIN/$tool" ] || die "$tool not found in $BIN: run 'make deps' (postgresql-15)"
done
[ -f "$(pg_config --pkglibdir)/pg_lease.so" ] && [ -f "$(pg_config --sharedir)/extension/pg_lease.control" ] ||
	die "pg_lease is not installed in $(pg_config --pkglibdir): run 'make install' in $REPO"

work_dir pglease-impact
on_exit '"$REPO/scripts/cluster.sh" stop "$WORK/pg" fast >/dev/null 2>&1 || true'
log "starting a preloaded cluster in $WORK/pg"
"$REPO/scripts/cluster.sh" start "$WORK/pg" preload >/dev/null
eval "$("$REPO/scripts/cluster.sh" env "$WORK/pg")"
export PGHOST PGPORT PGUSER PGDATABASE
psql_q -c "ALTER SYSTEM SET checkpoint_timeout = '1h'" -c "ALTER SYSTEM SET max_wal_size = '8GB'" \
	-c "SELECT pg_reload_conf()" >/dev/null
log "pgbench -i -s $SCALE; $NRES released locks"
"$BIN/pgbench" -i -q -s "$SCALE" >"$WORK/init.log" 2>&1 || { cat "$WORK/init.log"; die "pgbench -i failed"; }
psql_q -v n="$NRES" <<'EOF' >/dev/null
CREATE EXTENSION pg_lease;
SELECT count(lease.release('bench/' || i, lease.acquire('bench/' || i, '30 s')))
  FROM generate_series(1, :n) i;
VACUUM ANALYZE;
EOF
cp "$BENCH_DIR/pgbench/pg_lease.sql" "$WORK/pair.sql"

POSTMASTER="$(head -1 "$WORK/pg/data/postmaster.pid")"
# server_cpu -- clock ticks of the postmaster, its live children and its exited ones
server_cpu() {
	local total p
	total="$(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$POSTMASTER/stat")"
	for p in $(pgrep -P "$POSTMASTER"); do
		total=$((total + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo "$total"
}
TICKS="$(getconf CLK_TCK)"
wal_lsn() { psql_q -c "SELECT pg_current_wal_lsn()"; }

# tps LOG -- pgbench's transactions per second, checking nothing failed
tps() {
	grep -q 'number of failed transactions: 0' "$1" || { cat "$1" >&2; die "failed transactions ($1)"; }
	sed -n 's/^tps = \([0-9.]*\) (without initial connection time)$/\1/p' "$1"
}
# pairs_at RATE LOG -- lease pairs at RATE/s for the phase (a client per 100/s)
pairs_at() {
	local c=$(( $1 / 100 < 2 ? 2 : $1 / 100 ))
	PGAPPNAME=lease "$BIN/pgbench" -n -M prepared -c "$c" -j 1 -R "$1" -T "$DURATION" -D nres="$NRES" \
		-f "$WORK/pair.sql" >"$2" 2>&1
}
tpcb() { "$BIN/pgbench" -n -M prepared -c "$TPCB_CLIENTS" -j 2 -T "$DURATION" >"$1" 2>&1; }

RESULTS="$WORK/results" # lines: phase rep value...
# phase NAME REP -- one measurement
phase() {
	local name="$1" rep="$2" rate="${1#*_}" log="$WORK/$1.$2" pid l0 l1 c0 c1 n
	# TPC-B starts each phase from a checkpoint; the pairs alone do not, so that their
	# WAL is not mostly the first full-page image of each page after one
	[[ "$name" == pairs_* ]] || psql_q -c CHECKPOINT >/dev/null
	case "$name" in
	alone) tpcb "$log.tpcb" || die "pgbench TPC-B failed"; echo "alone $rep $(tps "$log.tpcb")" >>"$RESULTS" ;;
	beside_*)
		pairs_at "$rate" "$log.pairs" & pid=$!
		tpcb "$log.tpcb" || die "pgbench TPC-B failed"
		wait "$pid" || { cat "$log.pairs"; die "the lease pairs failed"; }
		echo "$name $rep $(tps "$log.tpcb") $(tps "$log.pairs")" >>"$RESULTS" ;;
	pairs_*)
		l0="$(wal_lsn)" c0="$(server_cpu)"
		pairs_at "$rate" "$log.pairs" || { cat "$log.pairs"; die "the lease pairs failed"; }
		l1="$(wal_lsn)" c1="$(server_cpu)"
		n="$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$log.pairs")"
		echo "$name $rep $(tps "$log.pairs") $(psql_q -c "SELECT pg_wal_lsn_diff('$l1', '$l0') / $n") \
$(awk -v c="$((c1 - c0))" -v t="$TICKS" -v n="$n" 'BEGIN { printf "%.1f", 1e6 * c / t / n }')" >>"$RESULTS" ;;
	esac
	log "rep $rep $name: $(tail -1 "$RESULTS" | cut -d' ' -f3-)"
}

PHASES=(alone)
for r in "${RATES[@]}"; do PHASES+=("beside_$r" "pairs_$r"); done
for rep in $(seq 1 "$REPS"); do
	for k in $(seq 0 $((${#PHASES[@]} - 1))); do
		phase "${PHASES[$(( (k + rep - 1) % ${#PHASES[@]} ))]}" "$rep"
	done
done

# median COLUMN PHASE
median() {
	awk -v p="$2" -v c="$1" '$1 == p { print $c }' "$RESULTS" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR == 0) { print "nan"; exit }
			printf "%.1f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
alone="$(median 3 alone)"
TABLE="| lease pairs beside | TPC-B tps (median) | ratio to alone | pairs/s reached | WAL bytes per pair | server CPU µs per pair |
|---|---:|---:|---:|---:|---:|
| none | $alone | 1.00 | – | – | – |"
for r in "${RATES[@]}"; do
	t="$(median 3 "beside_$r")"
	TABLE+="
| $r/s | $t | $(awk -v a="$t" -v b="$alone" 'BEGIN { printf "%.2f", a / b }') | $(median 4 "beside_$r") | $(median 4 "pairs_$r") | $(median 5 "pairs_$r") |"
done
mkdir -p "$(dirname "$OUT_MD")"
{
	echo "# Host impact: pgbench TPC-B beside lease pairs"
	echo
	echo "- command: \`bench/host_impact.sh\` (PGLEASE_IMPACT_DURATION=$DURATION, PGLEASE_IMPACT_REPS=$REPS, PGLEASE_IMPACT_RATES='${RATES[*]}')"
	echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown); $(nproc) CPUs, load before the end $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- server: $(psql_q -c 'SELECT version()'); one preloaded cluster (scripts/cluster.sh), fsync on, checkpoint before each phase that runs TPC-B"
	echo "- TPC-B: \`pgbench -n -M prepared -c $TPCB_CLIENTS -j 2 -T $DURATION\` on \`pgbench -i -s $SCALE\`;"
	echo "  pairs: \`pgbench -n -M prepared -R RATE -c RATE/100 -f bench/pgbench/pg_lease.sql\` over $NRES resources, beside it and then alone"
	echo "- WAL and CPU per pair from the pairs-alone phase (WAL position, and the server's CPU from /proc)"
	echo
	echo "$TABLE"
	echo
	echo "Every phase (phase rep TPC-B-tps [pairs/s] | pairs-alone: pairs/s WAL-bytes CPU-µs):"
	echo
	echo '```'
	cat "$RESULTS"
	echo '```'
} >"$OUT_MD"
cat "$OUT_MD"
log "wrote $OUT_MD"
