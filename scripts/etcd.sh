#!/usr/bin/env bash
# etcd.sh -- a throwaway etcd member (or a 3-member cluster) on loopback ports,
# its files in a directory.
#
#   etcd.sh start DIR PORT [CLUSTER-SPEC] [OPTIONS]   start one member: client port PORT, peer port PORT+1
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
# OPTIONS (restart keeps them):
#   --tls CERTDIR          the client port speaks HTTPS only and requires a
#                          client certificate signed by CERTDIR/ca.crt
#                          (--client-cert-auth); CERTDIR as scripts/certs.sh
#                          makes it.  Peers stay plain HTTP on loopback.
#   --server-cert NAME     with --tls: serve CERTDIR/NAME.crt and NAME.key
#                          (default "server"; e.g. expired, wrong-host)
#   --auth-token-ttl SECS  etcd's simple-token TTL (etcd's default is 300 s)
# With --tls the readiness check asks /health with the client certificate
# and without verifying the server's (it only asks whether etcd is up: a test
# may serve a certificate no client should accept).
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
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: etcd.sh start DIR PORT [CLUSTER-SPEC] [OPTIONS] | stop|kill|restart DIR"

# options ARGS... -- the OPTIONS of start into tls_dir, server_cert, extra
tls_dir="" server_cert=server extra=()
options() {
	while [ $# -gt 0 ]; do
		case "$1" in
		--tls) [ -n "${2:-}" ] || die "--tls needs a directory"; tls_dir="$(cd "$2" && pwd)" || die "no directory $2"; shift 2 ;;
		--server-cert) [ -n "${2:-}" ] || die "--server-cert needs a name"; server_cert="$2"; shift 2 ;;
		--auth-token-ttl) [[ "${2:-}" =~ ^[0-9]+$ ]] || die "--auth-token-ttl needs seconds"
			extra+=(--auth-token-ttl "$2"); shift 2 ;;
		*) die "unknown option '$1' (--tls CERTDIR, --server-cert NAME, --auth-token-ttl SECS)" ;;
		esac
	done
	if [ -n "$tls_dir" ]; then
		for f in ca.crt "$server_cert.crt" "$server_cert.key" client.crt client.key; do
			[ -r "$tls_dir/$f" ] || die "--tls $tls_dir: no readable $f (make it with scripts/certs.sh $tls_dir)"
		done
	fi
}


valid_port() {
	[[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le 65534 ] || die "bad port '$1' (1-65534)"
	[ "$1" -ne 2379 ] && [ "$1" -ne 2378 ] || die "ports 2379/2380 belong to a system etcd; tests use their own ports"
}

case "$cmd" in
start)
	port="${3:-}"; spec=""
	valid_port "$port"
	shift 3
	if [ $# -gt 0 ] && [[ "$1" != --* ]]; then spec="$1"; shift; fi
	options "$@"
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
	: >"$dir/options"
	[ $# -eq 0 ] || printf '%q ' "$@" >"$dir/options"
	scheme=http health=(curl -s -m 1)
	if [ -n "$tls_dir" ]; then
		scheme=https
		extra+=(--client-cert-auth --trusted-ca-file "$tls_dir/ca.crt"
			--cert-file "$tls_dir/$server_cert.crt" --key-file "$tls_dir/$server_cert.key")
		health+=(-k --cert "$tls_dir/client.crt" --key "$tls_dir/client.key")
	fi
	state=new
	[ ! -d "$dir/data/member" ] || state=existing
	setsid etcd --name "m$port" --data-dir "$dir/data" \
		--listen-client-urls "$scheme://127.0.0.1:$port" --advertise-client-urls "$scheme://127.0.0.1:$port" \
		--listen-peer-urls "http://127.0.0.1:$((port + 1))" \
		--initial-advertise-peer-urls "http://127.0.0.1:$((port + 1))" \
		--initial-cluster "$cluster" --initial-cluster-state "$state" \
		--initial-cluster-token "pglease-$spec" \
		--heartbeat-interval 50 --election-timeout 500 ${extra[@]+"${extra[@]}"} \
		>>"$dir/etcd.log" 2>&1 </dev/null &
	echo $! >"$dir/etcd.pid"
	# up to 20 s for a healthy member (a cluster member waits for its quorum)
	for ((i = 0; i < 400; i++)); do
		alive "$(cat "$dir/etcd.pid")" ||
			{ tail -20 "$dir/etcd.log" >&2; die "etcd on port $port exited (log: $dir/etcd.log)"; }
		if "${health[@]}" "$scheme://127.0.0.1:$port/health" 2>/dev/null | grep -q '"health":"true"'; then
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
	eval "opts=($(cat "$dir/options" 2>/dev/null))"
	"$0" start "$dir" "$(cat "$dir/port")" "$(cat "$dir/cluster")" ${opts[@]+"${opts[@]}"}
	;;
*)
	die "unknown command '$cmd' (start, stop, kill, restart)"
	;;
esac
