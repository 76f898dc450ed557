#!/usr/bin/env bash
# redis.sh -- a throwaway redis-server on a loopback port, its files in a directory.
#
#   redis.sh start DIR [PORT] [persist] [ipv6] [tls=CERTDIR] [NAME=VALUE...]
#                                        start (persist: AOF with appendfsync always;
#                                        ipv6: listen on [::1] too; each NAME=VALUE
#                                        one more redis.conf line "NAME VALUE", e.g.
#                                        requirepass=PW: clients must AUTH); prints
#                                        its address, 127.0.0.1:PORT
#   redis.sh stop DIR                    SIGTERM via the pidfile, wait for the exit
#   redis.sh kill DIR                    SIGKILL (a crash: nothing flushed on the way out)
#   redis.sh restart DIR                 stop, then start with the same port, mode and lines
#                                        (a second "start DIR" takes its options anew)
#
# Without PORT, start uses the port in DIR/port (a server of DIR started
# before comes back on its port), or else draws a free one (free_port,
# scripts/lib/ports.sh) and, when redis-server fails to bind it ("address
# already in use": another server took it between the check and the bind),
# draws another, 5 tries; the port used is written to DIR/port.  With PORT,
# a port in use fails at once, the message saying "address already in use",
# for a caller that draws its own ports to retry.  The server counts as up
# when the redis-server answering on the port is the one of DIR's pidfile.
#
# Data, pidfile and log live in DIR, so a test owns its servers and can crash
# them.  No RDB snapshots ever (save ""); without persist nothing survives a
# restart, with persist every write is fsynced to the AOF before the reply
# (what the Redis provider's fencing token needs to stay monotonic).
# redis-server runs fine as root, so unlike cluster.sh no user switch.
#
# tls=CERTDIR (material made by scripts/certs.sh): TLS only, "port 0" and
# "tls-port PORT", the server presenting CERTDIR/server.crt, trusting
# CERTDIR/ca.crt, and requiring a client certificate (tls-auth-clients yes).
# A NAME=VALUE line comes after those and wins: tls-auth-clients=optional, or
# tls-cert-file=CERTDIR/expired.crt tls-key-file=CERTDIR/expired.key for a
# server whose certificate a client must refuse.  The script's own check that
# the server is up speaks TLS with the test client certificate and without
# verifying the server (whatever certificate it was told to present).
#
# PGLEASE_LISTEN_HOST=ADDR (default 127.0.0.1): the IPv4 address it binds and
# prints instead of loopback (a server in a network namespace of its own,
# tests/faults/partition/); restart needs it set again.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh" # die, and the pidfile plumbing
LISTEN="${PGLEASE_LISTEN_HOST:-127.0.0.1}"

command -v redis-server >/dev/null 2>&1 ||
	die "redis-server not found: install redis-server (scripts/install-deps.sh)"
command -v redis-cli >/dev/null 2>&1 ||
	die "redis-cli not found: install redis-tools (scripts/install-deps.sh)"

cmd="${1:-}"; dir="${2:-}"
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: redis.sh start DIR [PORT] [persist] [ipv6] [tls=CERTDIR] [NAME=VALUE...] | stop|kill|restart DIR"

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

# cli PORT ARGS... -- redis-cli to the server on PORT, with its requirepass
# if it has one, over TLS if it speaks TLS
cli() {
	local port="$1" pw certs
	shift
	pw="$(sed -n 's/^requirepass=//p' "$dir/options" 2>/dev/null | tail -1)"
	certs="$(sed -n 's/^tls=//p' "$dir/options" 2>/dev/null | tail -1)"
	local -a tls=()
	[ -z "$certs" ] || tls=(--tls --insecure --cert "$certs/client.crt" --key "$certs/client.key")
	REDISCLI_AUTH="$pw" redis-cli --no-auth-warning "${tls[@]}" -h "$LISTEN" -p "$port" "$@"
}

# tls_lines CERTDIR PORT -- the redis.conf lines of a TLS-only server on PORT
tls_lines() {
	local certs="$1" port="$2" f
	for f in ca.crt server.crt server.key client.crt client.key; do
		[ -r "$certs/$f" ] || die "tls=$certs: no readable $f there (make the material with scripts/certs.sh DIR)"
	done
	echo "port 0"
	echo "tls-port $port"
	echo "tls-cert-file $certs/server.crt"
	echo "tls-key-file $certs/server.key"
	echo "tls-ca-cert-file $certs/ca.crt"
	echo "tls-auth-clients yes"
}

# start_on PORT MODE -- write DIR's config for PORT and start redis-server;
# 0 once it answers, 2 if the port is in use (bind race), dies on anything else
start_on() {
	local port="$1" mode="$2" log="$dir/redis.log" from pid i
	claim "$dir/redis.pid"
	if (exec 3<>"/dev/tcp/$LISTEN/$port") 2>/dev/null; then
		echo "redis.sh: port $port: address already in use (something listens on it)" >&2
		return 2
	fi
	{
		if [ "$ipv6" = yes ]; then echo "bind $LISTEN ::1"; else echo "bind $LISTEN"; fi
		# protected mode refuses every client but loopback's when there is no password
		[ "$LISTEN" = 127.0.0.1 ] || echo "protected-mode no"
		if [ -n "$tls" ]; then tls_lines "$tls" "$port"; else echo "port $port"; fi
		echo "dir $dir"
		echo "pidfile $dir/redis.pid"
		echo "logfile $log"
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
	from=$(($(stat -c %s "$log" 2>/dev/null || echo 0) + 1))
	redis-server "$dir/redis.conf" ||
		{ tail -20 "$log" >&2 2>/dev/null || true; die "redis-server did not start on port $port"; }
	# up to 10 s (an AOF replay after a crash takes a moment) until the
	# server on the port is ours: its process_id is the pidfile's
	for ((i = 0; i < 200; i++)); do
		if tail -c "+$from" "$log" 2>/dev/null | grep -i 'address already in use' >/dev/null; then
			echo "redis.sh: port $port: address already in use (log: $log)" >&2
			return 2
		fi
		if pid="$(pid_of "$dir/redis.pid")" &&
			cli "$port" info server 2>/dev/null | grep -q "^process_id:$pid"; then
			return 0
		fi
		sleep 0.05
	done
	tail -20 "$log" >&2 2>/dev/null || true
	die "redis-server on port $port did not answer within 10 s (log: $log)"
}

case "$cmd" in
start)
	port="" mode=volatile options=() ipv6=no tls=""
	for arg in "${@:3}"; do
		case "$arg" in
		"") ;;
		volatile | persist) mode="$arg" ;;
		ipv6) ipv6=yes ;;
		tls=*)
			tls="${arg#tls=}"
			[ -d "$tls" ] || die "tls=$tls: not a directory (make the material with scripts/certs.sh DIR)"
			tls="$(cd "$tls" && pwd)"
			;;
		*=*) options+=("$arg") ;;
		*)
			[[ "$arg" =~ ^[0-9]+$ ]] && [ "$arg" -ge 1 ] && [ "$arg" -le 65535 ] && [ -z "$port" ] ||
				die "start takes a port (1-65535) and a mode (persist), got '$arg'"
			port="$arg"
			;;
		esac
	done
	[ "$port" != 6379 ] || die "port 6379 belongs to a system redis-server; tests use their own ports"
	extra="$(extra_lines "${options[@]}")"
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd)"
	{
		printf '%s\n' "${options[@]}"
		[ "$ipv6" = no ] || echo ipv6
		[ -z "$tls" ] || echo "tls=$tls"
	} >"$dir/options"
	[ -n "$port" ] || [ ! -s "$dir/port" ] || port="$(cat "$dir/port")"
	if [ -n "$port" ]; then
		start_on "$port" "$mode" || die "redis-server could not bind port $port: address already in use"
	else
		for ((try = 1; ; try++)); do
			port="$(free_port)" || die "no free port for redis-server"
			rc=0; start_on "$port" "$mode" || rc=$?
			[ "$rc" -ne 0 ] || break
			[ "$try" -lt 5 ] || die "redis-server found no free port in 5 tries (the last: $port)"
		done
	fi
	echo "$port" >"$dir/port"
	echo "$mode" >"$dir/mode"
	echo "$LISTEN:$port"
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
