#!/usr/bin/env bash
# faults.sh -- make faults: the fault, failover, pooler and hostile-input
# suite (tests/faults/).  With FAULTS_QUICK=1 (what make test runs) each test
# does its reduced run.  Each test starts its own clusters on its own port.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
QUICK="${FAULTS_QUICK:-0}"
if [ "${FAULTS_SKIP_BUILD:-0}" != 1 ]; then
	"$ROOT/scripts/install-deps.sh"
	"$ROOT/scripts/install-extension.sh"
fi
# matrix: the safety matrix of every provider (tests/faults/matrix/, its own
# ports 59000-59099: MATRIX_PORT)
tests="checker_selftest crash pause failover hostile_input privilege_audit pooler matrix"
if [ "$QUICK" != 1 ]; then
	# the full run: the extension with its Assert()s checked, and the client
	# suite under AddressSanitizer/UBSan; the normal build is put back after
	tests="$tests client_sanitized"
	make -s clean >/dev/null
	make -s LEASE_ASSERTS=1 >/dev/null
	make -s install >/dev/null
	echo "# extension built with USE_ASSERT_CHECKING"
	restore_build() { make -s clean >/dev/null; make -s >/dev/null; make -s install >/dev/null; }
	trap 'restore_build' EXIT
fi

passed=0
failed=0
port=54400
LOG="$(mktemp /tmp/pg_lease_faults_log.XXXXXX)"
for t in $tests; do
	script="tests/faults/$t.sh"
	[ -f "$script" ] || { echo "not ok - $t: $script missing"; failed=$((failed + 1)); continue; }
	echo "=== $t"
	start=$(date +%s)
	rc=0
	FAULTS_PORT="$port" FAULTS_BOUNCER_PORT=$((port + 10000)) bash "$script" >"$LOG" 2>&1 || rc=$?
	cat "$LOG"
	ok=$(grep -c '^ok - ' "$LOG" || true)
	bad=$(grep -c '^not ok - ' "$LOG" || true)
	passed=$((passed + ok))
	failed=$((failed + bad))
	if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
		echo "not ok - $t: exited $rc"
		failed=$((failed + 1))
	fi
	echo "# $t: $(($(date +%s) - start)) s"
	port=$((port + 5))
done
rm -f "$LOG"
echo
echo "faults: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
