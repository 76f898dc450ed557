#!/usr/bin/env bash
# build-consumer.sh -- build examples/consumer against the *installed* pglease
# package (find_package(pglease)) and run it against the test server.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
BUILD="$ROOT/build/consumer"
rm -rf "$BUILD"
cmake -S "$ROOT/examples/consumer" -B "$BUILD" >/dev/null
cmake --build "$BUILD" >/dev/null
out="$("$BUILD/consumer")"
echo "$out"
expect consumer_built_with_find_package_acquires_and_writes "output above" \
	'grep -q "^token [0-9]* wrote$" <<<"$out" && grep -q "^Safety: fencing$" <<<"$out"'
expect pkg_config_file_installed "pkg-config finds no pglease" 'pkg-config --exists pglease'
finish
