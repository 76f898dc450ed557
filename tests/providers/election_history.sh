#!/usr/bin/env bash
# election_history.sh ELECTION_WORKER -- a history test of leader election on
# every provider with elections, against real servers: per provider, five
# candidates (tests/client/election_worker.cpp, history mode) campaign,
# lead for a random while and resign, for ELECTION_HISTORY_SECONDS (40),
# while a chaos loop kills a random candidate (SIGKILL; it is started again)
# or freezes one past its TTL (SIGSTOP, then SIGCONT).  Every candidate also
# follows the election with an ElectionObserver.  Then, from what the
# candidates wrote (times from CLOCK_MONOTONIC, one clock for the machine):
#   - no two leaderships overlap: a term's last "still valid" moment comes
#     before the next term's election (a later term began only after);
#   - no term is handed out twice;
#   - every observer's sequence of views has terms that never go down;
#   - no campaign outlived its wait (2 s) by more than the grace (3 s),
#     freezes of that candidate excepted;
#   - the run is not vacuous: leaderships, handovers after kills and
#     observed views were seen for each provider.
# PostgreSQL is the pg_preload fixture's cluster (PGLEASE_CLUSTER, database
# pglease_client); Redis, etcd and ZooKeeper are started here on free ports.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
WORKER="${1:?usage: election_history.sh PATH/election_worker}"
SECONDS_RUN="${ELECTION_HISTORY_SECONDS:-40}"
TTL_MS=1500
: "${PGLEASE_CLUSTER:?the PostgreSQL cluster (the pg_preload fixture) is not named}"
REDIS="$ROOT/scripts/redis.sh" ETCD="$ROOT/scripts/etcd.sh" ZK="$ROOT/scripts/zookeeper.sh"
work_dir pglease_election_history
on_exit '"$REDIS" kill "$WORK/redis" >/dev/null 2>&1 || true
	"$ETCD" kill "$WORK/etcd" >/dev/null 2>&1 || true
	"$ZK" kill "$WORK/zookeeper" >/dev/null 2>&1 || true
	for f in "$WORK"/*.pid; do [ -e "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done; true'

declare -A URL
URL[postgres]="dbname=pglease_client"
URL[redis]="redis://$("$REDIS" start "$WORK/redis")"
URL[etcd]="etcd://$("$ETCD" start "$WORK/etcd")"
URL[zookeeper]="zookeeper://$("$ZK" start "$WORK/zookeeper")"
mono_us() { "$WORKER" now; }

# start_candidate P I SECONDS -- candidate I of provider P, its pid in $WORK/P.I.pid
start_candidate() {
	"$WORKER" history "${URL[$1]}" "history/$1/$$" "$1-$2" "$3" "$TTL_MS" "$WORK/$1.$2.log" &
	echo $! >"$WORK/$1.$2.pid"
}

# chaos P END -- every 2-4 s, kill or freeze one of P's candidates at random
chaos() {
	local p="$1" end="$2" i pid now left
	while [ "$(date +%s)" -lt "$end" ]; do
		sleep "$((2 + RANDOM % 3))"
		i=$((RANDOM % 5))
		pid="$(cat "$WORK/$p.$i.pid")"
		now="$(date +%s)"
		left=$((end - now))
		[ "$left" -gt 3 ] || break
		if [ $((RANDOM % 2)) = 0 ]; then
			kill -KILL "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
			echo "K $(mono_us)" >>"$WORK/$p.$i.log"
			start_candidate "$p" "$i" "$left"
		else
			local from
			from="$(mono_us)"
			kill -STOP "$pid" 2>/dev/null || true
			sleep 2.5 # past the TTL (1.5 s) and its expiry's slack
			kill -CONT "$pid" 2>/dev/null || true
			echo "F $from $(mono_us)" >>"$WORK/$p.$i.log"
		fi
	done
	wait # the candidates this loop started again
}

end=$(($(date +%s) + SECONDS_RUN))
PROVIDERS=(postgres redis etcd zookeeper)
for p in "${PROVIDERS[@]}"; do
	for i in 0 1 2 3 4; do start_candidate "$p" "$i" "$SECONDS_RUN"; done
	chaos "$p" "$end" &
done
echo "# $SECONDS_RUN s, 5 candidates per provider, TTL $TTL_MS ms"
wait || true

for p in "${PROVIDERS[@]}"; do
	"$ROOT/tests/providers/election_check.sh" "$p" "$WORK/$p".*.log | tee "$WORK/$p.check" || failures=$((failures + 1))
done
finish
