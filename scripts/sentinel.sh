#!/usr/bin/env bash
# sentinel.sh -- a throwaway Redis Sentinel deployment on loopback: a master
# and two asynchronous replicas (scripts/redis.sh, then REPLICAOF) watched by
# three Sentinels (redis-server CONF --sentinel), every one on a free port,
# all files under DIR.  The master is monitored as "pglease" with quorum 2.
#
#   sentinel.sh start DIR [persist] [NAME=VALUE...]   start all six, wait
#                        until the replicas are in sync and every Sentinel
#                        passes SENTINEL CKQUORUM; prints the addresses
#                        (below).  persist and NAME=VALUE go to every data
#                        node's redis.sh start (AOF with appendfsync always;
#                        redis.conf lines); with requirepass=PW the replicas
#                        get masterauth PW and the Sentinels auth-pass PW
#   sentinel.sh stop DIR                    SIGTERM: Sentinels, then nodes
#   sentinel.sh kill DIR                    SIGKILL all (a test's cleanup)
#   sentinel.sh master DIR                  the master's address, as the
#                        first Sentinel that answers names it
#   sentinel.sh failover DIR [SECONDS]      SENTINEL FAILOVER, then wait (10 s)
#                        until every Sentinel names a new master that says
#                        ROLE master; prints its address
#   sentinel.sh kill-master DIR             SIGKILL the master now; prints
#                        its address (the Sentinels fail over on their own)
#   sentinel.sh wait-new-master DIR OLD [SECONDS]   wait (30 s) until every
#                        Sentinel names a master other than OLD (host:port)
#                        that says ROLE master; prints its address
#
# start prints, one per line:
#   master 127.0.0.1:P
#   replica 127.0.0.1:P            (twice)
#   sentinels 127.0.0.1:S1,127.0.0.1:S2,127.0.0.1:S3
#   url redis+sentinel://127.0.0.1:S1,127.0.0.1:S2,127.0.0.1:S3/pglease
#
# Timing: down-after-milliseconds 1000 and failover-timeout 5000, so a
# killed master is replaced within a few seconds.  The Sentinels rewrite
# their own config files (DIR/sentinelN/sentinel.conf: writable, as
# Sentinel requires), and the nodes' configs are rewritten by the Sentinels'
# CONFIG REWRITE when they reconfigure them.  A Sentinel's port lost to a
# bind race is drawn again (5 tries), as redis.sh does for the nodes.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh" # die, free_port, the pidfile plumbing

REDIS="$(dirname "${BASH_SOURCE[0]}")/redis.sh"
MASTER_NAME=pglease

command -v redis-server >/dev/null 2>&1 ||
	die "redis-server not found: install redis-server (scripts/install-deps.sh)"
command -v redis-cli >/dev/null 2>&1 ||
	die "redis-cli not found: install redis-tools (scripts/install-deps.sh)"

cmd="${1:-}"; dir="${2:-}"
[ -n "$cmd" ] && [ -n "$dir" ] ||
	die "usage: sentinel.sh start DIR [persist] [NAME=VALUE...] | stop|kill|master|kill-master DIR | failover DIR [SECONDS] | wait-new-master DIR OLD [SECONDS]"

# password -- the data nodes' requirepass, if start was given one
password() { sed -n 's/^requirepass=//p' "$dir/options" 2>/dev/null | tail -1; }

# node_cli HOST:PORT ARGS... -- redis-cli to a data node (with its password)
node_cli() {
	local address="$1" pw
	shift
	pw="$(password)"
	if [ -n "$pw" ]; then
		REDISCLI_AUTH="$pw" timeout 5 redis-cli --no-auth-warning -h "${address%:*}" -p "${address##*:}" "$@"
	else
		timeout 5 redis-cli -h "${address%:*}" -p "${address##*:}" "$@"
	fi
}

# sentinel_cli PORT ARGS... -- redis-cli to a Sentinel (no password)
sentinel_cli() {
	local port="$1"
	shift
	timeout 5 redis-cli -h 127.0.0.1 -p "$port" "$@"
}

sentinel_ports() { cat "$dir"/sentinel?/port 2>/dev/null; }

# named_master PORT -- "host:port" of the master as the Sentinel on PORT names it
named_master() {
	local out
	out="$(sentinel_cli "$1" SENTINEL get-master-addr-by-name "$MASTER_NAME" 2>/dev/null)" || return 1
	[ "$(wc -l <<<"$out")" = 2 ] || return 1
	echo "$(head -1 <<<"$out"):$(tail -1 <<<"$out")"
}

# start_sentinel N MASTER_PORT -- Sentinel N on a free port (drawn again on a bind race)
start_sentinel() {
	local n="$1" mport="$2" d="$dir/sentinel$1" port try i pw
	mkdir -p "$d"
	pw="$(password)"
	for ((try = 1; try <= 5; try++)); do
		port="$(free_port)" || die "no free port for Sentinel $n"
		claim "$d/sentinel.pid"
		{
			echo "bind 127.0.0.1"
			echo "port $port"
			echo "dir $d"
			echo "pidfile $d/sentinel.pid"
			echo "logfile $d/sentinel.log"
			echo "daemonize yes"
			echo "sentinel monitor $MASTER_NAME 127.0.0.1 $mport 2"
			echo "sentinel down-after-milliseconds $MASTER_NAME 1000"
			echo "sentinel failover-timeout $MASTER_NAME 5000"
			echo "sentinel parallel-syncs $MASTER_NAME 1"
			[ -z "$pw" ] || echo "sentinel auth-pass $MASTER_NAME $pw"
		} >"$d/sentinel.conf"
		: >>"$d/sentinel.log"
		local from=$(($(stat -c %s "$d/sentinel.log") + 1))
		redis-server "$d/sentinel.conf" --sentinel || die "Sentinel $n did not start (log: $d/sentinel.log)"
		for ((i = 0; i < 100; i++)); do
			if tail -c "+$from" "$d/sentinel.log" | grep -qi 'address already in use'; then
				break
			fi
			if sentinel_cli "$port" PING 2>/dev/null | grep -q PONG; then
				echo "$port" >"$d/port"
				return 0
			fi
			sleep 0.05
		done
		echo "sentinel.sh: Sentinel $n: port $port: address already in use or no answer, drawing another" >&2
		[ ! -f "$d/sentinel.pid" ] || kill -KILL "$(cat "$d/sentinel.pid")" 2>/dev/null || true
		rm -f "$d/sentinel.pid"
	done
	die "Sentinel $n found no free port in 5 tries (log: $d/sentinel.log)"
}

# wait_ready SECONDS -- the replicas in sync and every Sentinel passing
# CKQUORUM with both replicas and both other Sentinels known
wait_ready() {
	local end=$((SECONDS + $1)) p r ready
	while [ "$SECONDS" -lt "$end" ]; do
		ready=1
		for r in $(cat "$dir/replicas"); do
			node_cli "$r" INFO replication 2>/dev/null | grep -q '^master_link_status:up' || ready=0
		done
		for p in $(sentinel_ports); do
			sentinel_cli "$p" SENTINEL CKQUORUM "$MASTER_NAME" 2>/dev/null | grep -q '^OK' || ready=0
			sentinel_cli "$p" SENTINEL MASTER "$MASTER_NAME" 2>/dev/null |
				awk 'prev == "num-slaves" && $1 == 2 { s = 1 } prev == "num-other-sentinels" && $1 == 2 { o = 1 }
				     { prev = $1 } END { exit !(s && o) }' || ready=0
		done
		[ "$ready" = 0 ] || return 0
		sleep 0.2
	done
	return 1
}

# wait_new_master OLD SECONDS -- every Sentinel names one master, not OLD,
# and it says ROLE master; prints it
wait_new_master() {
	local old="$1" end=$((SECONDS + $2)) p named all
	while [ "$SECONDS" -lt "$end" ]; do
		all=""
		for p in $(sentinel_ports); do
			named="$(named_master "$p")" || { all=x; break; }
			[ -z "$all" ] || [ "$all" = "$named" ] || { all=x; break; }
			all="$named"
		done
		if [ -n "$all" ] && [ "$all" != x ] && [ "$all" != "$old" ] &&
			[ "$(node_cli "$all" ROLE 2>/dev/null | head -1)" = master ]; then
			echo "$all"
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# current_master -- the first Sentinel's answer
current_master() {
	local p
	for p in $(sentinel_ports); do named_master "$p" && return 0; done
	die "no Sentinel of $dir names a master"
}

# node_dir HOST:PORT -- the node directory whose server listens on PORT
node_dir() {
	local d
	for d in "$dir"/node?; do
		[ "$(cat "$d/port" 2>/dev/null)" != "${1##*:}" ] || { echo "$d"; return 0; }
	done
	return 1
}

case "$cmd" in
start)
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd)"
	printf '%s\n' "${@:3}" >"$dir/options"
	pw="$(password)"
	master="$("$REDIS" start "$dir/node1" "${@:3}")"
	replicas=()
	for n in 2 3; do
		replica="$("$REDIS" start "$dir/node$n" "${@:3}" ${pw:+masterauth=$pw})"
		node_cli "$replica" REPLICAOF 127.0.0.1 "${master##*:}" >/dev/null
		replicas+=("$replica")
	done
	echo "${replicas[*]}" >"$dir/replicas"
	for n in 1 2 3; do start_sentinel "$n" "${master##*:}"; done
	wait_ready 30 || die "the Sentinels did not agree within 30 s (SENTINEL CKQUORUM; logs: $dir/sentinel?/sentinel.log)"
	hosts="$(sentinel_ports | sed 's/^/127.0.0.1:/' | paste -sd, -)"
	echo "master $master"
	for r in "${replicas[@]}"; do echo "replica $r"; done
	echo "sentinels $hosts"
	echo "url redis+sentinel://$hosts/$MASTER_NAME"
	;;
stop | kill)
	signal=TERM
	[ "$cmd" = stop ] || signal=KILL
	for d in "$dir"/sentinel?; do
		if [ -d "$d" ] && pid="$(pid_of "$d/sentinel.pid")"; then
			kill "-$signal" "$pid"
			wait_gone "$pid" 30 || die "Sentinel (pid $pid) did not exit within 30 s of SIG$signal"
		fi
	done
	for d in "$dir"/node?; do [ ! -d "$d" ] || "$REDIS" "$cmd" "$d"; done
	;;
master)
	current_master
	;;
failover)
	old="$(current_master)"
	# a Sentinel refuses while it is still discovering replicas (NOGOODSLAVE)
	# or another failover is in progress (INPROG): ask again for a while
	for ((i = 0; i < 50; i++)); do
		out="$(sentinel_cli "$(sentinel_ports | head -1)" SENTINEL FAILOVER "$MASTER_NAME" 2>&1)" || true
		[ "$out" != OK ] || break
		sleep 0.2
	done
	[ "$out" = OK ] || die "SENTINEL FAILOVER refused: $out"
	wait_new_master "$old" "${3:-10}" || die "no new master named by every Sentinel within ${3:-10} s (the old: $old)"
	;;
kill-master)
	old="$(current_master)"
	d="$(node_dir "$old")" || die "no node of $dir listens on $old"
	"$REDIS" kill "$d"
	echo "$old"
	;;
wait-new-master)
	[ -n "${3:-}" ] || die "usage: sentinel.sh wait-new-master DIR OLD_HOST:PORT [SECONDS]"
	wait_new_master "$3" "${4:-30}" || die "no new master named by every Sentinel within ${4:-30} s (the old: $3)"
	;;
*)
	die "unknown command '$cmd' (start, stop, kill, master, failover, kill-master, wait-new-master)"
	;;
esac
