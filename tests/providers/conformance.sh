#!/usr/bin/env bash
# conformance.sh CONFORMANCE_TEST ELECTION_WORKER SHARING_WORKER PROVIDER [ARGS...]
# -- run the provider conformance suite (tests/client/conformance_test.cpp,
# election_conformance_test.cpp and sharing_conformance_test.cpp, whose
# killed and frozen leaders and holders are ELECTION_WORKER and
# SHARING_WORKER processes) for PROVIDER against its real server(s), started
# here (each on a port drawn free when it starts; a restart brings it back on
# that port) and stopped at exit: postgres (the cluster of PGLEASE_CLUSTER,
# database pglease_client: the CTest fixture pg_conformance), redis (one
# server), rediss (one TLS-only server wanting a client certificate,
# scripts/certs.sh's material), redlock (three independent servers), etcd
# (one member), zookeeper (one standalone server); memory and "none" start
# nothing; "all" starts them all.  Only the servers PROVIDER needs are
# started.  Each provider started is named in PGLEASE_CONFORMANCE with the
# commands that stop, start and break it, and the names wanted in
# PGLEASE_CONFORMANCE_WANT, which ConformanceSetup checks (so a provider whose
# server is missing fails rather than running no case).  ARGS go to the test.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
usage="usage: conformance.sh PATH/conformance_test PATH/election_worker PATH/sharing_worker PROVIDER [ARGS...]"
TEST="${1:?$usage}"
export PGLEASE_ELECTION_WORKER="${2:?$usage}" PGLEASE_SHARING_WORKER="${3:?$usage}"
PROVIDER="${4:?$usage}"
all="postgres redis rediss redlock etcd zookeeper"
case "$PROVIDER" in
all) want="$all" ;;
none) want="" ;;
memory) want=memory ;; # no server: always named
postgres | redis | rediss | redlock | etcd | zookeeper) want="$PROVIDER" ;;
*) die "conformance.sh: unknown provider '$PROVIDER' (all, none, memory, $all)" ;;
esac
wants() { case " $want " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
REDIS="$ROOT/scripts/redis.sh" ETCD="$ROOT/scripts/etcd.sh" ZK="$ROOT/scripts/zookeeper.sh"
CLUSTER="$ROOT/scripts/cluster.sh"
work_dir pglease_conformance
on_exit 'for d in "$WORK"/redis-*/; do "$REDIS" kill "$d" >/dev/null 2>&1 || true; done
	"$ETCD" kill "$WORK/etcd" >/dev/null 2>&1 || true
	"$ZK" kill "$WORK/zookeeper" >/dev/null 2>&1 || true'

PGLEASE_CONFORMANCE=""
add() { PGLEASE_CONFORMANCE="${PGLEASE_CONFORMANCE:+$PGLEASE_CONFORMANCE;}$1"; }
if wants postgres; then
	: "${PGLEASE_CLUSTER:?the PostgreSQL cluster (the pg_conformance fixture) is not named}"
	mode="$(cat "$PGLEASE_CLUSTER/mode")"
	add "postgres|dbname=pglease_client|$CLUSTER stop $PGLEASE_CLUSTER|$CLUSTER start $PGLEASE_CLUSTER $mode|psql -X -q -d pglease_client -c \"SELECT lease.break('{resource}')\" >/dev/null"
fi
if wants redis; then
	redis="$("$REDIS" start "$WORK/redis-single")"
	add "redis|redis://$redis|$REDIS stop $WORK/redis-single >/dev/null|$REDIS start $WORK/redis-single >/dev/null|redis-cli -p ${redis##*:} DEL 'pglease:lock:{resource}' >/dev/null"
fi
if wants rediss; then
	"$ROOT/scripts/certs.sh" "$WORK/certs" >/dev/null
	rediss="$("$REDIS" start "$WORK/redis-tls" tls="$WORK/certs")"
	tls_query="cacert=$WORK/certs/ca.crt&cert=$WORK/certs/client.crt&key=$WORK/certs/client.key"
	tls_cli="redis-cli --tls --cacert $WORK/certs/ca.crt --cert $WORK/certs/client.crt --key $WORK/certs/client.key"
	add "rediss|rediss://$rediss?$tls_query|$REDIS stop $WORK/redis-tls >/dev/null|$REDIS start $WORK/redis-tls tls=$WORK/certs >/dev/null|$tls_cli -p ${rediss##*:} DEL 'pglease:lock:{resource}' >/dev/null"
fi
if wants redlock; then
	nodes="" stop3="" start3="" del3=""
	for n in 1 2 3; do
		node="$("$REDIS" start "$WORK/redis-$n")"
		nodes="${nodes:+$nodes,}$node"
		# no ';' inside a command: it separates the entries
		stop3="$stop3 $REDIS stop $WORK/redis-$n >/dev/null &&"
		start3="$start3 $REDIS start $WORK/redis-$n >/dev/null &&"
		del3="$del3 redis-cli -p ${node##*:} DEL 'pglease:lock:{resource}' >/dev/null &&"
	done
	add "redlock|redlock://$nodes|$stop3 true|$start3 true|$del3 true"
fi
if wants etcd; then
	# one member; break deletes the resource's lock keys and the election's
	# keys of that name (prefix ranges)
	etcd="$("$ETCD" start "$WORK/etcd")"
	add "etcd|etcd://$etcd|$ETCD stop $WORK/etcd >/dev/null|$ETCD start $WORK/etcd >/dev/null|ETCDCTL_API=3 etcdctl --endpoints=$etcd del --prefix 'pglease/lock/{resource}/' >/dev/null && ETCDCTL_API=3 etcdctl --endpoints=$etcd del --prefix 'pglease/election/{resource}/' >/dev/null"
fi
if wants zookeeper; then
	# break = zookeeper.sh break, zkCli.sh deleteall of the resource's
	# folder of lock nodes (no '|' inside a command either)
	zookeeper="$("$ZK" start "$WORK/zookeeper")"
	add "zookeeper|zookeeper://$zookeeper|$ZK stop $WORK/zookeeper >/dev/null|$ZK start $WORK/zookeeper >/dev/null|$ZK break $WORK/zookeeper '{resource}'"
fi
export PGLEASE_CONFORMANCE_WANT="$want"
export PGLEASE_CONFORMANCE
"$TEST" "${@:5}"
