#!/usr/bin/env bash
# pooler.sh -- pg_lease and its C++ client through PgBouncer in transaction mode.
#
# A throwaway cluster (scripts/cluster.sh, preloaded) and a PgBouncer in front
# of it, both as the unprivileged "postgres" user when run as root (PgBouncer,
# like postgres, refuses root), both on Unix sockets in a temporary directory.
# The pooler runs pool_mode = transaction with small round-robin pools, so
# consecutive transactions of one client connection run on different server
# backends.  It proves:
#
#   1. SQL API: acquire, renew, fence + write, release from one client
#      connection, served by several backends, all correct; the holder label
#      (not the backend) is the idempotency key; a stale fence fails LS001;
#      tokens increase; lease.observe (one statement) is woken by a
#      proclaim made through the pooler.
#   2. C++ client (tests/faults/pooler_test.cpp, built by CMake as
#      build/client/pooler_test, and client_test cases via
#      --gtest_filter): auto-renew, renew, fenced writes, release, stale
#      token, ephemeral and advisory strategies through the pooler; what its
#      session-level SET statement_timeout does there ("# observed:" lines).
#   3. What does not fit a transaction pooler fails clearly or is shown for
#      what it is: a session_bound grant is bound to the pooled backend that
#      ran the acquire (it outlives the client, and ends when the pooler
#      closes that backend: renew false, fence LS001); a session advisory
#      lock unlocked in another transaction returns false with a WARNING and
#      stays held by the pooled backend; pg_advisory_xact_lock within one
#      transaction works; a NULL holder names the backend, so clients sharing
#      a backend share it.
#
#   FAULTS_PORT=24420          the cluster's port (its socket is in the temp dir)
#   FAULTS_BOUNCER_PORT=24425  PgBouncer's port (its socket is in the temp dir)
#   FAULTS_QUICK=1             reduced run (fewer client_test cases, shorter sleeps)
#   FAULTS_STRICT=0            the statement_timeout checks only report what they see
#
# Prints "ok - name" / "not ok - name: why", and exits non-zero on a failure.
source "$(dirname "$0")/lib.sh" # ROOT, QUICK, WORK, start_cluster, expect
PORT="${FAULTS_PORT:-24420}"
BPORT="${FAULTS_BOUNCER_PORT:-24425}"
export PGLEASE_TEST_PORT="$PORT"
t_start="$(date +%s)"

# ---- prerequisites -----------------------------------------------------------

missing() {
	echo "not ok - prerequisites: $*"
	exit 1
}
setup_failed() {
	echo "not ok - setup: $*"
	exit 1
}

PGBOUNCER="$(command -v pgbouncer || true)"
[ -z "$PGBOUNCER" ] && [ -x /usr/sbin/pgbouncer ] && PGBOUNCER=/usr/sbin/pgbouncer
[ -n "$PGBOUNCER" ] || missing "pgbouncer not found: apt-get install pgbouncer (Debian package; scripts/install-deps.sh installs it)"
BIN="$ROOT/build/client/pooler_test"
[ -x "$BIN" ] && [ -x "$ROOT/build/client/client_test" ] ||
	missing "the C++ client and its tests are not built: run 'make client' (build/client/)"
if [ "$(id -u)" -eq 0 ]; then
	id postgres >/dev/null 2>&1 || missing "user 'postgres' not found: apt-get install postgresql-15"
fi

# ---- cluster, pooler, cleanup -----------------------------------------------

BDIR="$WORK/bouncer"
BG_PIDS=()

stop_pooler() {
	local pid i
	for pid in "${BG_PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	# the pid file names our daemonized pgbouncer; check before signalling
	if [ -f "$BDIR/pgbouncer.pid" ] && pid="$(cat "$BDIR/pgbouncer.pid")" &&
		[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = pgbouncer ]; then
		kill "$pid" 2>/dev/null || true
		for i in $(seq 1 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
	fi
}
on_exit stop_pooler

# as_postgres CMD... -- run as the cluster's owner (from /, which it can enter)
as_postgres() {
	if [ "$(id -u)" -eq 0 ]; then
		(cd / && runuser -u postgres -- "$@")
	else
		"$@"
	fi
}

start_cluster "$WORK/pg" "$PORT" preload
SOCK="$WORK/pg/sock"
DIRECT="host=$SOCK port=$PORT dbname=faults user=postgres"
POOL="host=$BDIR port=$BPORT dbname=faults user=postgres"
ONE="host=$BDIR port=$BPORT dbname=faults_one user=postgres"
FRESH="host=$BDIR port=$BPORT dbname=faults_fresh user=postgres"
CONSOLE="host=$BDIR port=$BPORT dbname=pgbouncer user=postgres"
timeout 20 psql -X -q -v ON_ERROR_STOP=1 "host=$SOCK port=$PORT dbname=postgres user=postgres" -c "CREATE DATABASE faults"
timeout 20 psql -X -q -v ON_ERROR_STOP=1 "$DIRECT" -c "CREATE EXTENSION pg_lease" \
	-c "CREATE TABLE sql_ledger (resource text, token bigint, backend int)"

# Three pools on one database.  Round robin: PgBouncer's default (LIFO) would
# serve a lone client from the same backend every time.  A long
# server_check_delay: idle servers past it are re-checked one at a time, and a
# lone client then keeps getting the one just checked.
mkdir -p "$BDIR"
cat >"$BDIR/pgbouncer.ini" <<EOF
[databases]
faults       = host=$SOCK port=$PORT dbname=faults
faults_one   = host=$SOCK port=$PORT dbname=faults pool_size=1
faults_fresh = host=$SOCK port=$PORT dbname=faults pool_size=2

[pgbouncer]
listen_addr =
listen_port = $BPORT
unix_socket_dir = $BDIR
auth_type = trust
auth_file = $BDIR/userlist.txt
admin_users = postgres
pool_mode = transaction
default_pool_size = 3
server_round_robin = 1
server_check_delay = 86400
max_client_conn = 200
logfile = $BDIR/pgbouncer.log
pidfile = $BDIR/pgbouncer.pid
EOF
echo '"postgres" ""' >"$BDIR/userlist.txt"
[ "$(id -u)" -eq 0 ] && chown -R postgres: "$BDIR"
as_postgres "$PGBOUNCER" -d -q "$BDIR/pgbouncer.ini" ||
	{ cat "$BDIR/pgbouncer.log" 2>/dev/null; setup_failed "pgbouncer did not start"; }
for i in $(seq 1 50); do
	timeout 5 psql -X -q -A -t "$POOL" -c "SELECT 1" >/dev/null 2>&1 && break
	[ "$i" -eq 50 ] && { cat "$BDIR/pgbouncer.log"; setup_failed "pgbouncer did not accept connections within 5 s"; }
	sleep 0.1
done
echo "# cluster on $SOCK:$PORT, pgbouncer $("$PGBOUNCER" --version | head -1 | awk '{print $2}') on $BDIR:$BPORT (transaction mode)"

# ---- helpers -------------------------------------------------------------------

# psql DSN SQL... -- run each -c in its own transaction, tuples only, 20 s at most
qon() {
	local dsn="$1"
	shift
	PSQL_TIMEOUT=20 psql_q "$dsn" "$@"
}
qd() { qon "$DIRECT" "$@"; }


# warm POOL N -- open N server connections of a pool at once, so that they
# exist (a lone sequential client would only ever need one)
warm() {
	local dsn="$1" n="$2" i pids=()
	for i in $(seq 1 "$n"); do
		qon "$dsn" -c "SELECT pg_sleep(0.3)" >/dev/null &
		pids+=($!)
	done
	wait "${pids[@]}" || true # a pool that cannot open connections fails the checks that follow
}

# run_file DSN NAME -- run $WORK/NAME.sql in one psql connection (every
# statement its own transaction unless the file says BEGIN); stdout, as
# "key value" pairs, to NAME.out, stderr to NAME.err
run_file() {
	timeout 30 psql -X -q -A -t -F ' ' "$1" -f "$WORK/$2.sql" >"$WORK/$2.out" 2>"$WORK/$2.err" || true
}
# field NAME KEY -- the value after KEY in NAME.out
field() { awk -v k="$2" '{ for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }' "$WORK/$1.out"; }

# ---- 1. the SQL API through the pooler ---------------------------------------

warm "$POOL" 3
cat >"$WORK/lifecycle.sql" <<'EOF'
\set ON_ERROR_STOP 1
\set VERBOSITY sqlstate
SELECT pg_backend_pid() AS p_acquire, lease.acquire('sql/r', '30 s', holder => 'app-1') AS t1 \gset
SELECT pg_backend_pid() AS p_renew, lease.renew('sql/r', :t1, '30 s') AS renewed \gset
BEGIN;
SELECT pg_backend_pid() AS p_fence, lease.fence('sql/r', :t1) AS fenced \gset
INSERT INTO sql_ledger VALUES ('sql/r', :t1, pg_backend_pid());
COMMIT;
SELECT pg_backend_pid() AS p_again, lease.acquire('sql/r', '30 s', holder => 'app-1') AS t_again \gset
SELECT pg_backend_pid() AS p_release, lease.release('sql/r', :t1) AS released \gset
SELECT pg_backend_pid() AS p_next, lease.acquire('sql/r', '30 s', holder => 'app-2') AS t2 \gset
SELECT pg_backend_pid() AS p_renew_stale, lease.renew('sql/r', :t1, '30 s') AS renew_stale \gset
\echo p_acquire :p_acquire p_renew :p_renew p_fence :p_fence p_again :p_again p_release :p_release p_next :p_next
\echo t1 :t1 renewed :renewed fenced :fenced t_again :t_again released :released t2 :t2 renew_stale :renew_stale
\set ON_ERROR_STOP 0
SELECT lease.fence('sql/r', :t1);
EOF
run_file "$POOL" lifecycle
t1="$(field lifecycle t1)"
t2="$(field lifecycle t2)"
pids="$(for k in p_acquire p_renew p_fence p_again p_release p_next; do field lifecycle "$k"; done | sort -u | tr '\n' ' ')"
npids="$(wc -w <<<"$pids")"
ledger_backend="$(qd -c "SELECT backend FROM sql_ledger WHERE resource = 'sql/r' AND token = ${t1:-0}")" || true
expect "sql_calls_of_one_connection_run_on_several_backends" "backends seen: '$pids'" '[ "$npids" -ge 2 ]'
expect "sql_acquire_renew_fence_release_through_pooler" \
	"t1=$t1 renewed=$(field lifecycle renewed) fenced=$(field lifecycle fenced) released=$(field lifecycle released); stderr: $(head -3 "$WORK/lifecycle.err")" \
	'[ -n "$t1" ] && [ "$t1" -gt 0 ] && [ "$(field lifecycle renewed)" = t ] &&
	 [ "$(field lifecycle fenced)" = "$t1" ] && [ "$(field lifecycle released)" = t ]'
expect "sql_fenced_write_ran_in_the_fencing_backend" "ledger backend '$ledger_backend', fence backend '$(field lifecycle p_fence)'" \
	'[ -n "$ledger_backend" ] && [ "$ledger_backend" = "$(field lifecycle p_fence)" ]'
expect "sql_same_holder_on_another_backend_gets_same_token" \
	"t_again=$(field lifecycle t_again) (backend $(field lifecycle p_again)), t1=$t1 (backend $(field lifecycle p_acquire))" \
	'[ "$(field lifecycle t_again)" = "$t1" ]'
expect "sql_token_increases_after_release" "t2=$t2 t1=$t1" '[ -n "$t2" ] && [ "$t2" -gt "$t1" ]'
expect "sql_renew_of_released_token_returns_false" "renew_stale=$(field lifecycle renew_stale)" \
	'[ "$(field lifecycle renew_stale)" = f ]'
expect "sql_stale_fence_fails_LS001" "stderr: $(cat "$WORK/lifecycle.err")" \
	'grep -q "ERROR: *LS001" "$WORK/lifecycle.err"'
other="$(qon "$POOL" -c "SELECT lease.try_acquire('sql/r', '30 s', holder => 'app-3')")" || true
expect "sql_other_holder_is_refused_through_pooler" "try_acquire returned '$other' while app-2 holds token $t2" '[ -z "$other" ]'

# ---- 1b. lease.observe: one statement sleeping in the server, no LISTEN -------
# A follower's observe through the pooler is woken by a proclaim that another
# client makes through it too.

t_el="$(qon "$POOL" -c "SELECT lease.acquire('sql/el', '30 s', '0', 'c1', false, 'v1')")" || true
observe_start="$(now_ms)"
qon "$POOL" -c "SELECT coalesce(value, '-') || ' ' || (term IS NULL)
	FROM lease.observe('sql/el', ${t_el:-0}, 'v1', '10 s')" >"$WORK/observe.out" 2>&1 &
observer=$!
sleep 0.5
proclaimed="$(qon "$POOL" -c "SELECT lease.proclaim('sql/el', ${t_el:-0}, 'v2')")" || true
wait "$observer" || true
observe_ms=$(($(now_ms) - observe_start))
expect "sql_observe_through_pooler_woken_by_proclaim" \
	"term $t_el, proclaim '$proclaimed', observer printed '$(cat "$WORK/observe.out")' after $observe_ms ms" \
	'[ "$proclaimed" = t ] && [ "$(cat "$WORK/observe.out")" = "v2 false" ] && [ "$observe_ms" -lt 5000 ]'

# ---- 3a. session_bound => true: bound to the pooled backend ------------------

warm "$POOL" 3
cat >"$WORK/bound.sql" <<'EOF'
\set ON_ERROR_STOP 1
SELECT pg_backend_pid() AS p_acquire, lease.acquire('sb/r', '60 s', holder => 'leader-a', session_bound => true) AS token \gset
SELECT pg_backend_pid() AS p_next \gset
\echo p_acquire :p_acquire token :token p_next :p_next
EOF
run_file "$POOL" bound
sb_token="$(field bound token)"
sb_acq="$(field bound p_acquire)"
sb_next="$(field bound p_next)"
# the client has disconnected; the pooled backend has not
bound_to="$(qd -c "SELECT backend_pid FROM lease.grants WHERE resource = 'sb/r'")" || true
expect "session_bound_grant_is_bound_to_the_backend_that_ran_the_acquire" \
	"grant bound to '$bound_to', acquire ran on '$sb_acq', the client's next statement on '$sb_next'; $(cat "$WORK/bound.err")" \
	'[ -n "$sb_token" ] && [ "$bound_to" = "$sb_acq" ] && [ "$sb_next" != "$sb_acq" ]'
expect "session_bound_grant_outlives_the_client_connection" \
	"after the client disconnected: $(qd -c "SELECT row(session_bound, token) FROM lease.leases WHERE resource = 'sb/r'")" \
	'[ "$(qd -c "SELECT lease.is_current('"'"'sb/r'"'"', $sb_token)")" = t ]'
competitor="$(qon "$POOL" -c "SELECT lease.try_acquire('sb/r', '10 s', holder => 'leader-b')")" || true
expect "session_bound_grant_still_excludes_after_client_left" "competitor got '$competitor'" '[ -z "$competitor" ]'

# the pooler closes its server connections (as server_lifetime,
# server_idle_timeout or a RECONNECT would): the bound backend exits
qon "$CONSOLE" -c "RECONNECT faults" >/dev/null || echo "# RECONNECT faults failed"
for i in $(seq 1 50); do
	[ "$(qd -c "SELECT count(*) FROM pg_stat_activity WHERE pid = $sb_acq")" = 0 ] && break
	sleep 0.1
done
expect "pooler_reconnect_ends_the_bound_backend" "backend $sb_acq still alive 5 s after RECONNECT" \
	'[ "$(qd -c "SELECT count(*) FROM pg_stat_activity WHERE pid = $sb_acq")" = 0 ]'
renewed="$(qon "$POOL" -c "SELECT lease.renew('sb/r', $sb_token, '60 s')")" || true
fence_err="$(qon "$POOL" -v VERBOSITY=sqlstate -c "SELECT lease.fence('sb/r', $sb_token)" 2>&1 >/dev/null || true)"
competitor="$(qon "$POOL" -c "SELECT lease.try_acquire('sb/r', '10 s', holder => 'leader-b')")" || true
expect "session_bound_renew_after_pooler_closed_backend_returns_false" "renew returned '$renewed'" '[ "$renewed" = f ]'
expect "session_bound_fence_after_pooler_closed_backend_fails_LS001" "fence: '$fence_err'" \
	'grep -q "LS001" <<<"$fence_err"'
expect "session_bound_competitor_granted_after_backend_exit" "competitor got '$competitor', old token $sb_token" \
	'[ -n "$competitor" ] && [ "$competitor" -gt "$sb_token" ]'

# ---- 3b. session advisory locks across transactions ---------------------------

warm "$POOL" 3
cat >"$WORK/advisory.sql" <<'EOF'
SELECT 'p_lock ' || pg_backend_pid(), 'locked ' || (pg_advisory_lock(424242) IS NOT NULL);
SELECT 'p_unlock ' || pg_backend_pid(), 'unlocked ' || pg_advisory_unlock(424242);
EOF
run_file "$POOL" advisory
p_lock="$(field advisory p_lock)"
p_unlock="$(field advisory p_unlock)"
expect "session_advisory_unlock_on_another_backend_returns_false_with_warning" \
	"lock on '$p_lock', unlock on '$p_unlock' returned '$(field advisory unlocked)', stderr: $(cat "$WORK/advisory.err")" \
	'[ -n "$p_lock" ] && [ "$p_unlock" != "$p_lock" ] && [ "$(field advisory unlocked)" = false ] &&
	 grep -q "WARNING: *you don.t own a lock of type ExclusiveLock" "$WORK/advisory.err"'
held_by="$(qd -c "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = 424242 AND granted")" || true
expect "session_advisory_lock_stays_on_the_pooled_backend_after_client_left" \
	"advisory lock 424242 held by '$held_by' (locked on '$p_lock') after the client disconnected" \
	'[ "$held_by" = "$p_lock" ]'
# one server connection: two clients of the pool are one session to the server
a_got="$(qon "$ONE" -c "SELECT pg_try_advisory_lock(434343)")" || true
b_got="$(qon "$ONE" -c "SELECT pg_try_advisory_lock(434343)")" || true
expect "session_advisory_lock_is_not_exclusive_between_clients_sharing_a_backend" \
	"client A got '$a_got', client B got '$b_got' (session locks are re-entrant per backend)" \
	'[ "$a_got" = t ] && [ "$b_got" = t ]'
# the pooled backends exit, and their session locks with them
qon "$CONSOLE" -c "RECONNECT" >/dev/null || echo "# RECONNECT failed"

# ---- 3c. pg_advisory_xact_lock within one transaction --------------------------

warm "$POOL" 3
cat >"$WORK/xact.sql" <<EOF
BEGIN;
SELECT 'p_lock ' || pg_backend_pid(), 'locked ' || (pg_advisory_xact_lock(515151) IS NOT NULL);
\\! timeout 10 psql -X -q -A -t "$POOL" -c "SELECT 'other ' || pg_try_advisory_xact_lock(515151)"
\\! timeout 10 psql -X -q -A -t "$DIRECT" -c "SELECT 'held_by ' || pid FROM pg_locks WHERE locktype = 'advisory' AND objid = 515151 AND granted"
SELECT 'p_work ' || pg_backend_pid();
COMMIT;
SELECT 'after ' || pg_try_advisory_xact_lock(515151);
EOF
run_file "$POOL" xact
expect "advisory_xact_lock_holds_for_its_transaction_through_pooler" \
	"lock on '$(field xact p_lock)', work on '$(field xact p_work)', held by '$(field xact held_by)', other client got '$(field xact other)'; $(cat "$WORK/xact.err")" \
	'[ -n "$(field xact p_lock)" ] && [ "$(field xact p_work)" = "$(field xact p_lock)" ] &&
	 [ "$(field xact held_by)" = "$(field xact p_lock)" ] && [ "$(field xact other)" = false ]'
expect "advisory_xact_lock_released_at_commit" "after commit: '$(field xact after)'" '[ "$(field xact after)" = true ]'

# ---- 3d. a NULL holder names the backend ------------------------------------------

ta="$(qon "$ONE" -c "SELECT lease.acquire('nh/r', '60 s')")" || true
tb="$(qon "$ONE" -c "SELECT lease.acquire('nh/r', '60 s')")" || true
expect "null_holder_is_shared_by_clients_of_one_backend" \
	"client A got '$ta', client B got '$tb' (holder $(qd -c "SELECT holder FROM lease.grants WHERE resource = 'nh/r'"))" \
	'[ -n "$ta" ] && [ "$tb" = "$ta" ]'
nested="$(qon "$ONE" -v VERBOSITY=sqlstate -c "SELECT lease.acquire('nh/other', '60 s', wait => '1 s')" 2>&1 || true)"
expect "null_holder_nested_wait_check_spans_clients_of_one_backend" \
	"a client holding nothing, waiting with a NULL holder, got '$nested'" 'grep -q "LS002" <<<"$nested"'
xa="$(qon "$ONE" -c "SELECT lease.acquire('nh/x', '60 s', holder => 'client-a')")" || true
xb="$(qon "$ONE" -c "SELECT lease.acquire('nh/x', '60 s', holder => 'client-b')")" || true
expect "explicit_holders_exclude_each_other_on_one_backend" "client-a got '$xa', client-b got '$xb'" \
	'[ -n "$xa" ] && [ -z "$xb" ]'

# ---- waiters hold server connections -------------------------------------------
# Observation: the server never lets a waiter delay the holder, but a waiting
# acquire occupies a server connection for its whole wait; with the pool full
# of waiters the holder's renew queues in the pooler.

th="$(qon "$ONE" -c "SELECT lease.acquire('starve/r', '2 s', holder => 'holder')")" || true
qon "$ONE" -c "SELECT lease.acquire('starve/r', '10 s', wait => '5 s', holder => 'waiter')" >"$WORK/starve_waiter.out" 2>&1 &
BG_PIDS+=($!)
sleep 0.3
t0="$(now_ms)"
renew_h="$(qon "$ONE" -c "SELECT lease.renew('starve/r', $th, '2 s')" 2>&1 || true)"
renew_ms=$(($(now_ms) - t0))
wait "${BG_PIDS[-1]}" || true
BG_PIDS=()
echo "# observed: pool of 1, holder (TTL 2 s) renews 0.3 s after a waiter (wait 5 s) took the server connection:" \
	"renew answered '$renew_h' after $renew_ms ms; the waiter got token '$(cat "$WORK/starve_waiter.out")' (holder's was $th)"

# ---- 2. the C++ client through the pooler ----------------------------------------

# gtest_report NAME OUTFILE RC -- one ok/not ok per test; gtest's own lines
# are shown as comments (so that harnesses count each test once)
gtest_report() {
	local name="$1" out="$2" rc="$3" line test
	while IFS= read -r line; do
		case "$line" in
		'# observed:'*) echo "$line" ;;
		'[       OK ] '* | '[  FAILED  ] '*' ms)') ;;
		*) [ "$rc" -ne 0 ] && echo "#   $line" ;;
		esac
	done <"$out"
	while IFS= read -r test; do
		echo "ok - $name: $test"
	done < <(sed -n 's/^\[       OK \] \([^ ]*\) (.*$/\1/p' "$out")
	while IFS= read -r test; do
		echo "not ok - $name: $test (gtest output above)"
		failures=$((failures + 1))
	done < <(sed -n 's/^\[  FAILED  \] \([^ ]*\) (.*ms)$/\1/p' "$out")
	if [ "$rc" -ne 0 ] && ! grep -q '^\[  FAILED  \]' "$out"; then
		echo "not ok - $name: exited $rc without a test result (crash or timeout)"
		failures=$((failures + 1))
	fi
}

warm "$POOL" 3
rc=0
FAULTS_POOL_DSN="$POOL" FAULTS_ONE_DSN="$ONE" FAULTS_FRESH_DSN="$FRESH" FAULTS_DIRECT_DSN="$DIRECT" \
	timeout 120 "$BIN" >"$WORK/pooler_test.out" 2>&1 || rc=$?
gtest_report "pooler_test" "$WORK/pooler_test.out" "$rc"

# The project's own client suite, pointed at the pooler (its Admin connects
# through the pooler too).  Not here: the restart tests (they restart the
# cluster behind the pooler), the CLI tests (they exercise the CLI), and the
# two that find the client's backend by application_name: through a pooler a
# server connection keeps the application_name of the last client that set
# one, so they can terminate the Admin's own backend (pooler_test covers both
# by backend PID).  Nor the three that connect as another role or to another
# database (a permission error of another role; an older / a missing extension
# in a database of their own): the pooler knows only the test role and database.
# Nor the two that stop the server's processes (a frozen server; a backend
# whose client gave up): behind a pooler the server's client is the pooler,
# whose connection stays open (docs/limits.md says so).
if [ "$QUICK" = 1 ]; then
	FILTER='ClientTest.AcquireGivesPositiveTokenAndValidLease:ClientTest.ReleaseThenReacquireGetsHigherToken'
	FILTER+=':ClientTest.AutoRenewKeepsLeasePastItsTtl:ClientTest.FencedWriteCommitsWhileHeld'
	FILTER+=':ClientTest.FencedWriteWithStaleTokenIsRejectedAndNotWritten:ClientTest.AdvisoryStrategyTimesOutCleanly'
else
	FILTER='ClientTest.*-ClientTest.ServerRestart*:ClientTest.ServerDown*:ClientTest.Cli*'
	FILTER+=':ClientTest.TerminatedConnectionIsReplacedAndLeaseKept:ClientTest.EphemeralLeaseEndsWithItsConnection'
	FILTER+=':ClientTest.PermissionErrorCarriesSqlstate42501:ClientTest.OlderInstalledExtensionIsRefusedWithTheFixNewerIsAccepted'
	FILTER+=':ClientTest.MissingExtensionIsReportedNotInstalled'
	FILTER+=':ClientTest.FrozenServerEveryCallReturnsWithinItsBound:ClientTest.GrantTheClientGaveUpOnIsUndoneByTheServer'
fi
warm "$POOL" 3
rc=0
PGHOST="$BDIR" PGPORT="$BPORT" PGUSER=postgres PGDATABASE=faults PGLEASE_CLUSTER="$WORK/pg" \
	timeout 120 "$ROOT/build/client/client_test" --gtest_filter="$FILTER" >"$WORK/client_test.out" 2>&1 || rc=$?
gtest_report "client_test through pooler" "$WORK/client_test.out" "$rc"

if grep -E 'PANIC|TRAP:|terminated by signal' "$WORK/pg/server.log"; then
	echo "not ok - server_log_clean: see above"
	failures=$((failures + 1))
else
	echo "ok - server_log_clean"
fi
echo "# pooler.sh: $((failures)) failure(s) in $(($(date +%s) - t_start)) s$([ "$QUICK" = 1 ] && echo ' (quick)')"
exit $((failures > 0))
