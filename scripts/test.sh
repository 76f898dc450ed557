#!/usr/bin/env bash
# test.sh [ctest args...] -- make test: install what is needed, build the
# extension and the client, then run every registered test with ctest
# (tests/CMakeLists.txt registers them, with labels: the pg_regress and
# isolation suites and tests/shell/ in both modes, preloaded and not, on
# clusters CTest fixtures start; the C++ suites; the CLI against every
# provider; conformance; the quick fault suite and the quick HA run).
# Arguments go to ctest (e.g. -L unit, -R shell, -j1).  Tests run
# PGLEASE_TEST_JOBS at a time (default 4: on 2 cores the fastest that stays
# green, docs/tests.md; locks in tests/CMakeLists.txt keep apart the tests
# that must not overlap).  A line as each test starts and ends (with its time
# and result), every test's output in one log under build/client/test-logs/,
# a failed test's output shown; ends with one summary that names every failed
# test and the log (scripts/lib/runner.sh).  PGLEASE_TEST_INSTALL=0: no
# package installation, no install of the extension (it must be installed
# already), only the build and the tests.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
cd "$ROOT"
BUILD="$ROOT/build/client"

if [ "${PGLEASE_TEST_INSTALL:-1}" != 0 ]; then
	"$ROOT/scripts/install-deps.sh"
	# the extension, and the client (make install builds build/client)
	"$ROOT/scripts/install-extension.sh"
fi
cmake -S "$ROOT/client" -B "$BUILD" >/dev/null
cmake --build "$BUILD" -j2 >/dev/null

# label "full": tests only the full fault run has (make faults), left out here
# unless the arguments choose labels themselves; a -j of the arguments wins
jobs=(-j "${PGLEASE_TEST_JOBS:-4}")
case " $* " in
*" -LE "* | *" -L "*) run_ctest "make test" "$BUILD" "${jobs[@]}" "$@" ;;
*) run_ctest "make test" "$BUILD" "${jobs[@]}" -LE '^full$' "$@" ;;
esac
