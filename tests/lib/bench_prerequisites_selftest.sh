#!/usr/bin/env bash
# bench_prerequisites_selftest.sh -- bench/run.sh installs nothing: its
# prerequisite check (bench_prerequisites, bench/common.sh) stops with a
# message saying how to get what is missing ('make deps', 'make install')
# instead of running scripts/install-deps.sh or installing the extension, and
# finds curl's header where Debian puts it (/usr/include/<multiarch>/curl/).
# It runs the check in a planted checkout whose install scripts only leave a
# mark, with a PATH of the real tools (one left out) and a pg_config naming
# empty directories.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
T="$(mktemp -d)"
on_exit 'rm -rf "$T"'

# the planted checkout: install scripts that mark, a make that builds a pg_lease.so
mkdir -p "$T/repo/scripts" "$T/repo/extension" "$T/pglib" "$T/pgshare/extension"
for s in install-deps install-extension; do
	printf '#!/bin/sh\ntouch %q/ran-%s\n' "$T" "$s" >"$T/repo/scripts/$s.sh"
	chmod +x "$T/repo/scripts/$s.sh"
done
printf 'all:\n\t@echo built >pg_lease.so\n' >"$T/repo/Makefile"
cp "$ROOT/pg_lease.control" "$T/repo/"
cp "$ROOT/scripts/cluster.sh" "$T/repo/scripts/"

# bin_without TOOL -- a directory of the real tools the check looks for and
# uses, without TOOL, and a pg_config naming the empty directories
bin_without() {
	local dir="$T/bin-$1" tool
	rm -rf "$dir" && mkdir -p "$dir"
	for tool in redis-server redis-cli etcd java g++ cmake curl make cmp sh touch cat dirname; do
		[ "$tool" = "$1" ] && continue
		command -v "$tool" >/dev/null 2>&1 ||
			die "$tool not found: the test needs the benchmark's tools ('make deps')"
		ln -s "$(command -v "$tool")" "$dir/$tool"
	done
	printf '#!/bin/sh\ncase "$1" in --bindir) echo %q;; --pkglibdir) echo %q;; --sharedir) echo %q;; esac\n' \
		"$T/pgbin" "$T/pglib" "$T/pgshare" >"$dir/pg_config"
	chmod +x "$dir/pg_config"
	mkdir -p "$T/pgbin" && ln -sf "$(command -v psql)" "$T/pgbin/psql"
	echo "$dir"
}

# check_in BIN -- run bench_prerequisites with PATH=BIN; its stderr, then "rc=N"
check_in() {
	local rc=0 out
	out="$(PATH="$1" REPO="$T/repo" BENCH_DIR="$ROOT/bench" "$BASH" -c '
		source "'"$ROOT"'/scripts/lib/common.sh"
		log() { echo "log: $*" >&2; }
		source "$BENCH_DIR/common.sh"
		bench_prerequisites' 2>&1)" || rc=$?
	printf '%s\nrc=%s' "$out" "$rc"
}

out="$(check_in "$(bin_without etcd)")"
expect missing_tool_stops_the_run "got '$out'" '[[ "$out" == *"rc=1" ]]'
expect missing_tool_is_named_with_make_deps "got '$out'" '[[ "$out" == *"missing: etcd"*"make deps"* ]]'
expect missing_tool_runs_no_installer "ran: $(ls "$T" | grep ran- || true)" '[ ! -e "$T/ran-install-deps" ]'

# every tool and header present: the installed extension (none here) differs
out="$(check_in "$(bin_without none)")"
expect curl_header_found_under_multiarch "got '$out'" '[[ "$out" != *"curl/curl.h"* ]]'
expect stale_extension_stops_the_run "got '$out'" '[[ "$out" == *"rc=1" ]]'
expect stale_extension_says_make_install "got '$out'" '[[ "$out" == *"differs"*"make install"* ]]'
expect nothing_installed "ran: $(ls "$T" | grep ran- || true)" \
	'[ ! -e "$T/ran-install-deps" ] && [ ! -e "$T/ran-install-extension" ]'
finish
