#!/usr/bin/env bash
# test.sh -- build, install and run every pg_lease test suite (make test).
#
# For each mode (preloaded, not preloaded) it starts a throwaway cluster
# (scripts/cluster.sh), runs the pg_regress suites (sql/, expected/), the
# isolation specs (tests/isolation/) and the shell-driven multi-session,
# restart and dump tests (tests/shell/), then stops it.  Clusters are
# stopped and removed even when a test fails.  Prints regression.diffs on a
# failure and ends with "N passed, M failed".
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

"$ROOT/scripts/install-deps.sh"

"$ROOT/scripts/install-extension.sh"

WORK="$(mktemp -d /tmp/pg_lease_test.XXXXXX)"
chmod 755 "$WORK"
cleanup() {
	for d in "$WORK"/redis-*/; do
		[ -d "$d" ] && "$ROOT/scripts/redis.sh" kill "$d" >/dev/null 2>&1 || true
	done
	for d in "$WORK"/etcd-*/; do
		[ -d "$d" ] && "$ROOT/scripts/etcd.sh" kill "$d" >/dev/null 2>&1 || true
	done
	for d in "$WORK"/zookeeper*/; do
		[ -d "$d" ] && "$ROOT/scripts/zookeeper.sh" kill "$d" >/dev/null 2>&1 || true
	done
	for d in "$WORK"/*/; do
		[ -d "$d/data" ] && "$ROOT/scripts/cluster.sh" stop "$d" immediate || true
	done
	rm -rf "$WORK"
}
trap cleanup EXIT

passed=0
failed=0
LOG="$WORK/suite.log"

# count_results -- tally pg_regress ("test x ... ok/FAILED"), TAP-ish and GoogleTest lines
count_results() {
	local ok bad
	ok=$(grep -cE '^(test |     )?[a-z_0-9]+ +\.\.\. ok|^ok - |^\[ +OK \] .* \([0-9]+ ms\)$' "$LOG" || true)
	bad=$(grep -cE '^(test |     )?[a-z_0-9]+ +\.\.\. FAILED|^not ok - |^\[ +FAILED +\] .* \([0-9]+ ms\)$' "$LOG" || true)
	passed=$((passed + ok))
	failed=$((failed + bad))
}

# run_suite NAME CMD... -- run, show output, count; a crash without output counts as a failure
run_suite() {
	local name="$1" rc=0
	shift
	echo "=== $name"
	"$@" >"$LOG" 2>&1 || rc=$?
	cat "$LOG"
	count_results
	if [ "$rc" -ne 0 ] && ! grep -qE 'FAILED|^not ok - ' "$LOG"; then
		echo "not ok - $name: exited $rc"
		failed=$((failed + 1))
	fi
}

show_diffs() {
	for f in regression.diffs output_iso/regression.diffs; do
		if [ -s "$f" ]; then
			echo "----- $f"
			cat "$f"
		fi
	done
}

# conformance -- the provider conformance suite against PostgreSQL (this
# mode's cluster), one Redis server, three independent ones for Redlock,
# one etcd member and one standalone ZooKeeper server
conformance() {
	local redis="$ROOT/scripts/redis.sh" zk="$ROOT/scripts/zookeeper.sh" nodes="" stop3="" start3="" del3="" p
	"$redis" start "$WORK/redis-single" 56400 >/dev/null
	for p in 56401 56402 56403; do
		"$redis" start "$WORK/redis-$p" "$p" >/dev/null
		nodes="${nodes:+$nodes,}127.0.0.1:$p"
		# no ';' inside a command: it separates the entries
		stop3="$stop3 $redis stop $WORK/redis-$p >/dev/null &&"
		start3="$start3 $redis start $WORK/redis-$p $p >/dev/null &&"
		del3="$del3 redis-cli -p $p DEL 'pglease:lock:{resource}' >/dev/null &&"
	done
	PGLEASE_CONFORMANCE="postgres|dbname=pglease_client|$ROOT/scripts/cluster.sh stop $cluster|$ROOT/scripts/cluster.sh start $cluster $mode|psql -X -q -d pglease_client -c \"SELECT lease.break('{resource}')\" >/dev/null"
	PGLEASE_CONFORMANCE+=";redis|redis://127.0.0.1:56400|$redis stop $WORK/redis-single >/dev/null|$redis start $WORK/redis-single 56400 >/dev/null|redis-cli -p 56400 DEL 'pglease:lock:{resource}' >/dev/null"
	PGLEASE_CONFORMANCE+=";redlock|redlock://$nodes|$stop3 true|$start3 true|$del3 true"
	# etcd: one member; break deletes the resource's lock keys (prefix range) through the gateway
	local etcd="$ROOT/scripts/etcd.sh"
	"$etcd" start "$WORK/etcd-single" 56520 >/dev/null
	PGLEASE_CONFORMANCE+=";etcd|etcd://127.0.0.1:56520|$etcd stop $WORK/etcd-single >/dev/null|$etcd start $WORK/etcd-single 56520 >/dev/null|ETCDCTL_API=3 etcdctl --endpoints=127.0.0.1:56520 del --prefix 'pglease/lock/{resource}/' >/dev/null"
	# ZooKeeper: break = zookeeper.sh break, zkCli.sh deleteall of the
	# resource's folder of lock nodes (no '|' inside a command either)
	"$zk" start "$WORK/zookeeper" 57020 >/dev/null
	PGLEASE_CONFORMANCE+=";zookeeper|zookeeper://127.0.0.1:57020|$zk stop $WORK/zookeeper >/dev/null|$zk start $WORK/zookeeper 57020 >/dev/null|$zk break $WORK/zookeeper '{resource}'"
	PGLEASE_CONFORMANCE="$PGLEASE_CONFORMANCE" "$ROOT/build/client/conformance_test"
	"$redis" stop "$WORK/redis-single" >/dev/null
	for p in 56401 56402 56403; do "$redis" stop "$WORK/redis-$p" >/dev/null; done
	"$etcd" stop "$WORK/etcd-single" >/dev/null
	"$zk" stop "$WORK/zookeeper" >/dev/null
}

# The Redis component's own suites start their servers themselves
run_suite "redis plumbing (real redis-server)" "$ROOT/build/client/redis_plumbing_test"
run_suite "redis and redlock lockers (real redis-servers)" "$ROOT/build/client/redis_locker_test"
run_suite "etcd locker (real etcd)" "$ROOT/build/client/etcd_locker_test"
run_suite "CLI with redis:// and redlock:// (tests/providers/cli_redis.sh)" bash "$ROOT/tests/providers/cli_redis.sh"
run_suite "zookeeper locker (real ZooKeeper)" "$ROOT/build/client/zookeeper_locker_test"

# cli_with SCRIPT NAME URL DIR PORT [run-only] -- tests/providers/cli_lease.sh on a server
# of its own, started and stopped with scripts/SCRIPT
cli_with() {
	local script="$ROOT/scripts/$1" name="$2" url="$3" dir="$4" port="$5" mode="${6:-tokens}" rc=0
	"$script" start "$dir" "$port" >/dev/null
	bash "$ROOT/tests/providers/cli_lease.sh" "$name" "$url" "$script start $dir $port" "$script stop $dir" \
		"$mode" || rc=$?
	"$script" stop "$dir" >/dev/null 2>&1 || true
	return "$rc"
}
run_suite "CLI with etcd:// (tests/providers/cli_lease.sh)" \
	cli_with etcd.sh etcd etcd://127.0.0.1:56540 "$WORK/etcd-cli" 56540
run_suite "CLI with zookeeper:// (tests/providers/cli_lease.sh)" \
	cli_with zookeeper.sh zookeeper zookeeper://127.0.0.1:57030 "$WORK/zookeeper-cli" 57030 run-only

for mode in preload nopreload; do
	cluster="$WORK/$mode"
	"$ROOT/scripts/cluster.sh" start "$cluster" "$mode"
	eval "$("$ROOT/scripts/cluster.sh" env "$cluster")"
	export PGLEASE_CLUSTER="$cluster"
	rm -f regression.diffs output_iso/regression.diffs

	run_suite "pg_regress ($mode)" make -s installcheck ISOLATION=
	run_suite "isolation ($mode)" make -s installcheck REGRESS=
	show_diffs
	for t in tests/shell/*.sh; do
		[ "$(basename "$t")" = lib.sh ] && continue
		run_suite "$(basename "$t" .sh) ($mode)" bash "$t"
	done
	if [ "$mode" = preload ]; then
		psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE pglease_client"
		psql -X -q -v ON_ERROR_STOP=1 -d pglease_client -c "CREATE EXTENSION pg_lease"
		export PGDATABASE=pglease_client
		run_suite "advise_test" "$ROOT/build/client/advise_test"
		run_suite "consumer of the installed package" "$ROOT/scripts/build-consumer.sh"
		run_suite "client_test" "$ROOT/build/client/client_test"
		run_suite "conformance (every provider, real servers)" conformance
	fi

	"$ROOT/scripts/cluster.sh" stop "$cluster"
	unset PGDATABASE
	if grep -E 'PANIC|TRAP:|terminated by signal' "$cluster/server.log"; then
		echo "not ok - server log of $mode cluster is clean"
		failed=$((failed + 1))
	else
		echo "ok - server log of $mode cluster is clean"
		passed=$((passed + 1))
	fi
done

# the quick part of the fault suite (make faults runs it in full)
run_suite "fault suite, quick (tests/faults)" env FAULTS_QUICK=1 FAULTS_SKIP_BUILD=1 "$ROOT/scripts/faults.sh"
# two automatic failovers under pg_auto_failover (make ha runs four)
run_suite "automatic failovers, quick (tests/ha)" "$ROOT/tests/ha/run.sh" --quick

echo
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
