#!/usr/bin/env bash
# ha.sh -- make ha: install what it needs (pg_auto_failover from Debian's
# archive, the extension, the client), then tests/ha/run.sh: automatic
# failovers under load, the history checker, the unavailability window.
# HA_QUICK=1: the quick run (2 failovers); HA_SKIP_BUILD=1: nothing installed
# or built first.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
if [ "${HA_SKIP_BUILD:-0}" != 1 ]; then
	"$ROOT/scripts/install-deps.sh"
	"$ROOT/scripts/install-extension.sh"
	make -s client
fi
args=()
[ "${HA_QUICK:-0}" = 1 ] && args+=(--quick)
exec "$ROOT/tests/ha/run.sh" "${args[@]}"
