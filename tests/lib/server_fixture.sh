#!/usr/bin/env bash
# server_fixture.sh start|stop SCRIPT DIR -- a CTest fixture of a throwaway
# server (tests/CMakeLists.txt): SCRIPT is scripts/redis.sh, etcd.sh or
# zookeeper.sh.  start removes what an interrupted run left in DIR and starts
# the server on a port drawn free (SCRIPT retries on a bind race); the tests
# read the port from DIR/port.  stop kills the server and removes DIR.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
[ $# -eq 3 ] || die "usage: server_fixture.sh start|stop SCRIPT DIR"
cmd="$1" script="$2" dir="$3"
[ -x "$script" ] || die "$script is not a server script"

case "$cmd" in
start)
	# a server left by an interrupted run would keep its old port and data
	"$script" kill "$dir" >/dev/null 2>&1 || true
	rm -rf "$dir"
	mkdir -p "$(dirname "$dir")"
	address="$("$script" start "$dir")"
	expect "${script##*/}_fixture_started" "it printed '$address', DIR/port holds '$(cat "$dir/port" 2>/dev/null)'" \
		'[ "$address" = "127.0.0.1:$(cat "$dir/port")" ]'
	finish
	;;
stop)
	"$script" kill "$dir"
	rm -rf "$dir"
	;;
*)
	die "unknown command $cmd"
	;;
esac
