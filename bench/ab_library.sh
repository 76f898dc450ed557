#!/usr/bin/env bash
# bench/ab_library.sh -- A/B of two builds of the pg_lease library, side by side.
#
#   bench/ab_library.sh REV     build the extension at git revision REV (A) and
#                               this checkout (B); run acquire+release pairs
#                               (bench/pgbench/pg_lease.sql) on one preloaded
#                               throwaway cluster, swapping the installed
#                               pg_lease.so and restarting between runs, A and B
#                               interleaved in every repetition, the
#                               order swapped every repetition.
#
# Prints pairs/s per build and client count (median of the repetitions) and
# the median of the per-repetition ratios B/A.  Each build runs on the schema
# of its own version, in a database of its own (a_db: REV's default_version,
# from REV's install script; b_db: this checkout's), so a release that
# changes the schema is compared with the one before it.  Leaves this
# checkout's library installed.
#
# Settings: PGLEASE_AB_REPS (5), PGLEASE_AB_DURATION seconds (8),
# PGLEASE_AB_CLIENTS ("1 8"), PGLEASE_AB_PORT (5432: the socket name of the
# cluster, which listens on a Unix socket in its own directory only),
# PGLEASE_AB_NRES (10000).
set -euo pipefail
shopt -s inherit_errexit # a failure inside $(run ...) ends the script too

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REV="${1:?usage: bench/ab_library.sh REV}"
REPS="${PGLEASE_AB_REPS:-5}"
DURATION="${PGLEASE_AB_DURATION:-8}"
CLIENTS="${PGLEASE_AB_CLIENTS:-1 8}"
PORT="${PGLEASE_AB_PORT:-5432}"
NRES="${PGLEASE_AB_NRES:-10000}"
LIBDIR="$(pg_config --pkglibdir)"
source "$REPO/scripts/lib/common.sh" # on_exit, work_dir
source "$REPO/bench/ab_builds.sh"   # ab_builds, ab_databases
work_dir pg_lease_ab
export PGLEASE_TEST_PORT="$PORT"

ab_builds "$REV"

"$REPO/scripts/cluster.sh" start "$WORK/cluster" preload
eval "$("$REPO/scripts/cluster.sh" env "$WORK/cluster")"
ab_databases "$NRES"

# The library is swapped while the server is down, and by rename (a new
# file): writing over the pg_lease.so a running postmaster has mapped changes
# the code under it (two restarts of an earlier version of this script found
# the server unable to shut down).  A failed stop, start or pgbench ends the
# run: a figure measured on the wrong build is worse than none.
run() {	# run BUILD CLIENTS -- pairs/s of one pgbench run
	local out tps
	"$REPO/scripts/cluster.sh" stop "$WORK/cluster" >/dev/null
	[ ! -f "$WORK/cluster/data/postmaster.pid" ] || die "the cluster did not stop"
	cp "$WORK/$1.so" "$LIBDIR/pg_lease.so.ab" && mv -f "$LIBDIR/pg_lease.so.ab" "$LIBDIR/pg_lease.so"
	"$REPO/scripts/cluster.sh" start "$WORK/cluster" "$(cat "$WORK/cluster/mode")" >/dev/null
	out="$(pgbench -n -c "$2" -j "$2" -T "$DURATION" -D nres="$NRES" \
		-f "$REPO/bench/pgbench/pg_lease.sql" "${1,}_db" 2>&1)" || die "pgbench failed: $(tail -3 <<<"$out")"
	tps="$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out")"
	[ -n "$tps" ] || die "pgbench printed no tps: $(tail -3 <<<"$out")"
	echo "$tps"
}

declare -A tps=()
for rep in $(seq 1 "$REPS"); do
	order="A B"
	[ $((rep % 2)) = 1 ] || order="B A" # each build first in every other repetition
	for c in $CLIENTS; do
		for build in $order; do
			tps[$build,$c,$rep]="$(run "$build" "$c")"
			echo "rep $rep clients $c build $build: ${tps[$build,$c,$rep]} pairs/s" >&2
		done
	done
done

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "A = $REV ($(git -C "$REPO" rev-parse --short "$REV"), schema $VERSION_A), B = this checkout ($(git -C "$REPO" rev-parse --short HEAD)$(git -C "$REPO" diff --quiet || echo ', modified'), schema $VERSION_B), $REPS repetitions of $DURATION s"
echo "| clients | A pairs/s (median) | B pairs/s (median) | B/A (median of per-repetition ratios) |"
echo "|---:|---:|---:|---:|"
for c in $CLIENTS; do
	a="$(for r in $(seq 1 "$REPS"); do echo "${tps[A,$c,$r]}"; done | median)"
	b="$(for r in $(seq 1 "$REPS"); do echo "${tps[B,$c,$r]}"; done | median)"
	ratio="$(for r in $(seq 1 "$REPS"); do awk -v x="${tps[A,$c,$r]}" -v y="${tps[B,$c,$r]}" 'BEGIN { printf "%.4f\n", y / x }'; done | median)"
	printf '| %s | %.0f | %.0f | %.3f |\n' "$c" "$a" "$b" "$ratio"
done
