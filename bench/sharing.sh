#!/usr/bin/env bash
# bench/sharing.sh -- the shared-lease and semaphore benchmark (make bench
# runs it after bench/election.sh): for memory, PostgreSQL (preloaded),
# Redis, etcd and ZooKeeper, shared acquire+release pairs per second with 8
# clients, and a semaphore of 4 with 16 clients: grants per second and how
# evenly they were spread (bench/sharing.cpp says what each figure measures).
# One run; writes bench/results/sharing.md.
#
#   bench/sharing.sh [--seconds S]    (default 10 per figure; about 2 min)
#
# Builds the driver (CMake target pglease_sharing_bench) and starts its own
# throwaway servers (scripts/cluster.sh on a Unix socket, scripts/redis.sh,
# etcd.sh, zookeeper.sh on loopback ports drawn free), stopped at exit.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$REPO/scripts/lib/common.sh"
SECONDS_EACH=10
[ "${1:-}" = --seconds ] && SECONDS_EACH="${2:?--seconds S}"
[[ "$SECONDS_EACH" =~ ^[1-9][0-9]*$ ]] || die "--seconds must be a positive integer, got '$SECONDS_EACH'"
BUILD="$REPO/build/client"
cmake -S "$REPO/client" -B "$BUILD" >/dev/null
cmake --build "$BUILD" -j2 --target pglease_sharing_bench >/dev/null

work_dir pglease-sharing-bench
CLUSTER="$REPO/scripts/cluster.sh" REDIS="$REPO/scripts/redis.sh" ETCD="$REPO/scripts/etcd.sh" ZK="$REPO/scripts/zookeeper.sh"
on_exit '"$CLUSTER" stop "$WORK/pg" fast >/dev/null 2>&1 || true
	"$REDIS" kill "$WORK/redis" >/dev/null 2>&1 || true
	"$ETCD" kill "$WORK/etcd" >/dev/null 2>&1 || true
	"$ZK" kill "$WORK/zk" >/dev/null 2>&1 || true'
mkdir -p "$WORK/pg"
"$CLUSTER" start "$WORK/pg" preload >/dev/null
eval "$("$CLUSTER" env "$WORK/pg")"
psql -X -q -d postgres -c "CREATE DATABASE sharing_bench" -c "\c sharing_bench" -c "CREATE EXTENSION pg_lease"
redis="$("$REDIS" start "$WORK/redis")"
etcd="$("$ETCD" start "$WORK/etcd")"
zk="$("$ZK" start "$WORK/zk")"

out="$REPO/bench/results/sharing.md"
{
	echo "# Shared-lease and semaphore figures"
	echo
	echo "\`bench/sharing.sh --seconds $SECONDS_EACH\` on $(nproc) CPUs ($(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)),"
	echo "load $(cut -d' ' -f1-3 /proc/loadavg) at the start, $(date -u '+%Y-%m-%d %H:%M UTC'). One run; what each"
	echo "column measures is in bench/sharing.cpp. PostgreSQL preloaded, on a Unix socket; Redis without"
	echo "persistence; etcd and ZooKeeper with their default fsync; every server on this machine."
	echo
	"$BUILD/pglease_sharing_bench" --seconds "$SECONDS_EACH" "memory=memory:bench" \
		"postgres=host=$PGHOST port=$PGPORT dbname=sharing_bench" "redis=redis://$redis" \
		"etcd=etcd://$etcd" "zookeeper=zookeeper://$zk"
} >"$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
