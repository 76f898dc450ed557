#!/usr/bin/env bash
# zookeeper.sh -- a throwaway ZooKeeper server on a loopback port, its files in
# a directory; or one member of a local ensemble.
#
#   zookeeper.sh start DIR PORT [ENSEMBLE ID]   start, wait until it serves
#   zookeeper.sh stop DIR                       SIGTERM via the pidfile, wait for the exit
#   zookeeper.sh kill DIR                       SIGKILL (a crash)
#   zookeeper.sh restart DIR                    stop, then start as before
#   zookeeper.sh mode DIR                       print standalone, leader or follower (srvr)
#   zookeeper.sh break DIR RESOURCE             delete RESOURCE's lock nodes under /pglease
#                                               (a grant broken server-side; zkCli.sh deleteall)
#
# ENSEMBLE is the client ports of every member, comma-separated
# (e.g. 57001,57002,57003), ID this member's 1-based position in it.  Member
# N's quorum and election ports are its client port + 100 and + 200 (+ Q and
# + 2Q with ZK_PEER_OFFSET=Q, for a caller with a narrow port range).  Without
# ENSEMBLE the server is standalone.
#
# zoo.cfg: tickTime 200 ms, and session timeouts from minSessionTimeout 400 ms
# (2 ticks, ZooKeeper's default floor) to maxSessionTimeout 60 s (instead of
# the default 20 ticks), so the lease TTLs of the tests (0.8-10 s) are granted
# as asked.  The admin server is off, every four-letter word is allowed
# (srvr, ruok), data and log live in DIR.  The Debian package's own service
# is never used (install-deps.sh disables it).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh" # die, and the pidfile plumbing

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
	die "usage: zookeeper.sh start DIR PORT [ENSEMBLE ID] | stop|kill|restart|mode DIR"


# four_letter PORT WORD -- the server's answer to a four-letter word, or nothing
four_letter() {
	(
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 0
		printf '%s' "$2" >&3
		timeout 2 cat <&3 || true
	) 2>/dev/null || true
}

check_port() {
	[[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le 65535 ] || die "bad port '$1'"
	[ "$1" -ne 2181 ] || die "port 2181 belongs to a system ZooKeeper; tests use their own ports"
}

case "$cmd" in
start)
	port="${3:-}"; ensemble="${4:-}"; myid="${5:-}"
	check_port "$port"
	mkdir -p "$dir/data"
	dir="$(cd "$dir" && pwd)"
	claim "$dir/zookeeper.pid" "$port"
	echo "$port" >"$dir/port"
	echo "$ensemble" >"$dir/ensemble"
	echo "$myid" >"$dir/myid-arg"
	{
		echo "tickTime=200"
		echo "initLimit=25"
		echo "syncLimit=10"
		echo "minSessionTimeout=400"
		echo "maxSessionTimeout=60000"
		echo "dataDir=$dir/data"
		echo "clientPort=$port"
		echo "clientPortAddress=127.0.0.1"
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
		>>"$dir/zookeeper.log" 2>&1 </dev/null &
	echo $! >"$dir/zookeeper.pid"
	# a member of an ensemble serves only once a quorum is up: the caller
	# starts the others and waits itself (mode DIR)
	[ -z "$ensemble" ] || exit 0
	# up to 20 s for "imok" and a mode (JVM start, snapshot load)
	for ((i = 0; i < 200; i++)); do
		pid_of "$dir/zookeeper.pid" >/dev/null || { tail -20 "$dir/zookeeper.log" >&2; die "ZooKeeper on port $port exited"; }
		if [ "$(four_letter "$port" ruok)" = imok ] && four_letter "$port" srvr | grep -q '^Mode:'; then
			exit 0
		fi
		sleep 0.1
	done
	tail -20 "$dir/zookeeper.log" >&2 2>/dev/null || true
	die "ZooKeeper on port $port did not serve within 20 s (log: $dir/zookeeper.log)"
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
	"$0" start "$dir" "$(cat "$dir/port")" $(cat "$dir/ensemble") $(cat "$dir/myid-arg")
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
	/usr/share/zookeeper/bin/zkCli.sh -server "127.0.0.1:$(cat "$dir/port")" deleteall "/pglease/$encoded" \
		>"$dir/zkcli.out" 2>&1 || { cat "$dir/zkcli.out" >&2; die "zkCli.sh deleteall /pglease/$encoded failed"; }
	;;
*)
	die "unknown command '$cmd' (start, stop, kill, restart, mode, break)"
	;;
esac
