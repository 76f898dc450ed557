#!/usr/bin/env bash
# zero_wait_permits.sh PROVIDER [DIR] -- zero-wait permits do not lose to
# each other (issue 36, item 7): five `pglease run --limit 3 --wait 0s`
# started together on one resource, each holding its permit for 2 s (so all
# five overlap), give exactly three permits, in every one of ROUNDS rounds
# (default 6); the two refused exit 75 within wait + statement_grace.
#   postgres        the cluster of libpq's environment (the CTest fixture pg_preload)
#   redis           a redis-server of its own (scripts/redis.sh, a free port)
#   etcd DIR        the etcd member of the CTest fixture etcd_cli (its port in DIR/port)
#   zookeeper DIR   the ZooKeeper server of the fixture zookeeper_cli (its port in DIR/port)
# Before the fix, ZooKeeper granted one permit in most rounds: every try
# first takes the semaphore's internal mutex (<resource>/locks), and a try
# that found it held by another try's few round trips gave up at once.
# Then a try past its wait with permits held exits 75 at once (well within
# the grace) also when a waiting try holds the mutex.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
[ $# -ge 1 ] || die "usage: zero_wait_permits.sh postgres | redis | etcd DIR | zookeeper DIR"
PROVIDER="$1"
ROUNDS="${ROUNDS:-6}"
source "$ROOT/tests/cli/lib.sh"
cli_binary "zero_wait_permits $PROVIDER"
work_dir pglease-cli-zero-wait
fixture_dsn zero_wait_permits "$@"
R="cli-zero-wait/$PROVIDER/$$"
GRACE_MS=2000 # the CLI's statement_grace

# try NAME WAIT -- a background `run --limit 3 --wait WAIT` of $R, started when
# $WORK/go appears; its command records its token and sleeps 2 s; NAME.rc
# gets the exit status and the milliseconds from go to the exit
try() {
	local name="$1" wait="$2"
	(
		while [ ! -e "$WORK/go" ]; do sleep 0.01; done
		rc=0
		"$PGLEASE" run "${DSN[@]}" --resource "$R" --ttl 10s --limit 3 --wait "$wait" \
			-- sh -c 'echo "$PGLEASE_TOKEN" >"$0"; sleep 2' "$WORK/$name.token" 2>"$WORK/$name.err" || rc=$?
		echo "$rc $(($(now_ms) - $(cat "$WORK/go")))" >"$WORK/$name.rc"
	) &
	started
}

# go -- start the tries waiting for $WORK/go, and wait for all of them
go() {
	now_ms >"$WORK/go.tmp"
	mv "$WORK/go.tmp" "$WORK/go"
	wait "${BACKGROUND[@]}" 2>/dev/null || true
	BACKGROUND=()
}

# ---- five zero-wait tries at once, limit 3: three granted, in every round -------------
for ((round = 1; round <= ROUNDS; round++)); do
	rm -f "$WORK"/go "$WORK"/t*.*
	for i in 1 2 3 4 5; do try "t$i" 0s; done
	sleep 0.5 # every try is waiting for go
	go
	granted=0 refused=0 other="" slowest=0
	for i in 1 2 3 4 5; do
		rc=none ms=0
		read -r rc ms <"$WORK/t$i.rc" || true
		case "$rc" in
		0) granted=$((granted + 1)) ;;
		75) refused=$((refused + 1)); [ "$ms" -gt "$slowest" ] && slowest="$ms" ;;
		*) other+=" t$i: exit $rc: $(cat "$WORK/t$i.err")" ;;
		esac
	done
	echo "# round $round: $granted granted, $refused refused (the slowest in ${slowest} ms)"
	expect "${PROVIDER}_round_${round}_five_zero_wait_tries_get_three_permits" \
		"$granted granted, $refused refused;$other" '[ "$granted" -eq 3 ] && [ "$refused" -eq 2 ]'
	expect "${PROVIDER}_round_${round}_the_refused_exit_within_the_grace" "the slowest took $slowest ms" \
		'[ "$slowest" -lt "$GRACE_MS" ]'
done

# ---- a try while a waiting try holds the permits' queue: refused at once --------------
rm -f "$WORK"/go "$WORK"/t*.* "$WORK"/w*.*
for i in 1 2 3; do try "t$i" 0s; done
go_async() { now_ms >"$WORK/go.tmp"; mv "$WORK/go.tmp" "$WORK/go"; }
go_async
wait_file "$WORK/t1.token" 5 && wait_file "$WORK/t2.token" 5 && wait_file "$WORK/t3.token" 5 || true
try w1 10s # waits for one of the three (2 s)
sleep 0.5
rm -f "$WORK/go"
try late 0s
sleep 0.2
go_async
for ((i = 0; i < 100; i++)); do [ -s "$WORK/late.rc" ] && break; sleep 0.05; done
read -r late_rc late_ms <"$WORK/late.rc" || true
echo "# the try behind a waiter: exit ${late_rc:-none} after ${late_ms:-?} ms"
expect "${PROVIDER}_a_zero_wait_try_behind_a_waiter_exits_75_at_once" \
	"exit ${late_rc:-none} after ${late_ms:-?} ms: $(cat "$WORK/late.err" 2>/dev/null)" \
	'[ "${late_rc:-}" = 75 ] && [ "$late_ms" -lt 1000 ]'
wait "${BACKGROUND[@]}" 2>/dev/null || true
BACKGROUND=()
read -r w_rc w_ms <"$WORK/w1.rc" || true
expect "${PROVIDER}_the_waiter_gets_the_first_permit_released" "exit ${w_rc:-none}: $(cat "$WORK/w1.err")" \
	'[ "${w_rc:-}" = 0 ]'
finish
