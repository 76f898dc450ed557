#!/usr/bin/env bash
# sql_suite.sh regress|isolation -- the extension's pg_regress suites (sql/,
# expected/) or its isolation specs (tests/isolation/) through PGXS's make
# installcheck, against the cluster of PGHOST/PGPORT (a CTest fixture); on a
# failure the differences are printed.  The output goes next to the cluster's
# directory, one per cluster and suite ($PGLEASE_CLUSTER.regress, .isolation),
# never into the checkout: the two modes' suites may run at the same time.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
cd "$ROOT"
[ -n "${PGHOST:-}" ] && [ -n "${PGLEASE_CLUSTER:-}" ] ||
	die "no cluster: run it through ctest (fixture pg_preload or pg_nopreload), or set PGHOST, PGPORT and PGLEASE_CLUSTER (scripts/cluster.sh)"
case "${1:-}" in
regress) only=(ISOLATION=) ;;
isolation) only=(REGRESS=) ;;
*) die "usage: sql_suite.sh regress|isolation" ;;
esac
out="$PGLEASE_CLUSTER.$1"
diffs="$out/$1/regression.diffs"
rm -f "$diffs"
rc=0
make -s installcheck "${only[@]}" REGRESS_OUTDIR="$out" || rc=$?
if [ -s "$diffs" ]; then
	echo "----- $diffs"
	cat "$diffs"
fi
exit "$rc"
