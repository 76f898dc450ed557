#!/usr/bin/env bash
# faults.sh [ctest args...] -- make faults: the fault, failover, partition, pooler,
# hostile-input, privilege and safety-matrix suite (tests/faults/), the
# registered tests of label "faults" (tests/CMakeLists.txt), in full: the
# extension built with its Assert()s checked, and the client suite under
# AddressSanitizer/UBSan too; the normal build is put back after.  With
# FAULTS_QUICK=1 the reduced run of make test instead.  Each test starts its
# own clusters on its own ports.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
cd "$ROOT"
export FAULTS_QUICK="${FAULTS_QUICK:-0}"
BUILD="$ROOT/build/client"
if [ "${FAULTS_SKIP_BUILD:-0}" != 1 ]; then
	"$ROOT/scripts/install-deps.sh"
	"$ROOT/scripts/install-extension.sh"
fi
if [ "$FAULTS_QUICK" != 1 ]; then
	make -s clean >/dev/null
	make -s LEASE_ASSERTS=1 >/dev/null
	make -s install >/dev/null
	echo "# extension built with USE_ASSERT_CHECKING"
	on_exit 'make -s clean >/dev/null; make -s >/dev/null; make -s install >/dev/null'
fi
cmake -S "$ROOT/client" -B "$BUILD" >/dev/null
cmake --build "$BUILD" -j2 >/dev/null

run_ctest "faults" "$BUILD" -L faults "$@"
