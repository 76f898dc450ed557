#!/usr/bin/env bash
# build-consumer.sh -- build examples/consumer against the *installed* pglease
# package (find_package(pglease)) and run it against the test server.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$ROOT/build/consumer"
rm -rf "$BUILD"
cmake -S "$ROOT/examples/consumer" -B "$BUILD" >/dev/null
cmake --build "$BUILD" >/dev/null
out="$("$BUILD/consumer")"
echo "$out"
if grep -q '^token [0-9]* wrote$' <<<"$out" && grep -q '^Safety: fencing$' <<<"$out"; then
	echo "ok - consumer_built_with_find_package_acquires_and_writes"
else
	echo "not ok - consumer_built_with_find_package_acquires_and_writes"
	exit 1
fi
pkg-config --exists pglease && echo "ok - pkg_config_file_installed" || { echo "not ok - pkg_config_file_installed"; exit 1; }
