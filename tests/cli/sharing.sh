#!/usr/bin/env bash
# sharing.sh PROVIDER [DIR] -- `pglease run --shared`, `pglease run --limit N`
# and `pglease acquire --shared / --limit` (issue 24, item 4) against a
# provider's real server, several pglease processes on one resource:
#   postgres        the cluster of libpq's environment (the CTest fixture pg_preload)
#   redis           a redis-server of its own (scripts/redis.sh, a free port)
#   etcd DIR        the etcd member of the CTest fixture etcd_cli (its port in DIR/port)
#   zookeeper DIR   the ZooKeeper server of the fixture zookeeper_cli (its port in DIR/port)
# Checked: two `run --shared` hold together, each with its own PGLEASE_TOKEN,
# while a plain `run` (a writer) exits 75 after its --wait, and is run once
# they end; `run --limit 2`: two hold, a third exits 75, a third waiting is
# run when one ends; a --limit that disagrees with the holders' exits 64;
# `acquire --shared` twice gives two tokens, each released by its own (where
# the provider names grants by token); usage errors exit 64 before any I/O.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
[ $# -ge 1 ] || die "usage: sharing.sh postgres | redis | etcd DIR | zookeeper DIR"
PROVIDER="$1"
source "$ROOT/tests/cli/lib.sh"
cli_binary "sharing $PROVIDER"
work_dir pglease-cli-sharing
fixture_dsn sharing "$@"
R="cli-sharing/$PROVIDER/$$"
TTL=10s
P() { "$PGLEASE" "$1" "${DSN[@]}" "${@:2}"; }
# B -- P for a background start (`B ... &`): exec, so that $! is pglease's own pid
B() { exec "$PGLEASE" "$1" "${DSN[@]}" "${@:2}"; }

# hold NAME ARGS... -- a background `run ARGS -- ` whose command writes its
# token to $WORK/NAME and then waits for $WORK/NAME.end to appear
hold() {
	local name="$1"
	shift
	B run "$@" -- sh -c 'echo "$PGLEASE_TOKEN" >"$0"; while [ ! -e "$0.end" ]; do sleep 0.05; done' \
		"$WORK/$name" 2>"$WORK/$name.err" &
	started
}

# ---- readers together, a writer excluded ------------------------------------------
hold reader1 --resource "$R/rw" --ttl $TTL --shared --wait 10s
READER1=$!
hold reader2 --resource "$R/rw" --ttl $TTL --shared --wait 10s
READER2=$!
wait_file "$WORK/reader1" 10 && wait_file "$WORK/reader2" 10 || true
t1="$(cat "$WORK/reader1" 2>/dev/null || echo none)"
t2="$(cat "$WORK/reader2" 2>/dev/null || echo none)"
expect "${PROVIDER}_two_shared_runs_hold_together_with_their_own_tokens" \
	"tokens '$t1' '$t2'; stderr: $(cat "$WORK/reader1.err" "$WORK/reader2.err" | tr '\n' ' ')" \
	'[[ "$t1" =~ ^[0-9]+$ ]] && [[ "$t2" =~ ^[0-9]+$ ]] && [ "$t1" != "$t2" ]'
rc=0; P run --resource "$R/rw" --ttl $TTL --wait 1s -- true 2>"$WORK/writer.err" || rc=$?
expect "${PROVIDER}_a_writer_beside_readers_exits_75" "exit $rc: $(cat "$WORK/writer.err")" '[ "$rc" -eq 75 ]'
B run --resource "$R/rw" --ttl $TTL --wait 20s -- sh -c 'echo "$PGLEASE_TOKEN" >"$0"' "$WORK/writer" \
	2>"$WORK/writer.err" &
started
WRITER=$!
sleep 1
expect "${PROVIDER}_a_waiting_writer_waits_for_the_readers" "it ran: $(cat "$WORK/writer" 2>/dev/null)" \
	'[ ! -s "$WORK/writer" ]'
touch "$WORK/reader1.end" "$WORK/reader2.end"
wait "$READER1" "$READER2" 2>/dev/null || true
wait_file "$WORK/writer" 15 || true
tw="$(cat "$WORK/writer" 2>/dev/null || echo none)"
expect "${PROVIDER}_the_writer_runs_when_the_readers_end_with_a_higher_token" \
	"token '$tw' after '$t1' '$t2'; stderr: $(cat "$WORK/writer.err")" \
	'[[ "$tw" =~ ^[0-9]+$ ]] && [ "$tw" -gt "$t1" ] && [ "$tw" -gt "$t2" ]'
wait "$WRITER" 2>/dev/null || true

# ---- a semaphore of 2 -----------------------------------------------------------------
hold permit1 --resource "$R/sem" --ttl $TTL --limit 2 --wait 10s
P1=$!
hold permit2 --resource "$R/sem" --ttl $TTL --limit 2 --wait 10s
P2=$!
wait_file "$WORK/permit1" 10 && wait_file "$WORK/permit2" 10 || true
expect "${PROVIDER}_two_permits_of_two_hold_together" \
	"tokens '$(cat "$WORK/permit1" 2>/dev/null)' '$(cat "$WORK/permit2" 2>/dev/null)'; stderr: $(cat "$WORK/permit1.err" "$WORK/permit2.err" | tr '\n' ' ')" \
	'[ -s "$WORK/permit1" ] && [ -s "$WORK/permit2" ] && [ "$(cat "$WORK/permit1")" != "$(cat "$WORK/permit2")" ]'
rc=0; P run --resource "$R/sem" --ttl $TTL --limit 2 --wait 1s -- true 2>"$WORK/third.err" || rc=$?
expect "${PROVIDER}_a_third_permit_of_two_exits_75" "exit $rc: $(cat "$WORK/third.err")" '[ "$rc" -eq 75 ]'
rc=0; P run --resource "$R/sem" --ttl $TTL --limit 3 --wait 1s -- true 2>"$WORK/mismatch.err" || rc=$?
expect "${PROVIDER}_a_disagreeing_limit_exits_64" "exit $rc: $(cat "$WORK/mismatch.err")" \
	'[ "$rc" -eq 64 ] && grep -qiE "limit|permit" "$WORK/mismatch.err"'
B run --resource "$R/sem" --ttl $TTL --limit 2 --wait 20s -- sh -c 'echo "$PGLEASE_TOKEN" >"$0"' "$WORK/third" \
	2>"$WORK/third.err" &
started
THIRD=$!
sleep 1
expect "${PROVIDER}_a_waiting_third_permit_waits" "it ran" '[ ! -s "$WORK/third" ]'
touch "$WORK/permit1.end"
wait_file "$WORK/third" 15 || true
expect "${PROVIDER}_the_third_runs_when_one_permit_ends" "stderr: $(cat "$WORK/third.err")" '[ -s "$WORK/third" ]'
touch "$WORK/permit2.end"
wait "$P1" "$P2" "$THIRD" 2>/dev/null || true

# acquire_two NAME SUFFIX ARGS... -- acquire $R/SUFFIX with ARGS as holders h1
# and h2: both granted, with tokens of their own (in T1 and T2)
acquire_two() {
	local name="$1" res="$R/$2" rc=0 rc2=0
	shift 2
	T1="$(P acquire --resource "$res" --ttl $TTL "$@" --holder h1 2>"$WORK/$name.1.err")" || rc=$?
	T2="$(P acquire --resource "$res" --ttl $TTL "$@" --holder h2 2>"$WORK/$name.2.err")" || rc2=$?
	expect "${PROVIDER}_$name" "exit $rc/$rc2: '$T1' '$T2' $(cat "$WORK/$name.1.err" "$WORK/$name.2.err")" \
		'[ "$rc" -eq 0 ] && [ "$rc2" -eq 0 ] && [[ "$T1" =~ ^[0-9]+$ ]] && [[ "$T2" =~ ^[0-9]+$ ]] && [ "$T1" != "$T2" ]'
	# the labels they are stored under (h1~RANDOM, h2~RANDOM), for renew and release
	H1="$(awk '/^pglease: holder /{ print $3 }' "$WORK/$name.1.err")"
	H2="$(awk '/^pglease: holder /{ print $3 }' "$WORK/$name.2.err")"
}

# status_shows NAME SUFFIX MODE LIMIT -- PostgreSQL: pglease status lists h1's
# and h2's grants of $R/SUFFIX with that MODE and LIMIT (elsewhere: nothing)
status_shows() {
	local line="^$R/$2 +h[12]~[0-9a-f]{16} .* $3 +$4\$" # the condition is evaluated in expect: no $1..$4 there
	[ "$PROVIDER" = postgres ] || return 0
	P status >"$WORK/status" 2>&1 || true
	expect "${PROVIDER}_$1" "$(cat "$WORK/status")" \
		'head -1 "$WORK/status" | grep -q "MODE *LIMIT$" && [ "$(grep -cE "$line" "$WORK/status")" -eq 2 ]'
}

# ---- acquire --shared and --limit: a token per grant, released by its own ---------
if [ "$PROVIDER" = zookeeper ]; then
	# its grants end with this process's session: run only
	rc=0; P acquire --resource "$R/acq" --ttl $TTL --shared --holder h1 >/dev/null 2>"$WORK/acq1.err" || rc=$?
	expect "${PROVIDER}_acquire_refused_where_grants_are_the_sessions" "exit $rc: $(cat "$WORK/acq1.err")" \
		'[ "$rc" -eq 64 ] && grep -q "use pglease run" "$WORK/acq1.err"'
else
	acquire_two acquire_shared_twice_gives_two_tokens acq --shared
	a1="$T1" a2="$T2"
	status_shows status_shows_each_reader_with_its_mode acq shared -
	rc=0; P acquire --resource "$R/acq" --ttl $TTL --wait 0s --holder w >/dev/null 2>&1 || rc=$?
	expect "${PROVIDER}_acquire_exclusive_beside_shared_exits_75" "exit $rc" '[ "$rc" -eq 75 ]'
	rc=0; P release --resource "$R/acq" --token "$a1" --holder "$H1" || rc=$?
	rc2=0; P release --resource "$R/acq" --token "$a1" --holder "$H1" 2>/dev/null || rc2=$?
	expect "${PROVIDER}_release_ends_that_grant_only" "exit $rc, again $rc2" '[ "$rc" -eq 0 ] && [ "$rc2" -eq 76 ]'
	rc=0; P renew --resource "$R/acq" --token "$a2" --holder "$H2" --ttl $TTL || rc=$?
	expect "${PROVIDER}_the_other_shared_grant_is_still_held" "renew exit $rc" '[ "$rc" -eq 0 ]'
	rc=0; P release --resource "$R/acq" --token "$a2" --holder "$H2" || rc=$?
	expect "${PROVIDER}_released_by_its_own_token" "exit $rc" '[ "$rc" -eq 0 ]'

	# permits of 2: two tokens, the third refused, one released admits it
	acquire_two acquire_limit_twice_gives_two_tokens acqsem --limit 2
	p1="$T1" p2="$T2"
	status_shows status_shows_each_permit_with_its_limit acqsem exclusive 2
	rc=0; P acquire --resource "$R/acqsem" --ttl $TTL --limit 2 --wait 0s --holder p3 >/dev/null 2>&1 || rc=$?
	expect "${PROVIDER}_acquire_a_third_permit_of_two_exits_75" "exit $rc" '[ "$rc" -eq 75 ]'
	rc=0; P acquire --resource "$R/acqsem" --ttl $TTL --limit 3 --wait 0s --holder p3 >/dev/null 2>"$WORK/ap3.err" || rc=$?
	expect "${PROVIDER}_acquire_another_limit_exits_64" "exit $rc: $(cat "$WORK/ap3.err")" '[ "$rc" -eq 64 ]'
	rc=0; P release --resource "$R/acqsem" --token "$p1" --holder "$H1" || rc=$?
	rc2=0; p3="$(P acquire --resource "$R/acqsem" --ttl $TTL --limit 2 --wait 0s --holder p3 2>"$WORK/ap3.err")" || rc2=$?
	expect "${PROVIDER}_a_released_permit_admits_the_next_with_a_higher_token" "exit $rc/$rc2: '$p3' after '$p1' '$p2' $(cat "$WORK/ap3.err")" \
		'[ "$rc" -eq 0 ] && [ "$rc2" -eq 0 ] && [[ "$p3" =~ ^[0-9]+$ ]] && [ "$p3" -gt "$p2" ] && [ "$p3" -gt "$p1" ]'
	P release --resource "$R/acqsem" --token "$p2" --holder "$H2" || true
	P release --resource "$R/acqsem" --token "$p3" --holder "$(awk '/^pglease: holder /{ print $3 }' "$WORK/ap3.err")" || true
fi

# ---- usage errors: 64 before any I/O ---------------------------------------------------
bad() { # bad NAME WANTED ARGS... -- exit 64 and WANTED in the message
	local name="$1" wanted="$2" rc=0 out
	shift 2
	out="$("$PGLEASE" "$@" 2>&1)" || rc=$?
	expect "${PROVIDER}_$name" "exit $rc: $out" '[ "$rc" -eq 64 ] && [[ "$out" == *"$wanted"* ]]'
}
bad run_limit_zero_exits_64 "--limit: '0'" run "${DSN[@]}" --resource "$R/x" --ttl $TTL --limit 0 -- true
bad run_limit_not_a_number_exits_64 "--limit: 'many'" run "${DSN[@]}" --resource "$R/x" --ttl $TTL --limit many -- true
bad run_limit_over_max_exits_64 "--limit: '10001'" run "${DSN[@]}" --resource "$R/x" --ttl $TTL --limit 10001 -- true
bad run_shared_and_limit_exits_64 "do not go together" run "${DSN[@]}" --resource "$R/x" --ttl $TTL --shared --limit 2 -- true
bad run_shared_with_a_value_exits_64 "takes no value" run "${DSN[@]}" --resource "$R/x" --ttl $TTL --shared=yes -- true
bad acquire_limit_zero_exits_64 "--limit: '0'" acquire "${DSN[@]}" --resource "$R/x" --ttl $TTL --limit 0
finish
