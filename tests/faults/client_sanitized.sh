#!/usr/bin/env bash
# client_sanitized.sh -- the C++ client suite built with AddressSanitizer and
# UBSan (build/client-asan), run against its own preloaded cluster.  Any
# sanitizer report fails the run (halt_on_error, exit code 99).  Only in the
# full run (make faults): a quick one reports it skipped (exit 77, which
# CTest counts as skipped).
source "$(dirname "$0")/lib.sh"
[ "$QUICK" != 1 ] || { echo "# client_sanitized: only in the full run (make faults)"; exit 77; }
PORT="${FAULTS_PORT:-24404}"
BUILD="$ROOT/build/client-asan"
cmake -S "$ROOT/client" -B "$BUILD" -DPGLEASE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$BUILD" -j2 --target client_test pglease_cli >/dev/null

start_cluster "$WORK/pg" "$PORT"
use_cluster "$WORK/pg" "$PORT"
psql_q -d postgres -c "CREATE DATABASE pglease_client"
psql_q -d pglease_client -c "CREATE EXTENSION pg_lease"
export PGDATABASE=pglease_client PGLEASE_CLUSTER="$WORK/pg"
export PGLEASE_TEST_PORT="$PORT" # the restart tests call scripts/cluster.sh
export ASAN_OPTIONS="halt_on_error=1:exitcode=99:detect_leaks=1"
export LSAN_OPTIONS="suppressions=$ROOT/tests/faults/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=99"
rc=0
"$BUILD/client_test" >"$WORK/asan.log" 2>&1 || rc=$?
grep -E '^\[ +(OK|FAILED) +\]' "$WORK/asan.log" | grep ' ms)$' || true
if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$WORK/asan.log"; then
	grep -E -B3 -A12 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$WORK/asan.log" | head -40 | sed 's/^/#   /'
	echo "not ok - client_suite_clean_under_asan_ubsan"
	failures=$((failures + 1))
else
	expect "client_suite_clean_under_asan_ubsan" "client_test exited $rc" '[ "$rc" -eq 0 ]'
fi
finish
