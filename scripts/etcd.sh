#!/usr/bin/env bash
# etcd.sh -- a throwaway etcd member (or a 3-member cluster) on loopback ports,
# its files in a directory.
#
#   etcd.sh start DIR [PORT [CLUSTER-SPEC]] [OPTIONS]
#                                            start one member: client port PORT, peer
#                                            port PORT+1; prints its address, 127.0.0.1:PORT
#   etcd.sh stop DIR                         SIGTERM via the pidfile, wait for the exit
#   etcd.sh kill DIR                         SIGKILL (a crash)
#   etcd.sh restart DIR                      stop, then start with the same port, cluster
#                                            and options
#
# CLUSTER-SPEC (optional) is the comma-separated client ports of every member
# of a cluster, this one's included (e.g. 21501,21503,21505): the member is
# named m<PORT> and joins --initial-cluster m<P>=http://127.0.0.1:<P+1>,...
# Without it the member is a cluster of its own.  start waits until the
# member answers /health with "true" -- for a cluster member that needs a
# quorum, so start the members of a cluster in the background and wait for
# all of them (etcd_locker_test does).
#
# Without PORT, start uses DIR/port and DIR/cluster (a member of DIR started
# before comes back as it was), or else starts a member of its own on a free
# port whose PORT+1 is free too (scripts/lib/ports.sh) and, when etcd fails
# to bind ("address already in use": another server took a port between the
# check and the bind), on new ports, 5 tries.  The ports used are written to
# DIR/port (client) and DIR/peer-port.  With PORT, a port in use fails at
# once, the message saying "address already in use", for a caller that draws
# its own ports to retry.
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
#
# PGLEASE_LISTEN_HOST=ADDR (default 127.0.0.1): the IPv4 address of the
# client port instead of loopback (a member in a network namespace of its
# own, tests/faults/partition/); peers stay on loopback; restart needs it set again.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh" # die, and the pidfile plumbing
LISTEN="${PGLEASE_LISTEN_HOST:-127.0.0.1}"

command -v etcd >/dev/null 2>&1 || die "etcd not found: install etcd-server (scripts/install-deps.sh)"
command -v curl >/dev/null 2>&1 || die "curl not found: install curl (scripts/install-deps.sh)"

cmd="${1:-}"; dir="${2:-}"
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: etcd.sh start DIR [PORT [CLUSTER-SPEC]] [OPTIONS] | stop|kill|restart DIR"

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
		extra+=(--client-cert-auth --trusted-ca-file "$tls_dir/ca.crt"
			--cert-file "$tls_dir/$server_cert.crt" --key-file "$tls_dir/$server_cert.key")
	fi
}


valid_port() {
	[[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le 65534 ] || die "bad port '$1' (1-65534)"
	[ "$1" -ne 2379 ] && [ "$1" -ne 2378 ] || die "ports 2379/2380 belong to a system etcd; tests use their own ports"
}

# cluster_of PORT SPEC -- the --initial-cluster of SPEC, which must name PORT
cluster_of() {
	local cluster="" member_in=0 p
	IFS=, read -r -a members <<<"$2"
	for p in "${members[@]}"; do
		valid_port "$p"
		cluster="${cluster:+$cluster,}m$p=http://127.0.0.1:$((p + 1))"
		[ "$p" != "$1" ] || member_in=1
	done
	[ "$member_in" -eq 1 ] || die "port $1 is not in the cluster spec '$2'"
	echo "$cluster"
}

# start_on PORT SPEC -- start the member; 0 once healthy, 2 if a port is in
# use (bind race), dies on anything else
start_on() {
	local port="$1" spec="$2" cluster state=new log="$dir/etcd.log" from p i scheme=http health=(curl -s -m 1)
	if [ -n "$tls_dir" ]; then
		scheme=https
		health+=(-k --cert "$tls_dir/client.crt" --key "$tls_dir/client.key")
	fi
	cluster="$(cluster_of "$port" "$spec")" || exit 1
	claim "$dir/etcd.pid"
	for p in "$port" "$((port + 1))"; do
		if (exec 3<>"/dev/tcp/$LISTEN/$p") 2>/dev/null || (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "etcd.sh: port $p: address already in use (something listens on it)" >&2
			return 2
		fi
	done
	[ ! -d "$dir/data/member" ] || state=existing
	from=$(($(stat -c %s "$log" 2>/dev/null || echo 0) + 1))
	setsid etcd --name "m$port" --data-dir "$dir/data" \
		--listen-client-urls "$scheme://$LISTEN:$port" --advertise-client-urls "$scheme://$LISTEN:$port" \
		--listen-peer-urls "http://127.0.0.1:$((port + 1))" \
		--initial-advertise-peer-urls "http://127.0.0.1:$((port + 1))" \
		--initial-cluster "$cluster" --initial-cluster-state "$state" \
		--initial-cluster-token "pglease-$spec" \
		--heartbeat-interval 50 --election-timeout 500 ${extra[@]+"${extra[@]}"} \
		>>"$log" 2>&1 </dev/null &
	echo $! >"$dir/etcd.pid"
	# up to 20 s for a healthy member (a cluster member waits for its quorum)
	for ((i = 0; i < 400; i++)); do
		if ! alive "$(cat "$dir/etcd.pid")"; then
			if tail -c "+$from" "$log" | grep -i 'address already in use' >/dev/null; then
				echo "etcd.sh: port $port or $((port + 1)): address already in use (log: $log)" >&2
				return 2
			fi
			tail -20 "$log" >&2
			die "etcd on port $port exited (log: $log)"
		fi
		if "${health[@]}" "$scheme://$LISTEN:$port/health" 2>/dev/null | grep -q '"health":"true"'; then
			return 0
		fi
		sleep 0.05
	done
	tail -20 "$log" >&2 2>/dev/null || true
	die "etcd on port $port not healthy within 20 s (log: $log)"
}

# pair_port -- a free port whose next port is free too (client and peer)
pair_port() {
	local p i
	for ((i = 0; i < 20; i++)); do
		p="$(free_port)" || return 1
		if port_is_free "$((p + 1))"; then
			echo "$p"
			return 0
		fi
	done
	echo "etcd.sh: no two adjacent free ports in 20 tries" >&2
	return 1
}

case "$cmd" in
start)
	port="" spec=""
	shift 2
	if [ $# -gt 0 ] && [[ "$1" != --* ]]; then port="$1"; shift; fi
	if [ $# -gt 0 ] && [[ "$1" != --* ]]; then spec="$1"; shift; fi
	options "$@"
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd)"
	: >"$dir/options"
	[ $# -eq 0 ] || printf '%q ' "$@" >"$dir/options"
	if [ -z "$port" ] && [ -s "$dir/port" ]; then
		port="$(cat "$dir/port")"
		spec="$(cat "$dir/cluster")"
	fi
	if [ -n "$port" ]; then
		valid_port "$port"
		start_on "$port" "${spec:-$port}" || die "etcd could not bind port $port or $((port + 1)): address already in use"
		spec="${spec:-$port}"
	else
		for ((try = 1; ; try++)); do
			port="$(pair_port)" || die "no free ports for etcd"
			rc=0; start_on "$port" "$port" || rc=$?
			[ "$rc" -ne 0 ] || break
			[ "$try" -lt 5 ] || die "etcd found no free ports in 5 tries (the last: $port)"
			rm -rf "$dir/data" # the failed member's, named after its port
		done
		spec="$port"
	fi
	echo "$port" >"$dir/port"
	echo "$((port + 1))" >"$dir/peer-port"
	echo "$spec" >"$dir/cluster"
	echo "$LISTEN:$port"
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
