#!/usr/bin/env bash
# redis.sh -- a throwaway redis-server on a loopback port, its files in a directory.
#
#   redis.sh start DIR PORT [persist] [NAME=VALUE...]
#                                       start (persist: AOF with appendfsync always);
#                                       each NAME=VALUE is one more redis.conf line
#                                       "NAME VALUE" (requirepass=PW: clients must AUTH)
#   redis.sh stop DIR                   SIGTERM via the pidfile, wait for the exit
#   redis.sh kill DIR                   SIGKILL (a crash: nothing flushed on the way out)
#   redis.sh restart DIR                stop, then start with the same port, mode and lines
#
# Data, pidfile and log live in DIR, so a test owns its servers and can crash
# them.  No RDB snapshots ever (save ""); without persist nothing survives a
# restart, with persist every write is fsynced to the AOF before the reply
# (what the Redis provider's fencing token needs to stay monotonic).
# redis-server runs fine as root, so unlike cluster.sh no user switch.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh" # die, and the pidfile plumbing

command -v redis-server >/dev/null 2>&1 ||
	die "redis-server not found: install redis-server (scripts/install-deps.sh)"
command -v redis-cli >/dev/null 2>&1 ||
	die "redis-cli not found: install redis-tools (scripts/install-deps.sh)"

cmd="${1:-}"; dir="${2:-}"
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: redis.sh start DIR PORT [persist] [NAME=VALUE...] | stop|kill|restart DIR"

# extra_lines NAME=VALUE... -- the redis.conf lines they stand for; a name is
# lower-case letters and '-', a value one word (no space, no quote)
extra_lines() {
	local option
	for option in "$@"; do
		[[ "$option" =~ ^([a-z][a-z-]*)=([^[:space:]\"\']+)$ ]] ||
			die "option '${option%%=*}=...' is not NAME=VALUE (NAME: a redis.conf directive, VALUE: one word)"
		echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"
	done
}

# answers PORT -- the server on PORT answers: PONG, or NOAUTH when it wants a password
answers() {
	local reply
	reply="$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null || true)"
	[ "$reply" = PONG ] || [[ "$reply" == NOAUTH* ]]
}

case "$cmd" in
start)
	port="${3:-}"; mode="${4:-volatile}"
	shift 3 || true
	if [ "$mode" = persist ] || [ "$mode" = volatile ]; then shift || true; else mode=volatile; fi
	[[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 65535 ] ||
		die "start needs a port (1-65535), got '${port}'"
	[ "$port" -ne 6379 ] || die "port 6379 belongs to a system redis-server; tests use their own ports"
	extra="$(extra_lines "$@")"
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd)"
	# a server already on the port would answer our PING and pass for this one
	claim "$dir/redis.pid" "$port"
	echo "$port" >"$dir/port"
	echo "$mode" >"$dir/mode"
	printf '%s\n' "$@" >"$dir/options"
	{
		echo "bind 127.0.0.1"
		echo "port $port"
		echo "dir $dir"
		echo "pidfile $dir/redis.pid"
		echo "logfile $dir/redis.log"
		echo "daemonize yes"
		echo "save \"\""
		if [ "$mode" = persist ]; then
			echo "appendonly yes"
			echo "appendfsync always"
		else
			echo "appendonly no"
		fi
		[ -z "$extra" ] || echo "$extra"
	} >"$dir/redis.conf"
	rm -f "$dir/redis.pid"
	redis-server "$dir/redis.conf" ||
		{ tail -20 "$dir/redis.log" >&2 2>/dev/null || true; die "redis-server did not start on port $port"; }
	# up to 10 s for the first PONG (an AOF replay after a crash takes a moment)
	for ((i = 0; i < 200; i++)); do
		if answers "$port"; then
			exit 0
		fi
		sleep 0.05
	done
	tail -20 "$dir/redis.log" >&2 2>/dev/null || true
	die "redis-server on port $port did not answer PING within 10 s (log: $dir/redis.log)"
	;;
stop)
	if pid="$(pid_of "$dir/redis.pid")"; then
		kill -TERM "$pid"
		wait_gone "$pid" 30 || die "redis-server (pid $pid) did not exit within 30 s of SIGTERM"
	fi
	;;
kill)
	if pid="$(pid_of "$dir/redis.pid")"; then
		kill -KILL "$pid"
		wait_gone "$pid" 10 || die "redis-server (pid $pid) still there after SIGKILL"
	fi
	;;
restart)
	[ -f "$dir/port" ] || die "$dir holds no server started by redis.sh start"
	"$0" stop "$dir"
	mapfile -t options < <(grep -v '^$' "$dir/options" 2>/dev/null || true)
	"$0" start "$dir" "$(cat "$dir/port")" "$(cat "$dir/mode")" "${options[@]}"
	;;
*)
	die "unknown command '$cmd' (start, stop, kill, restart)"
	;;
esac
