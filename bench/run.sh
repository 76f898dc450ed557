#!/usr/bin/env bash
# bench/run.sh -- pg_lease against advisory locks, a hand-written table lease,
# Redis and the durable floor, every scenario in one interleaved run.
#
#   bench/run.sh            5 repetitions, 2.5 s per run (5 s hot)   (< 15 min on 2 cores)
#   bench/run.sh --quick    3 repetitions, 0.3 s per run (1 s hot)   (< 2 min)
#
# Installs what is missing (Debian: redis-server, libhiredis-dev, PostgreSQL 15
# server and headers, g++), installs this checkout's extension if the installed one differs,
# builds bench/lease_bench.cpp into bench/build/, and starts its own throwaway
# servers, all stopped and removed at exit:
#   - a PostgreSQL cluster with shared_preload_libraries = 'pg_lease'
#     (pg_lease preloaded; also advisory locks, the handmade table, the floor)
#   - a PostgreSQL cluster without it (pg_lease not preloaded)
#   - redis-server on 127.0.0.1, no persistence
# It records the machine (CPU, fdatasync latency, load), fills the tables
# (100k resources; 1k and 1M for the scale scenario) and writes
# bench/results/latest.md, latest.json and latest.svg (the chart).  The
# machine is shared: a run during which other processes took more than 40 % of
# it is redone once (at most 4 in --quick, 30 in a full run), and reported.
#
# Settings (environment):
#   PGLEASE_BENCH_PORT_PRELOAD  port of the preloaded cluster  (default 54371)
#   PGLEASE_BENCH_PORT_PLAIN    port of the plain cluster      (default 54372)
#   PGLEASE_BENCH_REDIS_PORT    port of redis-server           (default 64379)
#   PGLEASE_BENCH_REPS, PGLEASE_BENCH_DURATION, PGLEASE_BENCH_HOT_DURATION,
#   PGLEASE_BENCH_WARMUP        override the repetitions and seconds per run
#   PGLEASE_BENCH_SCENARIOS     subset, e.g. "uncontended,hot" (default: all four)
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$BENCH_DIR/.." && pwd)"
T0="$(date +%s)"

die() { echo "run.sh: $*" >&2; exit 1; }
log() { echo "run.sh: [$(( $(date +%s) - T0 )) s] $*" >&2; }

QUICK=0
for arg in "$@"; do
	case "$arg" in
	--quick) QUICK=1 ;;
	-h | --help) sed -n '2,29p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument '$arg' (--quick, --help)" ;;
	esac
done

if [ "$QUICK" = 1 ]; then
	MODE=quick; def_reps=3; def_duration=0.3; def_hot=1; def_warmup=0.1; max_redos=4
else
	MODE=full; def_reps=5; def_duration=2.5; def_hot=5; def_warmup=0.5; max_redos=30
fi
PORT_PRE="${PGLEASE_BENCH_PORT_PRELOAD:-54371}"
PORT_PLAIN="${PGLEASE_BENCH_PORT_PLAIN:-54372}"
REDIS_PORT="${PGLEASE_BENCH_REDIS_PORT:-64379}"
REPS="${PGLEASE_BENCH_REPS:-$def_reps}"
DURATION="${PGLEASE_BENCH_DURATION:-$def_duration}"
HOT_DURATION="${PGLEASE_BENCH_HOT_DURATION:-$def_hot}"
WARMUP="${PGLEASE_BENCH_WARMUP:-$def_warmup}"
SCENARIOS="${PGLEASE_BENCH_SCENARIOS:-uncontended,hot,scale,renew}"
NRES=100000
SCALE_SMALL=1000
SCALE_LARGE=1000000
for v in PORT_PRE PORT_PLAIN REDIS_PORT REPS; do
	[[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
done
for v in DURATION HOT_DURATION WARMUP; do
	[[ "${!v}" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "$v must be a number of seconds, got '${!v}'"
done
[ "$PORT_PRE" != "$PORT_PLAIN" ] || die "the two PostgreSQL ports must differ"

# shellcheck source=bench/common.sh
. "$BENCH_DIR/common.sh"
bench_prerequisites

# ---- throwaway servers, always stopped ---------------------------------------------------
DIR_PRE=""; DIR_PLAIN=""; REDIS_DIR=""; REDIS_PID=""
cleanup() {
	if [ -n "$REDIS_PID" ]; then
		kill "$REDIS_PID" 2>/dev/null || true
		wait "$REDIS_PID" 2>/dev/null || true
	fi
	if [ -n "$DIR_PRE" ]; then
		PGLEASE_TEST_PORT="$PORT_PRE" "$CLUSTER" stop "$DIR_PRE" fast >/dev/null 2>&1 || true
		rm -rf "$DIR_PRE"
	fi
	if [ -n "$DIR_PLAIN" ]; then
		PGLEASE_TEST_PORT="$PORT_PLAIN" "$CLUSTER" stop "$DIR_PLAIN" fast >/dev/null 2>&1 || true
		rm -rf "$DIR_PLAIN"
	fi
	if [ -n "$REDIS_DIR" ]; then rm -rf "$REDIS_DIR"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the machine, before anything of ours runs -------------------------------------------------
NPROC="$(nproc)"
CPU_MODEL="$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
BUSY_START="$(cpu_busy_pct 1)"
log "machine: $NPROC CPUs ($CPU_MODEL), load $LOAD_START, CPU busy ${BUSY_START}% before the run"
FDATASYNC="$(measure_fdatasync)"
log "fdatasync of 8 kB on /tmp (pg_test_fsync -s 2): $FDATASYNC"


# ---- servers ---------------------------------------------------------------------------------------
if redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1; then
	die "something already answers on 127.0.0.1:$REDIS_PORT: set PGLEASE_BENCH_REDIS_PORT to a free port"
fi
DIR_PRE="$(mktemp -d /tmp/pglease-bench-pre.XXXXXX)"
DIR_PLAIN="$(mktemp -d /tmp/pglease-bench-plain.XXXXXX)"
REDIS_DIR="$(mktemp -d /tmp/pglease-bench-redis.XXXXXX)"
log "starting clusters (preloaded: port $PORT_PRE, plain: port $PORT_PLAIN) and redis-server (127.0.0.1:$REDIS_PORT)"
PGLEASE_TEST_PORT="$PORT_PRE" "$CLUSTER" start "$DIR_PRE" preload &
pid_pre=$!
PGLEASE_TEST_PORT="$PORT_PLAIN" "$CLUSTER" start "$DIR_PLAIN" nopreload &
pid_plain=$!
redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly no --dir "$REDIS_DIR" \
	--daemonize no --logfile "$REDIS_DIR/redis.log" --databases 4 &
REDIS_PID=$!
wait "$pid_pre" || die "the preloaded cluster did not start (see above)"
wait "$pid_plain" || die "the plain cluster did not start (see above)"
for _ in $(seq 1 100); do
	redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1 && break
	kill -0 "$REDIS_PID" 2>/dev/null || { cat "$REDIS_DIR/redis.log" >&2; die "redis-server exited"; }
	sleep 0.1
done
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1 || die "redis-server does not answer on port $REDIS_PORT"

# No checkpoint during the measurements: the tables are filled after the last one, so no
# run pays full-page images that an earlier run did not (see the note in latest.md).
for c in "$DIR_PRE:$PORT_PRE" "$DIR_PLAIN:$PORT_PLAIN"; do
	sql "${c%:*}" "${c##*:}" postgres \
		-c "ALTER SYSTEM SET checkpoint_timeout = '1d'" -c "ALTER SYSTEM SET max_wal_size = '32GB'" \
		-c "SELECT pg_reload_conf()" >/dev/null
	for db in bench scale_1k scale_1m; do
		sql "${c%:*}" "${c##*:}" postgres -c "CREATE DATABASE $db" >/dev/null
	done
done

# pg_lease must be in the mode each cluster claims: lease.stats() works only when preloaded
sql "$DIR_PRE" "$PORT_PRE" bench -c "CREATE EXTENSION pg_lease"
sql "$DIR_PRE" "$PORT_PRE" bench -c "SELECT lease.stats()" >/dev/null ||
	die "the cluster on port $PORT_PRE should have pg_lease preloaded, but lease.stats() fails"
sql "$DIR_PLAIN" "$PORT_PLAIN" bench -c "CREATE EXTENSION pg_lease"
if sql "$DIR_PLAIN" "$PORT_PLAIN" bench -c "SELECT lease.stats()" >/dev/null 2>&1; then
	die "the cluster on port $PORT_PLAIN should not have pg_lease preloaded, but lease.stats() works"
fi

log "filling the tables: $NRES resources for the runs, $SCALE_SMALL and $SCALE_LARGE for the scale runs"
jobs_pids=()
fill_lease "$DIR_PRE" "$PORT_PRE" scale_1m s/ "$SCALE_LARGE" & jobs_pids+=($!)
fill_lease "$DIR_PLAIN" "$PORT_PLAIN" scale_1m s/ "$SCALE_LARGE" & jobs_pids+=($!)
fill_handmade "$DIR_PRE" "$PORT_PRE" scale_1m s/ "$SCALE_LARGE" & jobs_pids+=($!)
(
	fill_lease "$DIR_PRE" "$PORT_PRE" bench u/ "$NRES"
	fill_statements "$DIR_PRE" "$PORT_PRE" bench
	fill_handmade "$DIR_PRE" "$PORT_PRE" bench u/ "$NRES"
	fill_floor "$DIR_PRE" "$PORT_PRE" bench
	fill_lease "$DIR_PLAIN" "$PORT_PLAIN" bench u/ "$NRES"
	for c in "$DIR_PRE:$PORT_PRE" "$DIR_PLAIN:$PORT_PLAIN"; do
		fill_lease "${c%:*}" "${c##*:}" scale_1k s/ "$SCALE_SMALL"
	done
	fill_handmade "$DIR_PRE" "$PORT_PRE" scale_1k s/ "$SCALE_SMALL"
	# Redis: the same number of other keys held, in logical databases 1 and 2
	fill='for i = 1, tonumber(ARGV[1]) do redis.call("SET", "held/" .. i, "x", "PX", 3600000) end return 1'
	redis-cli -h 127.0.0.1 -p "$REDIS_PORT" -n 1 EVAL "$fill" 0 "$SCALE_SMALL" >/dev/null
	redis-cli -h 127.0.0.1 -p "$REDIS_PORT" -n 2 EVAL "$fill" 0 "$SCALE_LARGE" >/dev/null
) & jobs_pids+=($!)
for p in "${jobs_pids[@]}"; do
	wait "$p" || die "filling the tables failed (see above)"
done
[ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" -n 2 DBSIZE)" = "$SCALE_LARGE" ] ||
	die "redis database 2 does not hold $SCALE_LARGE keys"
# the fill dirtied about a GB of page cache: write it out now, or the kernel's writeback
# lands in the first runs and stalls their WAL flushes
sync

# ---- what the report records about the setup ------------------------------------------------------------
PG_VERSION="$(sql "$DIR_PRE" "$PORT_PRE" postgres -c 'SELECT version()')"
REDIS_VERSION="$(redis-server --version | sed 's/ sha=.*//')"
SETTINGS="$(sql "$DIR_PRE" "$PORT_PRE" postgres -c "SELECT string_agg(name || '=' || current_setting(name), ', ' ORDER BY name)
	FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'wal_sync_method', 'full_page_writes', 'shared_buffers',
	                                'checkpoint_timeout', 'max_wal_size', 'max_connections', 'autovacuum')")"
COMMIT="$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git -C "$REPO" status --porcelain -- extension 2>/dev/null | head -1)" ]; then
	COMMIT="$COMMIT (extension/ has uncommitted changes)"
fi
CMD="bench/run.sh"
[ "$QUICK" = 0 ] || CMD="$CMD --quick"
for v in PGLEASE_BENCH_PORT_PRELOAD PGLEASE_BENCH_PORT_PLAIN PGLEASE_BENCH_REDIS_PORT PGLEASE_BENCH_REPS \
	PGLEASE_BENCH_DURATION PGLEASE_BENCH_HOT_DURATION PGLEASE_BENCH_WARMUP PGLEASE_BENCH_SCENARIOS; do
	[ -z "${!v:-}" ] || CMD="$v='${!v}' $CMD"
done

OUT="$BENCH_DIR/results"
mkdir -p "$OUT"
log "setup done; measuring ($MODE: $REPS repetitions)"
"$DRIVER" \
	--pg-preload "$(conninfo "$DIR_PRE" "$PORT_PRE")" --pg-plain "$(conninfo "$DIR_PLAIN" "$PORT_PLAIN")" \
	--redis "127.0.0.1:$REDIS_PORT" \
	--reps "$REPS" --duration "$DURATION" --hot-duration "$HOT_DURATION" --warmup "$WARMUP" \
	--max-foreign 40 --max-redos "$max_redos" \
	--resources "$NRES" --scale "$SCALE_SMALL,$SCALE_LARGE" --scenarios "$SCENARIOS" \
	--mode "$MODE" --command "$CMD" \
	--meta "command=\`$CMD\` (from the repository root)" \
	--meta "date=$(date -u '+%Y-%m-%d %H:%M:%S UTC'); commit $COMMIT" \
	--meta "machine=$NPROC CPUs, $CPU_MODEL; fdatasync of one 8 kB write on /tmp (\`pg_test_fsync -s 2\`, stopped after that line): $FDATASYNC" \
	--meta "load before the run=load average $LOAD_START, CPU busy $BUSY_START % over 1 s (the machine is shared with other engineers' tests; the per-run load is in the tables)" \
	--meta "PostgreSQL=$PG_VERSION; two throwaway clusters from scripts/cluster.sh on Unix sockets: preloaded (port $PORT_PRE: pg_lease preloaded, advisory, handmade, the floors) and plain (port $PORT_PLAIN: pg_lease not preloaded)" \
	--meta "settings=$SETTINGS" \
	--meta "Redis=$REDIS_VERSION, throwaway \`redis-server\` on 127.0.0.1:$REDIS_PORT (TCP loopback), \`--save '' --appendonly no\`; client libhiredis" \
	--note "tables filled before the runs: lease.grants by a direct INSERT as superuser of released rows (token = row number, then \`setval('lease.token_seq', max(token))\`; the \`hot\` row is then made by \`lease.acquire\`, which checks the sequence is past every token), handmade_lease by an INSERT of released rows" \
	--note "no checkpoint during the measurements (\`checkpoint_timeout = 1d\`, \`max_wal_size = 32GB\`, tables filled after the last checkpoint): no run pays full-page images, so a run does not depend on what ran before it; a production server would add them after each checkpoint, to every table-based system alike" \
	--out-md "$OUT/latest.md" --out-json "$OUT/latest.json" --out-svg "$OUT/latest.svg" ||
	die "the benchmark driver failed"

log "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
sed -n '/^## Targets/,/^## 1\./p' "$OUT/latest.md" | sed '$d' >&2
log "wrote $OUT/latest.md, $OUT/latest.json and $OUT/latest.svg"
