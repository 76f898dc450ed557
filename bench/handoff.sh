#!/usr/bin/env bash
# bench/handoff.sh -- hand-off of one hot resource between 8 competing clients:
#   preloaded      pg_lease with shared_preload_libraries = 'pg_lease'
#                  (shared-memory FIFO wait queue; the release's commit wakes the next waiter)
#   not-preloaded  pg_lease without preload (waiters poll every lease.poll_interval, default 50ms)
#   advisory       pg_advisory_lock / pg_advisory_unlock on one key (in-memory lock queue: the ceiling)
#
# Builds the driver bench/handoff.cpp (C++17, libpq) into bench/build/, starts two
# throwaway clusters at once (scripts/cluster.sh; preloaded and plain; advisory runs on
# the plain one), measures every system in one run, interleaved round-robin with the
# first system rotating each repetition, stops the clusters, and writes
# bench/results/handoff.md and bench/results/handoff.json.
#
#   bench/handoff.sh            10 s x 5 repetitions per system
#   bench/handoff.sh --quick    3 s x 3 repetitions   (writes handoff-quick.{md,json})
#   bench/handoff.sh --diag     where the preloaded hand-off time goes: preloaded vs the
#                               same with SET synchronous_commit = off vs a preloaded
#                               cluster with fsync = off, plus pg_test_fsync on /tmp
#                               (writes handoff-diag.{md,json}; combine with --quick)
#
# Settings (environment):
#   PGLEASE_BENCH_HANDOFF_PORT_PRELOAD  port of the preloaded cluster          (default 54361)
#   PGLEASE_BENCH_HANDOFF_PORT_PLAIN    port of the plain cluster              (default 54362)
#   PGLEASE_BENCH_HANDOFF_PORT_DIAG     port of the fsync=off cluster (--diag) (default 54363)
#   PGLEASE_BENCH_HANDOFF_DURATION      seconds measured per run  (default 10, --quick 3)
#   PGLEASE_BENCH_HANDOFF_REPS          repetitions               (default 5, --quick 3)
#   PGLEASE_BENCH_HANDOFF_CLIENTS       client threads            (default 8)
#   PGLEASE_BENCH_HANDOFF_HOLD_US       critical section, µs      (default 200)
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$BENCH_DIR/.." && pwd)"

die() { echo "handoff.sh: $*" >&2; exit 1; }
log() { echo "handoff.sh: $*" >&2; }

QUICK=0
DIAG=0
for arg in "$@"; do
	case "$arg" in
	--quick) QUICK=1 ;;
	--diag) DIAG=1 ;;
	-h | --help) sed -n '2,28p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument '$arg' (--quick, --diag, --help)" ;;
	esac
done

if [ "$QUICK" = 1 ]; then def_duration=3; def_reps=3; else def_duration=10; def_reps=5; fi
PORT_PRE="${PGLEASE_BENCH_HANDOFF_PORT_PRELOAD:-54361}"
PORT_PLAIN="${PGLEASE_BENCH_HANDOFF_PORT_PLAIN:-54362}"
PORT_DIAG="${PGLEASE_BENCH_HANDOFF_PORT_DIAG:-54363}"
DURATION="${PGLEASE_BENCH_HANDOFF_DURATION:-$def_duration}"
REPS="${PGLEASE_BENCH_HANDOFF_REPS:-$def_reps}"
CLIENTS="${PGLEASE_BENCH_HANDOFF_CLIENTS:-8}"
HOLD_US="${PGLEASE_BENCH_HANDOFF_HOLD_US:-200}"
for v in PORT_PRE PORT_PLAIN PORT_DIAG DURATION REPS CLIENTS HOLD_US; do
	[[ "${!v}" =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer, got '${!v}'"
done
[ "$DURATION" -ge 1 ] && [ "$REPS" -ge 1 ] || die "duration and repetitions must be >= 1"
[ "$CLIENTS" -ge 2 ] || die "PGLEASE_BENCH_HANDOFF_CLIENTS must be >= 2"
[ "$PORT_PRE" != "$PORT_PLAIN" ] && [ "$PORT_PRE" != "$PORT_DIAG" ] && [ "$PORT_PLAIN" != "$PORT_DIAG" ] ||
	die "the three ports must differ"

# ---- prerequisites -------------------------------------------------------------
command -v pg_config >/dev/null 2>&1 ||
	die "pg_config not found: install postgresql-server-dev-15 / postgresql-15 (scripts/install-deps.sh)"
PG_BINDIR="$(pg_config --bindir)"
PSQL="$PG_BINDIR/psql"
[ -x "$PSQL" ] || die "psql not found in $PG_BINDIR: install postgresql-client-15"
command -v g++ >/dev/null 2>&1 || die "g++ not found: install g++ (apt-get install g++)"
PG_INCLUDEDIR="$(pg_config --includedir)"
[ -f "$PG_INCLUDEDIR/libpq-fe.h" ] || die "libpq-fe.h not found in $PG_INCLUDEDIR: install libpq-dev"
CLUSTER="$REPO/scripts/cluster.sh"
[ -x "$CLUSTER" ] || die "$CLUSTER not found or not executable"
[ -f "$(pg_config --sharedir)/extension/pg_lease.control" ] &&
	[ -f "$(pg_config --pkglibdir)/pg_lease.so" ] ||
	die "pg_lease is not installed: run scripts/install-extension.sh (or 'make && make install') in $REPO"
# an Assert()-enabled build (make LEASE_ASSERTS=1, as make faults installs) is not what to measure
SO_BUILD="no Assert()s"
if command -v nm >/dev/null 2>&1; then
	if nm -D --undefined-only "$(pg_config --pkglibdir)/pg_lease.so" | grep -q ExceptionalCondition; then
		SO_BUILD="built with USE_ASSERT_CHECKING: numbers not representative"
		log "WARNING: the installed pg_lease.so has Assert()s enabled; run scripts/install-extension.sh for a normal build"
	fi
else
	SO_BUILD="not checked (no nm)"
fi
SO_FILE="$(pg_config --pkglibdir)/pg_lease.so"
SO_BUILD="$SO_BUILD; installed $(date -u -r "$SO_FILE" '+%Y-%m-%d %H:%M:%S UTC'), md5 $(md5sum "$SO_FILE" | cut -c1-12)"
if [ "$DIAG" = 1 ]; then
	PG_TEST_FSYNC="$PG_BINDIR/pg_test_fsync"
	[ -x "$PG_TEST_FSYNC" ] || die "pg_test_fsync not found in $PG_BINDIR: install postgresql-15"
fi

# ---- driver --------------------------------------------------------------------
BUILD_DIR="$BENCH_DIR/build"
DRIVER="$BUILD_DIR/handoff"
mkdir -p "$BUILD_DIR"
if [ ! -x "$DRIVER" ] || [ "$BENCH_DIR/handoff.cpp" -nt "$DRIVER" ] || [ "$BENCH_DIR/procstat.hpp" -nt "$DRIVER" ]; then
	log "building $DRIVER"
	g++ -O2 -std=c++17 -pthread -Wall -Wextra -I"$PG_INCLUDEDIR" \
		"$BENCH_DIR/handoff.cpp" -o "$DRIVER" -L"$(pg_config --libdir)" -lpq ||
		die "building bench/handoff.cpp failed"
fi

# ---- throwaway clusters ------------------------------------------------------------
DIR_PRE="$(mktemp -d /tmp/pglease-handoff-pre.XXXXXX)"
DIR_PLAIN="$(mktemp -d /tmp/pglease-handoff-plain.XXXXXX)"
DIR_DIAG=""
cleanup() {
	PGLEASE_TEST_PORT="$PORT_PRE" "$CLUSTER" stop "$DIR_PRE" fast >/dev/null 2>&1 || true
	PGLEASE_TEST_PORT="$PORT_PLAIN" "$CLUSTER" stop "$DIR_PLAIN" fast >/dev/null 2>&1 || true
	if [ -n "$DIR_DIAG" ]; then
		PGLEASE_TEST_PORT="$PORT_DIAG" "$CLUSTER" stop "$DIR_DIAG" fast >/dev/null 2>&1 || true
		rm -rf "$DIR_DIAG"
	fi
	rm -rf "$DIR_PRE" "$DIR_PLAIN"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_cluster() {   # dir port preload|nopreload
	log "starting $3 cluster in $1 on port $2"
	PGLEASE_TEST_PORT="$2" "$CLUSTER" start "$1" "$3"
}
conninfo() {   # dir port
	echo "host=$1/sock port=$2 user=postgres dbname=postgres"
}
sql() {   # dir port psql-args...
	local dir="$1" port="$2"; shift 2
	"$PSQL" -X -q -At -v ON_ERROR_STOP=1 -h "$dir/sock" -p "$port" -U postgres -d postgres "$@"
}
setup_cluster() {   # dir port preload|nopreload
	sql "$1" "$2" -c "CREATE EXTENSION IF NOT EXISTS pg_lease"
	# the mode must be the one claimed: lease.stats() works only when preloaded
	if [ "$3" = preload ]; then
		sql "$1" "$2" -c "SELECT lease.stats()" >/dev/null ||
			die "cluster on port $2 should be preloaded, but lease.stats() fails"
	else
		if sql "$1" "$2" -c "SELECT lease.stats()" >/dev/null 2>&1; then
			die "cluster on port $2 should not be preloaded, but lease.stats() works"
		fi
	fi
	# the resource's row exists before any measurement (runs measure updates, not the insert)
	sql "$1" "$2" -c "SELECT lease.release('hot', lease.acquire('hot', '30 s'))" >/dev/null
}

start_cluster "$DIR_PRE" "$PORT_PRE" preload
start_cluster "$DIR_PLAIN" "$PORT_PLAIN" nopreload
setup_cluster "$DIR_PRE" "$PORT_PRE" preload
setup_cluster "$DIR_PLAIN" "$PORT_PLAIN" nopreload

# ---- run -----------------------------------------------------------------------------
OUT_DIR="$BENCH_DIR/results"
mkdir -p "$OUT_DIR"
CMD="bench/handoff.sh"
for v in PGLEASE_BENCH_HANDOFF_PORT_PRELOAD PGLEASE_BENCH_HANDOFF_PORT_PLAIN PGLEASE_BENCH_HANDOFF_PORT_DIAG \
	PGLEASE_BENCH_HANDOFF_DURATION PGLEASE_BENCH_HANDOFF_REPS PGLEASE_BENCH_HANDOFF_CLIENTS \
	PGLEASE_BENCH_HANDOFF_HOLD_US; do
	[ -z "${!v:-}" ] || CMD="$v='${!v}' $CMD"
done
[ "$#" -eq 0 ] || CMD="$CMD $*"
COMMIT="$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
DIRTY="$(git -C "$REPO" status --porcelain -- extension 2>/dev/null | head -1 || true)"
[ -z "$DIRTY" ] || COMMIT="$COMMIT (extension/ has uncommitted changes)"
COMMON=(
	--clients "$CLIENTS" --duration "$DURATION" --reps "$REPS" --hold-us "$HOLD_US"
	--command "$CMD"
	--meta "date=$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	--meta "commit=$COMMIT"
	--meta "nproc=$(nproc)"
	--meta "installed pg_lease.so=$SO_BUILD"
	--meta "clusters=scripts/cluster.sh (Unix socket, fsync=on, synchronous_commit=on); preloaded on port $PORT_PRE, plain on port $PORT_PLAIN, both running throughout (--diag: a third, preloaded with fsync=off, on port $PORT_DIAG)"
)

if [ "$DIAG" = 0 ]; then
	if [ "$QUICK" = 1 ]; then base="handoff-quick"; else base="handoff"; fi
	"$DRIVER" "${COMMON[@]}" \
		--title "Hand-off on one hot resource: pg_lease preloaded vs not preloaded vs advisory locks" \
		--target "preloaded:lease:$(conninfo "$DIR_PRE" "$PORT_PRE")" \
		--describe "preloaded:pg_lease, shared_preload_libraries = 'pg_lease' (FIFO wait queue, woken at the release's commit)" \
		--target "not-preloaded:lease:$(conninfo "$DIR_PLAIN" "$PORT_PLAIN")" \
		--describe "not-preloaded:pg_lease without preload (waiters poll every lease.poll_interval)" \
		--target "advisory:advisory:$(conninfo "$DIR_PLAIN" "$PORT_PLAIN")" \
		--describe "advisory:pg_advisory_lock(hashtext('hot')) / pg_advisory_unlock, on the plain cluster" \
		--note "self re-grant: the releasing client's next acquire was granted again before anyone else's (not a hand-off)" \
		--out-md "$OUT_DIR/$base.md" --out-json "$OUT_DIR/$base.json"
	log "wrote $OUT_DIR/$base.md and $OUT_DIR/$base.json"
	exit 0
fi

# ---- diagnostics: where does the preloaded hand-off time go? ----------------------------
if [ "$QUICK" = 1 ]; then base="handoff-diag-quick"; else base="handoff-diag"; fi
DIR_DIAG="$(mktemp -d /tmp/pglease-handoff-diag.XXXXXX)"
start_cluster "$DIR_DIAG" "$PORT_DIAG" preload
sql "$DIR_DIAG" "$PORT_DIAG" -c "ALTER SYSTEM SET fsync = off" -c "SELECT pg_reload_conf()" >/dev/null
# time every WAL flush (pg_stat_wal.wal_sync_time) on the lease clusters
for c in "$DIR_PRE:$PORT_PRE" "$DIR_DIAG:$PORT_DIAG"; do
	sql "${c%:*}" "${c##*:}" -c "ALTER SYSTEM SET track_wal_io_timing = on" -c "SELECT pg_reload_conf()" >/dev/null
done
sleep 1
[ "$(sql "$DIR_DIAG" "$PORT_DIAG" -c "SHOW fsync")" = off ] || die "fsync = off did not take effect on port $PORT_DIAG"
[ "$(sql "$DIR_PRE" "$PORT_PRE" -c "SHOW track_wal_io_timing")" = on ] || die "track_wal_io_timing = on did not take effect"
setup_cluster "$DIR_DIAG" "$PORT_DIAG" preload

log "pg_test_fsync -s 2 on a file under /tmp"
FSYNC_FILE="$(mktemp /tmp/pglease-handoff-fsync.XXXXXX)"
FSYNC_OUT="$OUT_DIR/$base-pg_test_fsync.txt"
"$PG_TEST_FSYNC" -s 2 -f "$FSYNC_FILE" >"$FSYNC_OUT" 2>&1 || { rm -f "$FSYNC_FILE"; cat "$FSYNC_OUT" >&2; die "pg_test_fsync failed"; }
rm -f "$FSYNC_FILE"
FDATASYNC="$(awk '/one 8kB write/ { f = 1 } f && $1 == "fdatasync" { print $2 " ops/s, " $4 " µs/op"; exit }' "$FSYNC_OUT")"

"$DRIVER" "${COMMON[@]}" --no-targets --wal-stats \
	--title "Hand-off diagnostics: is the preloaded hand-off bound by the grant's WAL flush?" \
	--target "preloaded:lease:$(conninfo "$DIR_PRE" "$PORT_PRE")" \
	--describe "preloaded:pg_lease preloaded, as in handoff.md" \
	--target "preloaded-sync-off:lease:$(conninfo "$DIR_PRE" "$PORT_PRE")" \
	--session-sql "preloaded-sync-off:SET synchronous_commit = off" \
	--describe "preloaded-sync-off:the same cluster, every client session SET synchronous_commit = off" \
	--target "preloaded-fsync-off:lease:$(conninfo "$DIR_DIAG" "$PORT_DIAG")" \
	--describe "preloaded-fsync-off:a third preloaded cluster with fsync = off (WAL written, never flushed)" \
	--target "advisory:advisory:$(conninfo "$DIR_PLAIN" "$PORT_PLAIN")" \
	--describe "advisory:pg_advisory_lock on the plain cluster" \
	--meta "machine fsync latency=fdatasync of one 8 kB write (pg_test_fsync -s 2, file under /tmp): $FDATASYNC; full output in bench/results/$base-pg_test_fsync.txt" \
	--note "diagnostic only: fsync = off and synchronous_commit = off are not settings to run pg_lease with; track_wal_io_timing = on on the lease clusters" \
	--note "pg_lease flushes every grant's commit even under synchronous_commit = off (ForceSyncCommit), and already commits release-only transactions without a flush: the sync-off row is expected to match the preloaded one" \
	--out-md "$OUT_DIR/$base.md" --out-json "$OUT_DIR/$base.json"
log "wrote $OUT_DIR/$base.md, $OUT_DIR/$base.json and $FSYNC_OUT"
