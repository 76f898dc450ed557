#!/usr/bin/env bash
# etcd.sh -- a throwaway etcd member (or a 3-member cluster) on loopback ports,
# its files in a directory.
#
#   etcd.sh start DIR PORT [CLUSTER-SPEC]   start one member: client port PORT, peer port PORT+1
#   etcd.sh stop DIR                        SIGTERM via the pidfile, wait for the exit
#   etcd.sh kill DIR                        SIGKILL (a crash)
#   etcd.sh restart DIR                     stop, then start with the same port and cluster
#
# CLUSTER-SPEC (optional) is the comma-separated client ports of every member
# of a cluster, this one's included (e.g. 56501,56503,56505): the member is
# named m<PORT> and joins --initial-cluster m<P>=http://127.0.0.1:<P+1>,...
# Without it the member is a cluster of its own.  start waits until the
# member answers /health with "true" -- for a cluster member that needs a
# quorum, so start the members of a cluster in the background and wait for
# all of them (etcd_locker_test does).
#
# Heartbeat 50 ms and election timeout 500 ms (etcd's defaults are 100/1000):
# etcd's smallest lease TTL is 1.5 election timeouts rounded up to seconds, so
# with the defaults a 1 s lease would be granted as 2 s; these give 1 s, and a
# lost leader is replaced within a second.  etcd runs fine as root.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh" # die, and the pidfile plumbing

command -v etcd >/dev/null 2>&1 || die "etcd not found: install etcd-server (scripts/install-deps.sh)"
command -v curl >/dev/null 2>&1 || die "curl not found: install curl (scripts/install-deps.sh)"

cmd="${1:-}"; dir="${2:-}"
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: etcd.sh start DIR PORT [CLUSTER-SPEC] | stop|kill|restart DIR"


valid_port() {
	[[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le 65534 ] || die "bad port '$1' (1-65534)"
	[ "$1" -ne 2379 ] && [ "$1" -ne 2378 ] || die "ports 2379/2380 belong to a system etcd; tests use their own ports"
}

case "$cmd" in
start)
	port="${3:-}"; spec="${4:-}"
	valid_port "$port"
	[ -n "$spec" ] || spec="$port"
	cluster="" member_in=0
	IFS=, read -r -a ports <<<"$spec"
	for p in "${ports[@]}"; do
		valid_port "$p"
		cluster="${cluster:+$cluster,}m$p=http://127.0.0.1:$((p + 1))"
		[ "$p" != "$port" ] || member_in=1
	done
	[ "$member_in" -eq 1 ] || die "port $port is not in the cluster spec '$spec'"
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd)"
	claim "$dir/etcd.pid" "$port" "$((port + 1))"
	echo "$port" >"$dir/port"
	echo "$spec" >"$dir/cluster"
	state=new
	[ ! -d "$dir/data/member" ] || state=existing
	setsid etcd --name "m$port" --data-dir "$dir/data" \
		--listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port" \
		--listen-peer-urls "http://127.0.0.1:$((port + 1))" \
		--initial-advertise-peer-urls "http://127.0.0.1:$((port + 1))" \
		--initial-cluster "$cluster" --initial-cluster-state "$state" \
		--initial-cluster-token "pglease-$spec" \
		--heartbeat-interval 50 --election-timeout 500 \
		>>"$dir/etcd.log" 2>&1 </dev/null &
	echo $! >"$dir/etcd.pid"
	# up to 20 s for a healthy member (a cluster member waits for its quorum)
	for ((i = 0; i < 400; i++)); do
		alive "$(cat "$dir/etcd.pid")" ||
			{ tail -20 "$dir/etcd.log" >&2; die "etcd on port $port exited (log: $dir/etcd.log)"; }
		if curl -s -m 1 "http://127.0.0.1:$port/health" 2>/dev/null | grep -q '"health":"true"'; then
			exit 0
		fi
		sleep 0.05
	done
	tail -20 "$dir/etcd.log" >&2 2>/dev/null || true
	die "etcd on port $port not healthy within 20 s (log: $dir/etcd.log)"
	;;
stop)
	if pid="$(pid_of "$dir/etcd.pid")"; then
		kill -TERM "$pid"
		wait_gone "$pid" 30 || die "etcd (pid $pid) did not exit within 30 s of SIGTERM"
	fi
	;;
kill)
	if pid="$(pid_of "$dir/etcd.pid")"; then
		kill -KILL "$pid"
		wait_gone "$pid" 10 || die "etcd (pid $pid) still there after SIGKILL"
	fi
	;;
restart)
	[ -f "$dir/port" ] || die "$dir holds no member started by etcd.sh start"
	"$0" stop "$dir"
	"$0" start "$dir" "$(cat "$dir/port")" "$(cat "$dir/cluster")"
	;;
*)
	die "unknown command '$cmd' (start, stop, kill, restart)"
	;;
esac
