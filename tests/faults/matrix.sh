#!/usr/bin/env bash
# matrix.sh -- the safety matrix (tests/faults/matrix/runner.sh), run by scripts/faults.sh
exec bash "$(dirname "$0")/matrix/runner.sh" "$@"
