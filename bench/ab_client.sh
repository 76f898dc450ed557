#!/usr/bin/env bash
# bench/ab_client.sh -- A/B of two builds of the client library, side by side.
#
#   bench/ab_client.sh REV [--quick]   build the benchmark driver against the
#                                      client library at git revision REV (A)
#                                      and against this checkout's (B); run both
#                                      on the same servers (bench/run.sh's), one
#                                      repetition each in turn, the order
#                                      swapped every repetition.
#
# Prints, per scenario, point and system, the median rate of A and of B and the
# median of the per-repetition ratios B/A (bench/ab_summary.awk), and writes
# it to bench/results/ab.md.  The extension is this checkout's for both: the
# A/B is of the client (bench/ab_library.sh does the extension).  Settings as
# bench/run.sh (PGLEASE_BENCH_REPS: the repetitions of each side, default 5;
# PGLEASE_BENCH_SCENARIOS, ...).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$REPO/scripts/lib/common.sh" # die, on_exit, work_dir
REV="${1:?usage: bench/ab_client.sh REV [--quick]}"
shift
work_dir pg_lease_ab_client
on_exit 'git -C "$REPO" worktree remove --force "$WORK/rev" >/dev/null 2>&1 || true'
git -C "$REPO" worktree add -q --detach "$WORK/rev" "$REV" || die "no revision $REV"
lib="$WORK/build"
cmake -S "$WORK/rev/client" -B "$lib" >/dev/null || die "cmake of $REV's client/ failed"
echo "ab_client.sh: building the driver against $REV's client library (A)" >&2
if cmake --build "$lib" -j2 --target pglease_bench >/dev/null 2>&1; then
	driver="$lib/pglease_bench"
else # before the driver was a CMake target (issue 20): the same sources, linked by hand
	cmake --build "$lib" -j2 --target pglease pglease_redis pglease_etcd pglease_zookeeper >/dev/null ||
		die "building $REV's client libraries failed"
	driver="$lib/bench_a"
	g++ -O2 -std=c++17 -pthread -I"$WORK/rev/client/include" -I"$lib/include" -I"$(pg_config --includedir)" \
		"$WORK/rev/bench"/{bench,systems,report}.cpp -o "$driver" \
		-Wl,--undefined=pglease_redis_component -Wl,--undefined=pglease_etcd_component \
		-Wl,--undefined=pglease_zookeeper_component "$lib"/libpglease_{etcd,zookeeper,redis}.a \
		"$lib/libpglease.a" -lpqxx -lpq -lhiredis -lcurl -lzookeeper_mt ||
		die "building $REV's benchmark driver failed"
fi
echo "A = $REV ($(git -C "$REPO" rev-parse --short "$REV")), B = this checkout ($(git -C "$REPO" rev-parse --short HEAD)$(git -C "$REPO" diff --quiet -- client || echo ', client/ modified'))"
PGLEASE_BENCH_AB_DRIVER="$driver" PGLEASE_BENCH_REPS="${PGLEASE_BENCH_REPS:-5}" "$REPO/bench/run.sh" "$@"
