#!/usr/bin/env bash
# failover_window.sh [REPS] -- how long etcd and ZooKeeper, 3 nodes each on
# loopback, leave a client without its lock service when their leader is
# killed: the time from kill -9 of the leader to the end of the first
# successful `pglease run --dsn URL -- true` (acquire + release through the
# library's provider) that started after the kill, tried every 50 ms.
# REPS (default 5) kills per system, each on a freshly started cluster;
# prints every figure and the median and max.  The PostgreSQL figure (under
# pg_auto_failover) comes from `make ha` (tests/ha/run.sh).
#
# Ports 60100-60125 (+10/+20 for ZooKeeper's quorum/election ports, +1 for
# etcd's peer ports); servers are stopped and their files removed at exit.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CLI="$ROOT/build/client/pglease"
REPS="${1:-5}"
source "$ROOT/scripts/lib/common.sh" # die, now_ms, on_exit, work_dir
[ -x "$CLI" ] || die "$CLI missing: run 'make client'"
work_dir pglease_window
export ZK_PEER_OFFSET=10
declare -a DIRS=()
on_exit 'for d in "${DIRS[@]}"; do "$ROOT/scripts/${d%%:*}.sh" kill "${d#*:}" >/dev/null 2>&1 || true; done'

# start_cluster SYSTEM RUN PORTS... -- three members in the background, wait for all
start_cluster() {
	local sys="$1" run="$2" spec i=0 p
	shift 2
	spec="$(IFS=,; echo "$*")"
	for p in "$@"; do
		i=$((i + 1))
		DIRS+=("$sys:$WORK/$sys-$run-$i")
		if [ "$sys" = etcd ]; then
			"$ROOT/scripts/etcd.sh" start "$WORK/$sys-$run-$i" "$p" "$spec" >/dev/null 2>&1 &
		else
			"$ROOT/scripts/zookeeper.sh" start "$WORK/$sys-$run-$i" "$p" "$spec" "$i" >/dev/null 2>&1 &
		fi
	done
	wait
}

# leader SYSTEM RUN PORTS... -- the member index (1-3) that leads now
leader() {
	local sys="$1" run="$2" i=0 p
	shift 2
	for p in "$@"; do
		i=$((i + 1))
		if [ "$sys" = etcd ]; then
			local st
			st="$(curl -s -m 1 "http://127.0.0.1:$p/v3/maintenance/status" -d '{}')" || continue
			[ -n "$st" ] && [ "$(grep -o '"member_id":"[0-9]*"' <<<"$st" | cut -d'"' -f4)" = \
				"$(grep -o '"leader":"[0-9]*"' <<<"$st" | cut -d'"' -f4)" ] && { echo "$i"; return; }
		else
			[ "$("$ROOT/scripts/zookeeper.sh" mode "$WORK/$sys-$run-$i" 2>/dev/null)" = leader ] && { echo "$i"; return; }
		fi
	done
	return 1
}

# one SYSTEM URL PORTS... -- prints the window of one kill, in ms
one() {
	local sys="$1" url="$2" run="$3" l t0 t i
	shift 3
	start_cluster "$sys" "$run" "$@"
	for i in $(seq 1 200); do
		l="$(leader "$sys" "$run" "$@")" && "$CLI" --dsn "$url" run --resource window --ttl 2s -- true >/dev/null 2>&1 && break
		sleep 0.1
	done
	[ -n "${l:-}" ] || { echo "failover_window.sh: $sys: no leader" >&2; return 1; }
	"$ROOT/scripts/$sys.sh" kill "$WORK/$sys-$run-$l" >/dev/null
	t0="$(now_ms)"
	for i in $(seq 1 1200); do
		if timeout 10 "$CLI" --dsn "$url" run --resource window --ttl 2s --wait 3s -- true >/dev/null 2>&1; then
			echo $(($(now_ms) - t0))
			break
		fi
		sleep 0.05
	done
	for i in 1 2 3; do "$ROOT/scripts/$sys.sh" kill "$WORK/$sys-$run-$i" >/dev/null 2>&1 || true; done
}

summary() { sort -n | awk '{ v[NR] = $1 } END { printf "median %d ms, max %d ms (%s)\n", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[NR], NR " kills" }'; }

for sys in etcd zookeeper; do
	if [ "$sys" = etcd ]; then ports=(60100 60102 60104); else ports=(60110 60111 60112); fi
	url="$sys://127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}"
	: >"$WORK/$sys.ms"
	for run in $(seq 1 "$REPS"); do
		w="$(one "$sys" "$url" "$run" "${ports[@]}")"
		echo "# $sys, kill $run: first lease after ${w:-NEVER} ms"
		[ -n "$w" ] && echo "$w" >>"$WORK/$sys.ms"
	done
	echo "$sys: leader killed -> first lease: $(summary <"$WORK/$sys.ms")"
done
