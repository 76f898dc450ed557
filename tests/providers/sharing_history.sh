#!/usr/bin/env bash
# sharing_history.sh SHARING_WORKER -- a history test of shared leases and
# semaphores (docs/shared-leases.md) on every provider, against real
# servers, all providers at once.  Each provider is asked for its
# capabilities (sharing_worker caps).  One with shared_mode and semaphore
# gets 20 clients (tests/client/sharing_worker.cpp, history mode) for
# SHARING_HISTORY_SECONDS (40), readers and writers on one resource and
# permits of 3 and of 2 on two others; one with only one kind gets those resources
# alone.  Clients are processes of their own, and a chaos loop kills one
# (SIGKILL; it is started again) or freezes one past its TTL (SIGSTOP, then
# SIGCONT) every 1-3 s; memory's lock table is its process's own, so its 20
# clients are threads of one process, without kills or freezes (an
# abandoned grant, Lease::detach, stands for a dead holder there; memory's
# clients are also run as processes, which share nothing, and the checker
# must flag their overlaps: a negative control on real logs).  Then
# sharing_check.py checks the logs (--fifo where capabilities().fifo_wait;
# elsewhere only that no reader overtook a waiting writer; --grant-tokens
# where a token is drawn when the grant is decided, so tokens order grants).
# A provider with neither capability must refuse both requests with
# invalid_argument naming the capability: checked, not skipped.
# PostgreSQL is the pg_preload fixture's cluster (PGLEASE_CLUSTER, database
# pglease_client); Redis, Redlock's three Redis servers, etcd and ZooKeeper
# are started here on free ports.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
WORKER="${1:?usage: sharing_history.sh PATH/sharing_worker}"
SECONDS_RUN="${SHARING_HISTORY_SECONDS:-40}"
CLIENTS=20 TTL_MS=1500
: "${PGLEASE_CLUSTER:?the PostgreSQL cluster (the pg_preload fixture) is not named}"
command -v python3 >/dev/null || die "python3 is missing (apt-get install python3)"
REDIS="$ROOT/scripts/redis.sh" ETCD="$ROOT/scripts/etcd.sh" ZK="$ROOT/scripts/zookeeper.sh"
work_dir pglease_sharing_history
on_exit 'for d in "$WORK"/redis-*/; do "$REDIS" kill "$d" >/dev/null 2>&1 || true; done
	"$ETCD" kill "$WORK/etcd" >/dev/null 2>&1 || true
	"$ZK" kill "$WORK/zookeeper" >/dev/null 2>&1 || true
	for f in "$WORK"/*.pid; do [ -e "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done; true'

declare -A URL
URL[memory]="memory:"
URL[postgres]="dbname=pglease_client"
URL[redis]="redis://$("$REDIS" start "$WORK/redis-single")"
nodes=""
for n in 1 2 3; do nodes="${nodes:+$nodes,}$("$REDIS" start "$WORK/redis-$n")"; done
URL[redlock]="redlock://$nodes"
URL[etcd]="etcd://$("$ETCD" start "$WORK/etcd")"
URL[zookeeper]="zookeeper://$("$ZK" start "$WORK/zookeeper")"
PROVIDERS=(memory postgres redis redlock etcd zookeeper)
mono_us() { "$WORKER" now; }

# start_client P I SECONDS KINDS -- client process I of provider P, its pid in $WORK/P.I.pid
start_client() {
	"$WORKER" history "${URL[$1]}" "sharing/$1/$$" "$1-$2" "$3" "$TTL_MS" "$4" 1 "$WORK/$1.$2.log" &
	echo $! >"$WORK/$1.$2.pid"
}

# chaos P END KINDS -- every 1-3 s, kill or freeze one of P's clients at random
chaos() {
	local p="$1" end="$2" kinds="$3" i pid left from
	while [ "$(date +%s)" -lt "$end" ]; do
		sleep "$((1 + RANDOM % 3))"
		i=$((RANDOM % CLIENTS))
		pid="$(cat "$WORK/$p.$i.pid")"
		left=$((end - $(date +%s)))
		[ "$left" -gt 3 ] || break
		if [ $((RANDOM % 2)) = 0 ]; then
			kill -KILL "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
			echo "K $(mono_us)" >>"$WORK/$p.$i.log"
			start_client "$p" "$i" "$left" "$kinds"
		else
			from="$(mono_us)"
			kill -STOP "$pid" 2>/dev/null || true
			sleep 2.5 # past the TTL (1.5 s) and its expiry's slack
			kill -CONT "$pid" 2>/dev/null || true
			echo "F $from $(mono_us)" >>"$WORK/$p.$i.log"
		fi
	done
	wait # the clients this loop started again
}

# run P KINDS -- P's history, in the background
run() {
	local p="$1" kinds="$2" i
	if [ "$p" = memory ]; then
		"$WORKER" history "${URL[$p]}" "sharing/$p/$$" "$p" "$SECONDS_RUN" "$TTL_MS" "$kinds" "$CLIENTS" \
			"$WORK/$p.threads.log" &
		return
	fi
	for ((i = 0; i < CLIENTS; i++)); do start_client "$p" "$i" "$SECONDS_RUN" "$kinds"; done
	chaos "$p" "$end" "$kinds" &
}

# refuses P -- both requests refused with invalid_argument, naming the capability
refuses() {
	local out
	out="$("$WORKER" refuses "${URL[$1]}" "sharing/$1/$$/refused" 2>&1)" || true
	expect "$1: refuses shared leases (capabilities().shared_mode is false)" "$out" \
		'grep -q "^shared invalid_argument 22023 .*shared_mode" <<<"$out"'
	expect "$1: refuses semaphores (capabilities().semaphore is false)" "$out" \
		'grep -q "^semaphore invalid_argument 22023 .*semaphore" <<<"$out"'
}

end=$(($(date +%s) + SECONDS_RUN))
declare -A FLAGS
ran=()
for p in "${PROVIDERS[@]}"; do
	caps="$("$WORKER" caps "${URL[$p]}")" || die "$p: sharing_worker caps failed"
	kinds=""
	[[ "$caps" != *shared_mode=1* ]] || kinds="rw"
	[[ "$caps" != *semaphore=1* ]] || kinds="${kinds:+$kinds,}sem"
	if [ -z "$kinds" ]; then
		refuses "$p"
		continue
	fi
	FLAGS[$p]=""
	[[ "$caps" != *fifo_wait=1* ]] || FLAGS[$p]="--fifo"
	# memory's counter, PostgreSQL's sequence and Redis' INCR are drawn in the
	# step that grants; etcd's and ZooKeeper's tokens are the creation of a
	# key or node that then waits for its grant, so there the returns order grants
	case "$p" in memory | postgres | redis) FLAGS[$p]="${FLAGS[$p]} --grant-tokens" ;; esac
	[ "$p" = memory ] || FLAGS[$p]="${FLAGS[$p]} --chaos"
	echo "# $p: $caps: $kinds for $SECONDS_RUN s, $CLIENTS clients, TTL $TTL_MS ms"
	run "$p" "$kinds"
	ran+=("$p")
done
# A negative control on real logs: memory's clients as processes of their own,
# killed and frozen like the others' -- each has a lock table of its own, so
# the checker must see writers together with readers.
URL[memory_processes]="memory:"
run memory_processes rw,sem
wait || true
out="$(python3 "$ROOT/tests/providers/sharing_check.py" --chaos memory_processes "$WORK"/memory_processes.*.log || true)"
as_expected_violations <<<"$out"
negative_control sharing_check_flags_unshared_processes "writers held together with readers by processes that share nothing" \
	'grep -q "^not ok - memory_processes: never a writer together with anyone" <<<"$out"'

for p in "${ran[@]}"; do
	# shellcheck disable=SC2086 # FLAGS are words
	if ! python3 "$ROOT/tests/providers/sharing_check.py" ${FLAGS[$p]} "$p" "$WORK/$p".*.log; then
		failures=$((failures + 1))
		# the logs outlive the run, to look into what the checker flagged
		kept="$(mktemp -d "/tmp/pglease_sharing_history.$p.XXXXXX")"
		cp "$WORK/$p".*.log "$kept/"
		echo "# $p: its logs are kept: python3 tests/providers/sharing_check.py ${FLAGS[$p]} $p $kept/*.log"
	fi
done
expect "memory: the reference provider ran its history" "memory has no shared leases or semaphores" \
	'[[ " ${ran[*]} " == *" memory "* ]]'
finish
