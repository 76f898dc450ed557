#!/usr/bin/env bash
# test.sh -- build, install and run every pg_lease test suite (make test).
#
# For each mode (preloaded, not preloaded) it starts a throwaway cluster
# (scripts/cluster.sh), runs the pg_regress suites (sql/, expected/), the
# isolation specs (tests/isolation/) and the shell-driven multi-session,
# restart and dump tests (tests/shell/), then stops it.  Clusters are
# stopped and removed even when a test fails.  Prints regression.diffs on a
# failure and ends with "N passed, M failed".
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

"$ROOT/scripts/install-deps.sh"

"$ROOT/scripts/install-extension.sh"

WORK="$(mktemp -d /tmp/pg_lease_test.XXXXXX)"
chmod 755 "$WORK"
cleanup() {
	for d in "$WORK"/*/; do
		[ -d "$d" ] && "$ROOT/scripts/cluster.sh" stop "$d" immediate || true
	done
	rm -rf "$WORK"
}
trap cleanup EXIT

passed=0
failed=0
LOG="$WORK/suite.log"

# count_results -- tally pg_regress ("test x ... ok/FAILED"), TAP-ish and GoogleTest lines
count_results() {
	local ok bad
	ok=$(grep -cE '^(test |     )?[a-z_0-9]+ +\.\.\. ok|^ok - |^\[ +OK \] .* \([0-9]+ ms\)$' "$LOG" || true)
	bad=$(grep -cE '^(test |     )?[a-z_0-9]+ +\.\.\. FAILED|^not ok - |^\[ +FAILED +\] .* \([0-9]+ ms\)$' "$LOG" || true)
	passed=$((passed + ok))
	failed=$((failed + bad))
}

# run_suite NAME CMD... -- run, show output, count; a crash without output counts as a failure
run_suite() {
	local name="$1" rc=0
	shift
	echo "=== $name"
	"$@" >"$LOG" 2>&1 || rc=$?
	cat "$LOG"
	count_results
	if [ "$rc" -ne 0 ] && ! grep -qE 'FAILED|^not ok - ' "$LOG"; then
		echo "not ok - $name: exited $rc"
		failed=$((failed + 1))
	fi
}

show_diffs() {
	for f in regression.diffs output_iso/regression.diffs; do
		if [ -s "$f" ]; then
			echo "----- $f"
			cat "$f"
		fi
	done
}

for mode in preload nopreload; do
	cluster="$WORK/$mode"
	"$ROOT/scripts/cluster.sh" start "$cluster" "$mode"
	eval "$("$ROOT/scripts/cluster.sh" env "$cluster")"
	export PGLEASE_CLUSTER="$cluster"
	rm -f regression.diffs output_iso/regression.diffs

	run_suite "pg_regress ($mode)" make -s installcheck ISOLATION=
	run_suite "isolation ($mode)" make -s installcheck REGRESS=
	show_diffs
	for t in tests/shell/*.sh; do
		[ "$(basename "$t")" = lib.sh ] && continue
		run_suite "$(basename "$t" .sh) ($mode)" bash "$t"
	done
	if [ "$mode" = preload ]; then
		psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE pglease_client"
		psql -X -q -v ON_ERROR_STOP=1 -d pglease_client -c "CREATE EXTENSION pg_lease"
		export PGDATABASE=pglease_client
		run_suite "advise_test" "$ROOT/build/client/advise_test"
		run_suite "consumer of the installed package" "$ROOT/scripts/build-consumer.sh"
		# last: it restarts the cluster
		run_suite "client_test" "$ROOT/build/client/client_test"
	fi

	"$ROOT/scripts/cluster.sh" stop "$cluster"
	unset PGDATABASE
	if grep -E 'PANIC|TRAP:|terminated by signal' "$cluster/server.log"; then
		echo "not ok - server log of $mode cluster is clean"
		failed=$((failed + 1))
	else
		echo "ok - server log of $mode cluster is clean"
		passed=$((passed + 1))
	fi
done

# the quick part of the fault suite (make faults runs it in full)
run_suite "fault suite, quick (tests/faults)" env FAULTS_QUICK=1 FAULTS_SKIP_BUILD=1 "$ROOT/scripts/faults.sh"

echo
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
