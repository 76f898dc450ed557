#!/usr/bin/env bash
# bench/ab_instructions.sh -- instructions per acquire+release pair, two
# builds of the pg_lease library, counted by callgrind.
#
#   bench/ab_instructions.sh REV   the extension built at git revision REV (A)
#                                  and this checkout (B), each on the schema of
#                                  its own version, in a database of its own
#
# Timing on a shared 2-core machine moves by tens of percent from run to run;
# an instruction count does not.  Each build runs a single-user backend
# (postgres --single) under valgrind --tool=callgrind, once with 1000 and
# once with 3000 pairs (`SELECT lease.acquire(r, '30 s')` then
# `SELECT lease.release(r, currval('lease.token_seq'))`, each its own
# transaction, r random among 10000 resources acquired once before); the
# difference over 2000 is the cost of one pair, start-up and shutdown
# excluded.  Prints instructions per pair for A and B and their ratio B/A.
# Needs valgrind (apt-get install valgrind).  Leaves this checkout's library
# installed.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REV="${1:?usage: bench/ab_instructions.sh REV}"
LIBDIR="$(pg_config --pkglibdir)"
POSTGRES="$(pg_config --bindir)/postgres"
source "$REPO/scripts/lib/common.sh" # die, on_exit, work_dir
source "$REPO/bench/ab_builds.sh"   # ab_builds, ab_databases
command -v valgrind >/dev/null || die "needs valgrind: apt-get install valgrind"
work_dir pg_lease_abi

ab_builds "$REV"

# the databases, made by a running server; then the server stops for good
"$REPO/scripts/cluster.sh" start "$WORK/cluster" nopreload >/dev/null
eval "$("$REPO/scripts/cluster.sh" env "$WORK/cluster")"
ab_databases 10000
"$REPO/scripts/cluster.sh" stop "$WORK/cluster" >/dev/null

for n in 1000 3000; do
	awk -v n="$n" 'BEGIN { srand(1); for (i = 0; i < n; i++) { r = int(rand() * 10000) + 1;
		printf "SELECT lease.acquire(%cbench/%d%c, %c30 s%c);\n", 39, r, 39, 39, 39;
		printf "SELECT lease.release(%cbench/%d%c, currval(%clease.token_seq%c));\n", 39, r, 39, 39, 39 } }' \
		>"$WORK/pairs$n.sql"
done
chmod 644 "$WORK"/pairs*.sql

instructions() { # instructions BUILD N -- instructions of a single-user run of N pairs
	cp "$WORK/$1.so" "$LIBDIR/pg_lease.so"
	(cd / && runuser -u postgres -- valgrind --tool=callgrind --callgrind-out-file=/dev/null \
		"$POSTGRES" --single -D "$WORK/cluster/data" "${1,}_db" <"$WORK/pairs$2.sql" 2>&1 >/dev/null) |
		sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

declare -A per_pair=()
for build in A B; do
	low="$(instructions "$build" 1000)"
	high="$(instructions "$build" 3000)"
	per_pair[$build]=$(((high - low) / 2000))
done
echo "A = $REV ($(git -C "$REPO" rev-parse --short "$REV"), schema $VERSION_A), B = this checkout ($(git -C "$REPO" rev-parse --short HEAD)$(git -C "$REPO" diff --quiet || echo ', modified'), schema $VERSION_B)"
echo "| build | instructions per acquire+release pair |"
echo "|---|---:|"
echo "| A | ${per_pair[A]} |"
echo "| B | ${per_pair[B]} |"
awk -v a="${per_pair[A]}" -v b="${per_pair[B]}" 'BEGIN { printf "B/A = %.3f\n", b / a }'
