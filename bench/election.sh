#!/usr/bin/env bash
# bench/election.sh -- the election benchmark (make bench runs it after
# bench/run.sh): for PostgreSQL (preloaded), Redis, etcd and ZooKeeper, how
# long an election takes to move on and to tell its followers
# (bench/election.cpp says what each figure measures).  One run; writes
# bench/results/election.md.
#
#   bench/election.sh [--rounds N]    (default 20; about 3 min)
#
# Builds the driver (CMake target pglease_election_bench) and election_worker,
# and starts its own throwaway servers (scripts/cluster.sh on a Unix socket,
# scripts/redis.sh, etcd.sh, zookeeper.sh on loopback ports drawn free),
# stopped at exit.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$REPO/scripts/lib/common.sh"
ROUNDS=20
[ "${1:-}" = --rounds ] && ROUNDS="${2:?--rounds N}"
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer, got '$ROUNDS'"
BUILD="$REPO/build/client"
cmake -S "$REPO/client" -B "$BUILD" >/dev/null
cmake --build "$BUILD" -j2 --target pglease_election_bench election_worker >/dev/null

work_dir pglease-election-bench
CLUSTER="$REPO/scripts/cluster.sh" REDIS="$REPO/scripts/redis.sh" ETCD="$REPO/scripts/etcd.sh" ZK="$REPO/scripts/zookeeper.sh"
on_exit '"$CLUSTER" stop "$WORK/pg" fast >/dev/null 2>&1 || true
	"$REDIS" kill "$WORK/redis" >/dev/null 2>&1 || true
	"$ETCD" kill "$WORK/etcd" >/dev/null 2>&1 || true
	"$ZK" kill "$WORK/zk" >/dev/null 2>&1 || true'
mkdir -p "$WORK/pg"
"$CLUSTER" start "$WORK/pg" preload >/dev/null
eval "$("$CLUSTER" env "$WORK/pg")"
psql -X -q -d postgres -c "CREATE DATABASE election_bench" -c "\c election_bench" -c "CREATE EXTENSION pg_lease"
redis="$("$REDIS" start "$WORK/redis")"
etcd="$("$ETCD" start "$WORK/etcd")"
zk="$("$ZK" start "$WORK/zk")"

out="$REPO/bench/results/election.md"
{
	echo "# Election figures"
	echo
	echo "\`bench/election.sh --rounds $ROUNDS\` on $(nproc) CPUs ($(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)),"
	echo "load $(cut -d' ' -f1-3 /proc/loadavg) at the start, $(date -u '+%Y-%m-%d %H:%M UTC'). One run; what each"
	echo "column measures is in bench/election.cpp. PostgreSQL preloaded, on a Unix socket; Redis without"
	echo "persistence; etcd and ZooKeeper with their default fsync; every server on this machine."
	echo
	"$BUILD/pglease_election_bench" --worker "$BUILD/election_worker" --rounds "$ROUNDS" \
		"postgres=host=$PGHOST port=$PGPORT dbname=election_bench" "redis=redis://$redis" \
		"etcd=etcd://$etcd" "zookeeper=zookeeper://$zk"
} >"$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
