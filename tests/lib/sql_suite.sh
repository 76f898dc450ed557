#!/usr/bin/env bash
# sql_suite.sh regress|isolation -- the extension's pg_regress suites (sql/,
# expected/) or its isolation specs (tests/isolation/) through PGXS's make
# installcheck, against the cluster of PGHOST/PGPORT (a CTest fixture); on a
# failure the differences are printed.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
cd "$ROOT"
case "${1:-}" in
regress) only=(ISOLATION=) diffs=regression.diffs ;;
isolation) only=(REGRESS=) diffs=output_iso/regression.diffs ;;
*) die "usage: sql_suite.sh regress|isolation" ;;
esac
rm -f "$diffs"
rc=0
make -s installcheck "${only[@]}" || rc=$?
if [ -s "$diffs" ]; then
	echo "----- $diffs"
	cat "$diffs"
fi
exit "$rc"
