#!/usr/bin/env bash
# zookeeper.sh -- a throwaway ZooKeeper server on a loopback port, its files in
# a directory; or one member of a local ensemble.
#
#   zookeeper.sh start DIR [PORT [ENSEMBLE ID]] start; a standalone server: wait until it
#                                               serves, print its address, 127.0.0.1:PORT
#   zookeeper.sh stop DIR                       SIGTERM via the pidfile, wait for the exit
#   zookeeper.sh kill DIR                       SIGKILL (a crash)
#   zookeeper.sh restart DIR                    stop, then start as before
#   zookeeper.sh mode DIR                       print standalone, leader or follower (srvr)
#   zookeeper.sh break DIR RESOURCE             delete RESOURCE's lock nodes under /pglease,
#                                               and those of an election of that name under
#                                               /pglease/.election (a grant broken
#                                               server-side; zkCli.sh deleteall; fails if
#                                               neither folder exists)
#
# ENSEMBLE is the client ports of every member, comma-separated
# (e.g. 22001,22002,22003), ID this member's 1-based position in it.  Member
# N's quorum and election ports are its client port + 100 and + 200 (+ Q and
# + 2Q with ZK_PEER_OFFSET=Q, for a caller with a narrow port range).  Without
# ENSEMBLE the server is standalone.
#
# Without PORT, start uses DIR/port (and the ensemble of DIR's last start: a
# server of DIR comes back as it was), or else starts a standalone server on
# a free port (free_port, scripts/lib/ports.sh) and, when it fails to bind
# ("address already in use": another server took the port between the check
# and the bind), on a new one, 5 tries; the port used is written to DIR/port.
# With PORT, a port in use fails at once, the message saying "address already
# in use", for a caller that draws its own ports to retry.
#
# zoo.cfg: tickTime 200 ms, and session timeouts from minSessionTimeout 400 ms
# (2 ticks, ZooKeeper's default floor) to maxSessionTimeout 60 s (instead of
# the default 20 ticks), so the lease TTLs of the tests (0.8-10 s) are granted
# as asked.  The admin server is off, every four-letter word is allowed
# (srvr, ruok), data and log live in DIR.  The Debian package's own service
# is never used (install-deps.sh disables it).
#
# PGLEASE_LISTEN_HOST=ADDR (default 127.0.0.1): the IPv4 address of the
# client port instead of loopback (a server in a network namespace of its
# own, tests/faults/partition/); restart and break need it set again.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh" # die, and the pidfile plumbing
LISTEN="${PGLEASE_LISTEN_HOST:-127.0.0.1}"

JAVA="${JAVA:-java}"
peer="${ZK_PEER_OFFSET:-100}"
ZK_JAR=/usr/share/java/zookeeper.jar # its manifest's Class-Path names its other jars
command -v "$JAVA" >/dev/null 2>&1 ||
	die "java not found: install default-jre-headless (scripts/install-deps.sh)"
[ -f "$ZK_JAR" ] || die "$ZK_JAR not found: install zookeeper (scripts/install-deps.sh)"
# slf4j-simple (pulled in by the zookeeper package) makes the log readable
classpath="$ZK_JAR"
[ -f /usr/share/java/slf4j-simple.jar ] && classpath="$classpath:/usr/share/java/slf4j-simple.jar"

cmd="${1:-}"; dir="${2:-}"
[ -n "$cmd" ] && [ -n "$dir" ] ||
	die "usage: zookeeper.sh start DIR [PORT [ENSEMBLE ID]] | stop|kill|restart|mode DIR"


# four_letter PORT WORD -- the server's answer to a four-letter word, or nothing
four_letter() {
	(
		exec 3<>"/dev/tcp/$LISTEN/$1" || exit 0
		printf '%s' "$2" >&3
		timeout 2 cat <&3 || true
	) 2>/dev/null || true
}

check_port() {
	[[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le 65535 ] || die "bad port '$1'"
	[ "$1" -ne 2181 ] || die "port 2181 belongs to a system ZooKeeper; tests use their own ports"
}

# write_config PORT ENSEMBLE ID -- DIR/zoo.cfg (and data/myid of a member)
write_config() {
	local port="$1" ensemble="$2" myid="$3" i p
	{
		echo "tickTime=200"
		echo "initLimit=25"
		echo "syncLimit=10"
		echo "minSessionTimeout=400"
		echo "maxSessionTimeout=60000"
		echo "dataDir=$dir/data"
		echo "clientPort=$port"
		echo "clientPortAddress=$LISTEN"
		echo "admin.enableServer=false"
		echo "4lw.commands.whitelist=*"
		echo "maxClientCnxns=0"
		if [ -n "$ensemble" ]; then
			[[ "$myid" =~ ^[0-9]+$ ]] || die "an ensemble member needs its id (1-based position in '$ensemble')"
			IFS=, read -r -a members <<<"$ensemble"
			[ "$myid" -ge 1 ] && [ "$myid" -le "${#members[@]}" ] || die "id $myid is not in '$ensemble'"
			[ "${members[$((myid - 1))]}" = "$port" ] || die "member $myid of '$ensemble' is not port $port"
			for i in "${!members[@]}"; do
				p="${members[$i]}"
				check_port "$p"
				echo "server.$((i + 1))=127.0.0.1:$((p + peer)):$((p + 2 * peer))"
			done
			echo "$myid" >"$dir/data/myid"
		fi
	} >"$dir/zoo.cfg"
}

# start_on PORT ENSEMBLE ID -- start the server; 0 once a standalone one
# serves (a member: once started), 2 if its port is in use (bind race), dies
# on anything else
start_on() {
	local port="$1" ensemble="$2" myid="$3" log="$dir/zookeeper.log" from i
	claim "$dir/zookeeper.pid"
	if (exec 3<>"/dev/tcp/$LISTEN/$port") 2>/dev/null; then
		echo "zookeeper.sh: port $port: address already in use (something listens on it)" >&2
		return 2
	fi
	write_config "$port" "$ensemble" "$myid" || exit 1
	from=$(($(stat -c %s "$log" 2>/dev/null || echo 0) + 1))
	# a JVM tuned to start fast and stay small.  leaderConnectDelayDuringRetryMs:
	# a follower of a newly elected leader tries its quorum port 5 times, by
	# default 100 ms apart; a leader slower than that to open it (a JVM on a
	# busy machine) lost its followers, and the ensemble went back to electing,
	# round after round (seen: 17-33 s without a leader after one stopped).
	# 500 ms apart keeps the tries within initLimit (25 ticks, 5 s).
	nohup "$JAVA" -Xms32m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
		-Dorg.slf4j.simpleLogger.defaultLogLevel=info -Dzookeeper.jmx.log4j.disable=true \
		-Dzookeeper.leaderConnectDelayDuringRetryMs=500 \
		-cp "$classpath" org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" \
		>>"$log" 2>&1 </dev/null &
	echo $! >"$dir/zookeeper.pid"
	# a member of an ensemble serves only once a quorum is up: the caller
	# starts the others and waits itself (mode DIR)
	[ -z "$ensemble" ] || return 0
	# up to 20 s for "imok" and a mode (JVM start, snapshot load)
	for ((i = 0; i < 200; i++)); do
		if tail -c "+$from" "$log" | grep -i 'address already in use' >/dev/null; then
			kill -KILL "$(cat "$dir/zookeeper.pid")" 2>/dev/null || true
			wait_gone "$(cat "$dir/zookeeper.pid")" 10 || true
			echo "zookeeper.sh: port $port: address already in use (log: $log)" >&2
			return 2
		fi
		pid_of "$dir/zookeeper.pid" >/dev/null || { tail -20 "$log" >&2; die "ZooKeeper on port $port exited (log: $log)"; }
		if [ "$(four_letter "$port" ruok)" = imok ] && four_letter "$port" srvr | grep -q '^Mode:'; then
			return 0
		fi
		sleep 0.1
	done
	tail -20 "$log" >&2 2>/dev/null || true
	die "ZooKeeper on port $port did not serve within 20 s (log: $log)"
}

case "$cmd" in
start)
	port="${3:-}"; ensemble="${4:-}"; myid="${5:-}"
	mkdir -p "$dir/data"
	dir="$(cd "$dir" && pwd)"
	if [ -z "$port" ] && [ -s "$dir/port" ]; then
		port="$(cat "$dir/port")"
		ensemble="$(cat "$dir/ensemble" 2>/dev/null || true)"
		myid="$(cat "$dir/myid-arg" 2>/dev/null || true)"
	fi
	if [ -n "$port" ]; then
		check_port "$port"
		start_on "$port" "$ensemble" "$myid" || die "ZooKeeper could not bind port $port: address already in use"
	else
		for ((try = 1; ; try++)); do
			port="$(free_port)" || die "no free port for ZooKeeper"
			rc=0; start_on "$port" "" "" || rc=$?
			[ "$rc" -ne 0 ] || break
			[ "$try" -lt 5 ] || die "ZooKeeper found no free port in 5 tries (the last: $port)"
		done
	fi
	echo "$port" >"$dir/port"
	echo "$ensemble" >"$dir/ensemble"
	echo "$myid" >"$dir/myid-arg"
	[ -n "$ensemble" ] || echo "$LISTEN:$port"
	;;
stop | kill)
	if pid="$(pid_of "$dir/zookeeper.pid")"; then
		if [ "$cmd" = stop ]; then
			kill -TERM "$pid"
			wait_gone "$pid" 30 || die "ZooKeeper (pid $pid) did not exit within 30 s of SIGTERM"
		else
			kill -KILL "$pid"
			wait_gone "$pid" 10 || die "ZooKeeper (pid $pid) still there after SIGKILL"
		fi
	fi
	;;
restart)
	[ -f "$dir/port" ] || die "$dir holds no server started by zookeeper.sh start"
	"$0" stop "$dir"
	"$0" start "$dir"
	;;
mode)
	[ -f "$dir/port" ] || die "$dir holds no server started by zookeeper.sh start"
	four_letter "$(cat "$dir/port")" srvr | sed -n 's/^Mode: //p'
	;;
break)
	[ -f "$dir/port" ] || die "$dir holds no server started by zookeeper.sh start"
	resource="${3:-}"
	[ -n "$resource" ] || die "break needs a resource"
	# the provider's encoding (client/src/zookeeper/target.hpp): every byte
	# outside [A-Za-z0-9_-] written %XX
	encoded=""
	export LC_ALL=C
	for ((i = 0; i < ${#resource}; i++)); do
		c="${resource:i:1}"
		if [[ "$c" =~ ^[A-Za-z0-9_-]$ ]]; then
			encoded+="$c"
		else
			encoded+="$(printf '%%%02X' "'$c")"
		fi
	done
	# a lock's folder, and an election's (client/src/zookeeper/target.hpp)
	deleted=0
	for folder in "/pglease/$encoded" "/pglease/.election/$encoded"; do
		if /usr/share/zookeeper/bin/zkCli.sh -server "$LISTEN:$(cat "$dir/port")" deleteall "$folder" \
			>"$dir/zkcli.out" 2>&1; then
			deleted=1
		elif ! grep -q 'Node does not exist' "$dir/zkcli.out"; then
			cat "$dir/zkcli.out" >&2
			die "zkCli.sh deleteall $folder failed"
		fi
	done
	[ "$deleted" = 1 ] || die "zkCli.sh deleteall: neither /pglease/$encoded nor /pglease/.election/$encoded exists"
	;;
*)
	die "unknown command '$cmd' (start, stop, kill, restart, mode, break)"
	;;
esac
