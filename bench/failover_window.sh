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
# Each cluster on ports drawn free when it starts (free_port,
# scripts/lib/ports.sh), with its peer ports free too (etcd: +1; ZooKeeper's
# quorum/election ports: +10/+20), drawn anew when a member fails to start
# (a bind race), 3 tries; servers are stopped and their files removed at exit.
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

# cluster_ports SYSTEM -- three client ports, free now with their peer ports
cluster_ports() {
	local offsets p q o ok tries picked=()
	if [ "$1" = etcd ]; then offsets=1; else offsets="$ZK_PEER_OFFSET $((2 * ZK_PEER_OFFSET))"; fi
	for ((tries = 0; ${#picked[@]} < 3; tries++)); do
		[ "$tries" -lt 100 ] || die "no free ports for a $1 cluster in 100 tries"
		p="$(free_port)"
		ok=1
		for o in $offsets; do port_is_free $((p + o)) || ok=0; done
		# no member's ports among another's
		for q in "${picked[@]}"; do [ $((p > q ? p - q : q - p)) -gt $((2 * ZK_PEER_OFFSET)) ] || ok=0; done
		[ "$ok" = 0 ] || picked+=("$p")
	done
	echo "${picked[*]}"
}

# start_cluster SYSTEM RUN PORTS... -- three members in the background, wait
# for all; false if one of them failed to start
start_cluster() {
	local sys="$1" run="$2" spec i=0 p pids=() rc=0
	shift 2
	spec="$(IFS=,; echo "$*")"
	for p in "$@"; do
		i=$((i + 1))
		rm -rf "$WORK/$sys-$run-$i"
		DIRS+=("$sys:$WORK/$sys-$run-$i")
		if [ "$sys" = etcd ]; then
			"$ROOT/scripts/etcd.sh" start "$WORK/$sys-$run-$i" "$p" "$spec" >/dev/null 2>&1 &
		else
			"$ROOT/scripts/zookeeper.sh" start "$WORK/$sys-$run-$i" "$p" "$spec" "$i" >/dev/null 2>&1 &
		fi
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	return "$rc"
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

# one SYSTEM RUN -- prints the window of one kill, in ms
one() {
	local sys="$1" run="$2" l t0 i try ports url
	for ((try = 1; ; try++)); do
		read -r -a ports <<<"$(cluster_ports "$sys")"
		start_cluster "$sys" "$run" "${ports[@]}" && break
		for i in 1 2 3; do "$ROOT/scripts/$sys.sh" kill "$WORK/$sys-$run-$i" >/dev/null 2>&1 || true; done
		[ "$try" -lt 3 ] || die "$sys: no cluster started in 3 tries (the last on ports ${ports[*]})"
	done
	url="$sys://127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}"
	set -- "${ports[@]}"
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
	: >"$WORK/$sys.ms"
	for run in $(seq 1 "$REPS"); do
		w="$(one "$sys" "$run")"
		echo "# $sys, kill $run: first lease after ${w:-NEVER} ms"
		[ -n "$w" ] && echo "$w" >>"$WORK/$sys.ms"
	done
	echo "$sys: leader killed -> first lease: $(summary <"$WORK/$sys.ms")"
done
