#!/usr/bin/env bash
# conformance.sh CONFORMANCE_TEST ELECTION_WORKER SHARING_WORKER -- run the
# provider conformance suite (tests/client/conformance_test.cpp,
# election_conformance_test.cpp and sharing_conformance_test.cpp, whose
# killed and frozen leaders and holders are ELECTION_WORKER and
# SHARING_WORKER processes) against real servers: PostgreSQL (the
# cluster of PGLEASE_CLUSTER, database pglease_client: the CTest fixture
# pg_preload), one Redis server, one TLS-only Redis server wanting a client
# certificate (rediss://, scripts/certs.sh's material), three independent
# ones for Redlock, one etcd member and one standalone ZooKeeper server, started here (each on a
# port drawn free when it starts; a restart brings it back on that port) and
# stopped at exit.  Each provider is named in PGLEASE_CONFORMANCE with the commands
# that stop, start and break it.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
usage="usage: conformance.sh PATH/conformance_test PATH/election_worker PATH/sharing_worker"
TEST="${1:?$usage}"
export PGLEASE_ELECTION_WORKER="${2:?$usage}" PGLEASE_SHARING_WORKER="${3:?$usage}"
: "${PGLEASE_CLUSTER:?the PostgreSQL cluster (the pg_preload fixture) is not named}"
REDIS="$ROOT/scripts/redis.sh" ETCD="$ROOT/scripts/etcd.sh" ZK="$ROOT/scripts/zookeeper.sh"
CLUSTER="$ROOT/scripts/cluster.sh"
work_dir pglease_conformance
on_exit 'for d in "$WORK"/redis-*/; do "$REDIS" kill "$d" >/dev/null 2>&1 || true; done
	"$ETCD" kill "$WORK/etcd" >/dev/null 2>&1 || true
	"$ZK" kill "$WORK/zookeeper" >/dev/null 2>&1 || true'

nodes="" stop3="" start3="" del3=""
redis="$("$REDIS" start "$WORK/redis-single")"
"$ROOT/scripts/certs.sh" "$WORK/certs" >/dev/null
rediss="$("$REDIS" start "$WORK/redis-tls" tls="$WORK/certs")"
tls_query="cacert=$WORK/certs/ca.crt&cert=$WORK/certs/client.crt&key=$WORK/certs/client.key"
tls_cli="redis-cli --tls --cacert $WORK/certs/ca.crt --cert $WORK/certs/client.crt --key $WORK/certs/client.key"
for n in 1 2 3; do
	node="$("$REDIS" start "$WORK/redis-$n")"
	nodes="${nodes:+$nodes,}$node"
	# no ';' inside a command: it separates the entries
	stop3="$stop3 $REDIS stop $WORK/redis-$n >/dev/null &&"
	start3="$start3 $REDIS start $WORK/redis-$n >/dev/null &&"
	del3="$del3 redis-cli -p ${node##*:} DEL 'pglease:lock:{resource}' >/dev/null &&"
done
# etcd: one member; break deletes the resource's lock keys and the election's keys of that name
# (prefix ranges) through the gateway
etcd="$("$ETCD" start "$WORK/etcd")"
# ZooKeeper: break = zookeeper.sh break, zkCli.sh deleteall of the
# resource's folder of lock nodes (no '|' inside a command either)
zookeeper="$("$ZK" start "$WORK/zookeeper")"

mode="$(cat "$PGLEASE_CLUSTER/mode")"
PGLEASE_CONFORMANCE="postgres|dbname=pglease_client|$CLUSTER stop $PGLEASE_CLUSTER|$CLUSTER start $PGLEASE_CLUSTER $mode|psql -X -q -d pglease_client -c \"SELECT lease.break('{resource}')\" >/dev/null"
PGLEASE_CONFORMANCE+=";redis|redis://$redis|$REDIS stop $WORK/redis-single >/dev/null|$REDIS start $WORK/redis-single >/dev/null|redis-cli -p ${redis##*:} DEL 'pglease:lock:{resource}' >/dev/null"
PGLEASE_CONFORMANCE+=";rediss|rediss://$rediss?$tls_query|$REDIS stop $WORK/redis-tls >/dev/null|$REDIS start $WORK/redis-tls tls=$WORK/certs >/dev/null|$tls_cli -p ${rediss##*:} DEL 'pglease:lock:{resource}' >/dev/null"
PGLEASE_CONFORMANCE+=";redlock|redlock://$nodes|$stop3 true|$start3 true|$del3 true"
PGLEASE_CONFORMANCE+=";etcd|etcd://$etcd|$ETCD stop $WORK/etcd >/dev/null|$ETCD start $WORK/etcd >/dev/null|ETCDCTL_API=3 etcdctl --endpoints=$etcd del --prefix 'pglease/lock/{resource}/' >/dev/null && ETCDCTL_API=3 etcdctl --endpoints=$etcd del --prefix 'pglease/election/{resource}/' >/dev/null"
PGLEASE_CONFORMANCE+=";zookeeper|zookeeper://$zookeeper|$ZK stop $WORK/zookeeper >/dev/null|$ZK start $WORK/zookeeper >/dev/null|$ZK break $WORK/zookeeper '{resource}'"
export PGLEASE_CONFORMANCE
"$TEST" "${@:4}"
