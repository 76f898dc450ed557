#!/usr/bin/env bash
# bench/run.sh -- one benchmark across every provider, one interleaved run:
# pg_lease (preloaded and not), Redis (no persistence, and appendfsync always),
# Redlock on 3 Redis servers, etcd, ZooKeeper and memory, all through
# pglease::connect(url); and the baselines that explain them: advisory locks,
# a hand-written table lease, the durable floor, raw etcd and ZooKeeper clients.
#
#   bench/run.sh            5 repetitions, 1.5 s per run (3 s hot)   (about 13 min on 2 cores)
#   bench/run.sh --quick    2 repetitions, 0.3 s per run (1 s hot)   (under 3 min)
#
# Installs nothing: when a tool or library is missing, or the installed extension
# differs from this checkout's, it stops and says so ('make deps', 'make install').
# It builds the client libraries and
# its driver (the CMake target pglease_bench, build/client/pglease_bench), and starts its own throwaway servers, all stopped and
# removed at exit: two PostgreSQL clusters (scripts/cluster.sh, with and without
# shared_preload_libraries = 'pg_lease'), five redis-server (one plain, one
# with appendfsync always, three for Redlock), one etcd member
# (scripts/etcd.sh: etcd's default fsync) and one ZooKeeper server
# (scripts/zookeeper.sh: default forceSync=yes); the clusters on Unix sockets
# in their directories, every other server on a loopback port drawn free when
# it starts (free_port, scripts/lib/ports.sh; a new one if its bind fails).
# It fills the tables (100k resources; 1k and 1M for the scale scenario) and
# writes bench/results/latest.md, latest.json and latest.svg (the chart).
#
# Settings (environment):
#   PGLEASE_BENCH_REPS, PGLEASE_BENCH_DURATION, PGLEASE_BENCH_HOT_DURATION,
#   PGLEASE_BENCH_WARMUP        override the repetitions and seconds per run
#   PGLEASE_BENCH_SCENARIOS     subset, e.g. "uncontended,hot" (default: all four)
#   PGLEASE_BENCH_SYSTEMS       subset of the systems by key, e.g. "zookeeper,zookeeper_raw"
#                               (default: all; keys in bench/bench.cpp)
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$BENCH_DIR/.." && pwd)"
T0="$(date +%s)"

source "$REPO/scripts/lib/common.sh" # die, psql_q, on_exit, work_dir
log() { echo "run.sh: [$(( $(date +%s) - T0 )) s] $*" >&2; }

QUICK=0
for arg in "$@"; do
	case "$arg" in
	--quick) QUICK=1 ;;
	-h | --help) sed -n '2,30p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument '$arg' (--quick, --help)" ;;
	esac
done

if [ "$QUICK" = 1 ]; then
	MODE=quick; def_reps=2; def_duration=0.3; def_hot=1; def_warmup=0.1
else
	MODE=full; def_reps=5; def_duration=1.5; def_hot=3; def_warmup=0.3
fi
REPS="${PGLEASE_BENCH_REPS:-$def_reps}"
DURATION="${PGLEASE_BENCH_DURATION:-$def_duration}"
HOT_DURATION="${PGLEASE_BENCH_HOT_DURATION:-$def_hot}"
WARMUP="${PGLEASE_BENCH_WARMUP:-$def_warmup}"
SCENARIOS="${PGLEASE_BENCH_SCENARIOS:-uncontended,hot,scale,renew}"
SYSTEMS="${PGLEASE_BENCH_SYSTEMS:-}"
NRES=100000
for v in REPS; do
	[[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
done
for v in DURATION HOT_DURATION WARMUP; do
	[[ "${!v}" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "$v must be a number of seconds, got '${!v}'"
done
# the clusters' socket names (scripts/cluster.sh: Unix sockets, each in its directory)
PORT_PRE=5432 PORT_PLAIN=5433

# shellcheck source=bench/common.sh
. "$BENCH_DIR/common.sh"
bench_prerequisites

# ---- throwaway servers, always stopped ---------------------------------------------------
work_dir pglease-bench # the clusters run as postgres
REDIS_PIDS=()
stop_servers() {
	local p
	for p in "${REDIS_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${REDIS_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	[ ! -d "$WORK/etcd" ] || "$REPO/scripts/etcd.sh" stop "$WORK/etcd" >/dev/null 2>&1 || true
	[ ! -d "$WORK/zk" ] || "$REPO/scripts/zookeeper.sh" stop "$WORK/zk" >/dev/null 2>&1 || true
	[ ! -d "$WORK/pre" ] || PGLEASE_TEST_PORT="$PORT_PRE" "$CLUSTER" stop "$WORK/pre" fast >/dev/null 2>&1 || true
	[ ! -d "$WORK/plain" ] || PGLEASE_TEST_PORT="$PORT_PLAIN" "$CLUSTER" stop "$WORK/plain" fast >/dev/null 2>&1 || true
}
on_exit stop_servers

# ---- the machine, before anything of ours runs -------------------------------------------------
NPROC="$(nproc)"
CPU_MODEL="$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
BUSY_START="$(cpu_busy_pct 1)"
log "machine: $NPROC CPUs ($CPU_MODEL), load $LOAD_START, CPU busy ${BUSY_START}% before the run"
FDATASYNC="$(measure_fdatasync)"
log "fdatasync of 8 kB on /tmp (pg_test_fsync -s 2): $FDATASYNC"

# ---- servers ---------------------------------------------------------------------------------------
# start_redis VAR DIR ARGS...: a redis-server in the foreground of a background
# job, on a port drawn free (a new one when its bind fails, 3 tries); VAR gets the port
start_redis() {
	local var="$1" dir="$2" port pid try i
	shift 2
	mkdir -p "$dir"
	for ((try = 1; try <= 3; try++)); do
		port="$(free_port)" || die "no free port for redis-server"
		: >"$dir/redis.log"
		redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" --daemonize no --logfile "$dir/redis.log" \
			--databases 4 "$@" &
		pid=$!
		# up to 10 s until the server on the port is this one
		for ((i = 0; i < 100; i++)); do
			if redis-cli -h 127.0.0.1 -p "$port" info server 2>/dev/null | grep "^process_id:$pid" >/dev/null; then
				REDIS_PIDS+=("$pid")
				printf -v "$var" '%s' "$port"
				return 0
			fi
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		grep -i 'address already in use' "$dir/redis.log" >/dev/null ||
			{ tail -5 "$dir/redis.log" >&2; die "redis-server did not start on port $port (log: $dir/redis.log)"; }
	done
	die "redis-server found no free port in 3 tries"
}
log "starting servers (clusters, 5 redis-server, etcd, ZooKeeper)"
mkdir -p "$WORK/pre" "$WORK/plain"
PGLEASE_TEST_PORT="$PORT_PRE" "$CLUSTER" start "$WORK/pre" preload & pid_pre=$!
PGLEASE_TEST_PORT="$PORT_PLAIN" "$CLUSTER" start "$WORK/plain" nopreload & pid_plain=$!
"$REPO/scripts/etcd.sh" start "$WORK/etcd" >"$WORK/etcd.out" 2>&1 & pid_etcd=$!
"$REPO/scripts/zookeeper.sh" start "$WORK/zk" >"$WORK/zk.out" 2>&1 & pid_zk=$!
start_redis REDIS "$WORK/redis" --save '' --appendonly no
start_redis REDIS_AOF "$WORK/redis-aof" --save '' --appendonly yes --appendfsync always
REDLOCK=()
for n in 1 2 3; do
	start_redis redlock_port "$WORK/redis-$n" --save '' --appendonly no
	REDLOCK+=("$redlock_port")
done
wait "$pid_pre" || die "the preloaded cluster did not start (see above)"
wait "$pid_plain" || die "the plain cluster did not start (see above)"
wait "$pid_etcd" || { cat "$WORK/etcd.out" >&2; die "etcd did not start"; }
wait "$pid_zk" || { cat "$WORK/zk.out" >&2; die "ZooKeeper did not start"; }
ETCD="$(cat "$WORK/etcd/port")" ZK="$(cat "$WORK/zk/port")"
log "servers: redis $REDIS, redis-aof $REDIS_AOF, redlock ${REDLOCK[*]}, etcd $ETCD, ZooKeeper $ZK"
# durable peers as configured: ZooKeeper's forceSync is not turned off, etcd's fsync neither
! grep -qi '^forceSync *= *no' "$WORK/zk/zoo.cfg" || die "zoo.cfg turns forceSync off"
ZK_SYNC="forceSync not set in zoo.cfg (default yes)"

# No checkpoint during the measurements: the tables are filled after the last one, so no
# run pays full-page images that an earlier run did not.
for c in "$WORK/pre:$PORT_PRE" "$WORK/plain:$PORT_PLAIN"; do
	sql "${c%:*}" "${c##*:}" postgres \
		-c "ALTER SYSTEM SET checkpoint_timeout = '1d'" -c "ALTER SYSTEM SET max_wal_size = '32GB'" \
		-c "SELECT pg_reload_conf()" >/dev/null
	for db in bench scale_1k scale_1m; do
		sql "${c%:*}" "${c##*:}" postgres -c "CREATE DATABASE $db" >/dev/null
	done
done

# pg_lease must be in the mode each cluster claims: lease.stats() works only when preloaded
sql "$WORK/pre" "$PORT_PRE" bench -c "CREATE EXTENSION pg_lease"
sql "$WORK/pre" "$PORT_PRE" bench -c "SELECT lease.stats()" >/dev/null ||
	die "the cluster on port $PORT_PRE should have pg_lease preloaded, but lease.stats() fails"
sql "$WORK/plain" "$PORT_PLAIN" bench -c "CREATE EXTENSION pg_lease"
if sql "$WORK/plain" "$PORT_PLAIN" bench -c "SELECT lease.stats()" >/dev/null 2>&1; then
	die "the cluster on port $PORT_PLAIN should not have pg_lease preloaded, but lease.stats() works"
fi

log "filling the tables: $NRES resources for the runs, 1k and 1M for the scale runs"
jobs_pids=()
fill_lease "$WORK/pre" "$PORT_PRE" scale_1m s/ 1000000 & jobs_pids+=($!)
fill_lease "$WORK/plain" "$PORT_PLAIN" scale_1m s/ 1000000 & jobs_pids+=($!)
fill_handmade "$WORK/pre" "$PORT_PRE" scale_1m s/ 1000000 & jobs_pids+=($!)
(
	fill_lease "$WORK/pre" "$PORT_PRE" bench u/ "$NRES"
	fill_handmade "$WORK/pre" "$PORT_PRE" bench u/ "$NRES"
	fill_floor "$WORK/pre" "$PORT_PRE" bench
	fill_lease "$WORK/plain" "$PORT_PLAIN" bench u/ "$NRES"
	for c in "$WORK/pre:$PORT_PRE" "$WORK/plain:$PORT_PLAIN"; do
		fill_lease "${c%:*}" "${c##*:}" scale_1k s/ 1000
	done
	fill_handmade "$WORK/pre" "$PORT_PRE" scale_1k s/ 1000
	# Redis: the same number of other keys held, in logical databases 1 and 2
	fill='for i = 1, tonumber(ARGV[1]) do redis.call("SET", "held/" .. i, "x", "PX", 3600000) end return 1'
	redis-cli -h 127.0.0.1 -p "$REDIS" -n 1 EVAL "$fill" 0 1000 >/dev/null
	redis-cli -h 127.0.0.1 -p "$REDIS" -n 2 EVAL "$fill" 0 1000000 >/dev/null
) & jobs_pids+=($!)
for p in "${jobs_pids[@]}"; do
	wait "$p" || die "filling the tables failed (see above)"
done
[ "$(redis-cli -h 127.0.0.1 -p "$REDIS" -n 2 DBSIZE)" = 1000000 ] || die "redis database 2 does not hold 1M keys"
# the fill dirtied about a GB of page cache: write it out now, or the kernel's writeback
# lands in the first runs and stalls their WAL flushes
sync

# ---- what the report records about the setup ------------------------------------------------------------
PG_VERSION="$(sql "$WORK/pre" "$PORT_PRE" postgres -c 'SELECT version()')"
SETTINGS="$(sql "$WORK/pre" "$PORT_PRE" postgres -c "SELECT string_agg(name || '=' || current_setting(name), ', ' ORDER BY name)
	FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'wal_sync_method', 'full_page_writes', 'shared_buffers',
	                                'checkpoint_timeout', 'max_wal_size', 'max_connections')")"
COMMIT="$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
[ -z "$(git -C "$REPO" status --porcelain -- client bench ':!bench/results' 2>/dev/null | head -1)" ] ||
	COMMIT="$COMMIT (client/ or bench/ has uncommitted changes)"
CMD="bench/run.sh"
[ "$QUICK" = 0 ] || CMD="$CMD --quick"
for v in PGLEASE_BENCH_REPS PGLEASE_BENCH_DURATION PGLEASE_BENCH_HOT_DURATION \
	PGLEASE_BENCH_WARMUP PGLEASE_BENCH_SCENARIOS PGLEASE_BENCH_SYSTEMS; do
	[ -z "${!v:-}" ] || CMD="$v='${!v}' $CMD"
done

OUT="$BENCH_DIR/results"
mkdir -p "$OUT"
log "setup done; measuring ($MODE: $REPS repetitions)"
rl="127.0.0.1:${REDLOCK[0]},127.0.0.1:${REDLOCK[1]},127.0.0.1:${REDLOCK[2]}"
# measure DRIVER REPS OUT -- one interleaved run of DRIVER over every system, written to the files named OUT with .md, .json and .svg after it
measure() {
	local driver="$1" reps="$2" out="$3"
	"$driver" \
		--pg-preload "$(conninfo "$WORK/pre" "$PORT_PRE")" --pg-plain "$(conninfo "$WORK/plain" "$PORT_PLAIN")" \
		--redis "127.0.0.1:$REDIS" --redis-aof "127.0.0.1:$REDIS_AOF" --redlock "$rl" \
		--etcd "127.0.0.1:$ETCD" --zookeeper "127.0.0.1:$ZK" \
		--reps "$reps" --duration "$DURATION" --hot-duration "$HOT_DURATION" --warmup "$WARMUP" \
		--resources "$NRES" --scenarios "$SCENARIOS" ${SYSTEMS:+--systems "$SYSTEMS"} \
		--meta "command=\`$CMD\` (from the repository root)" \
		--meta "date=$(date -u '+%Y-%m-%d %H:%M:%S UTC'); commit $COMMIT" \
		--meta "machine=$NPROC CPUs, $CPU_MODEL; fdatasync of one 8 kB write on /tmp (\`pg_test_fsync -s 2\`): $FDATASYNC" \
		--meta "load before the run=load average $LOAD_START, CPU busy $BUSY_START % over 1 s; the 2 cores are shared with other engineers' test runs: the per-run CPU busy and load are in the tables, and the interleaving spreads the noise over every system alike" \
		--meta "PostgreSQL=$PG_VERSION; two throwaway clusters (scripts/cluster.sh) on Unix sockets: preloaded (pg_lease preloaded, advisory, handmade, the floor) and plain; $SETTINGS; no checkpoint during the measurements, tables filled after the last one" \
		--meta "Redis=$(redis-server --version | sed 's/ sha=.*//'), on 127.0.0.1: one with \`--save '' --appendonly no\` (Redis as people run it), one with \`--appendonly yes --appendfsync always\`, three plain ones for Redlock" \
		--meta "etcd=$(etcd --version | head -1), one member (scripts/etcd.sh: default fsync, heartbeat 50 ms, election 500 ms); the provider and the raw client use its JSON gateway" \
		--meta "ZooKeeper=standalone (scripts/zookeeper.sh: tickTime 200 ms; $ZK_SYNC); C client libzookeeper-mt" \
		--out-md "$out.md" --out-json "$out.json" --out-svg "$out.svg" ||
			die "the benchmark driver failed (or some runs failed: see the end of $out.md)"
}

if [ -n "${PGLEASE_BENCH_AB_DRIVER:-}" ]; then
	# bench/ab_client.sh: driver A (another build) and this one (B), side by side on the
	# same servers, one repetition each in turn, the order swapped every repetition
	AB="$WORK/ab"
	rm -rf "$AB" && mkdir -p "$AB"
	for rep in $(seq 1 "$REPS"); do
		order="A B"; [ $((rep % 2)) = 1 ] || order="B A"
		for side in $order; do
			log "A/B repetition $rep of $REPS: $side"
			if [ "$side" = A ]; then measure "$PGLEASE_BENCH_AB_DRIVER" 1 "$AB/A-$rep"; else measure "$DRIVER" 1 "$AB/B-$rep"; fi
			grep '"scenario"' "$AB/$side-$rep.json" | sed "s/^/$side $rep /" >>"$AB/runs"
		done
	done
	awk -f "$BENCH_DIR/ab_summary.awk" "$AB/runs" >"$AB/summary.md"
	log "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
	cp "$AB/summary.md" "$OUT/ab.md"
	cat "$AB/summary.md"
	exit 0
fi
measure "$DRIVER" "$REPS" "$OUT/latest"

# A lock service that deadlocks under contention fails its hot scenario
# quietly (timeouts look like waits): count what the server logs say.
printf '\n## Server logs\n\n' >>"$OUT/latest.md"
for c in pre plain; do
	n="$(grep -c 'deadlock detected' "$WORK/$c/server.log" || true)"
	echo "- server log of the $c cluster: $n \`deadlock detected\`" >>"$OUT/latest.md"
	[ "$n" = 0 ] || log "the $c cluster logged $n deadlocks: see $OUT/latest.md"
done

log "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
sed -n '/^## Targets/,/^## 1\./p' "$OUT/latest.md" | sed '$d' >&2
log "wrote $OUT/latest.md, $OUT/latest.json and $OUT/latest.svg"
