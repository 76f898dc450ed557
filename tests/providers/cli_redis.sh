#!/usr/bin/env bash
# cli_redis.sh -- `pglease run/acquire/renew/release --dsn redis://...` and
# `--dsn redlock://...` behave like the PostgreSQL ones, against real
# redis-servers (scripts/redis.sh, each on a port drawn free when it starts,
# read from its directory's port file): the command runs with
# PGLEASE_TOKEN, a held resource exits 75 after --wait, a lease lost because
# the server stopped exits 76, renew/release by token work for Redis and are
# refused for Redlock (no tokens); issues 19, 22: no password is ever printed, a
# missing database and a TTL above the maximum are usage errors (64), and
# durations near the clock's end (2600000h) work; rediss:// (TLS) with a
# client certificate and a password, and its refusals' exit codes.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
PGLEASE="${PGLEASE_CLI:-$ROOT/build/client/pglease}"
REDIS="$ROOT/scripts/redis.sh"
[ -x "$PGLEASE" ] || { echo "not ok - cli_redis: no $PGLEASE (make client)"; exit 1; }
WORK="$(mktemp -d /tmp/pglease_cli_redis.XXXXXX)"
on_exit 'for d in "$WORK"/r*; do "$REDIS" kill "$d" >/dev/null 2>&1 || true; done; rm -rf "$WORK"'

URL="redis://$("$REDIS" start "$WORK/r0")"
NODES=""
for n in 1 2 3; do NODES="${NODES:+$NODES,}$("$REDIS" start "$WORK/r$n")"; done
LOCK="redlock://$NODES"

# run: the command gets the token, and the lease is released after it
out="$("$PGLEASE" run --dsn "$URL" --resource cli/a --ttl 5s -- sh -c 'echo "$PGLEASE_TOKEN $PGLEASE_RESOURCE"')"
expect "redis_run_passes_token" "output '$out'" '[ "${out#* }" = cli/a ] && [ "${out%% *}" -gt 0 ]'
again="$("$PGLEASE" run --dsn "$URL" --resource cli/a --ttl 5s -- sh -c 'echo "$PGLEASE_TOKEN"')"
expect "redis_run_released_next_token_higher" "first ${out%% *}, then '$again'" '[ "$again" -gt "${out%% *}" ]'

# a held resource: exit 75 after --wait
"$PGLEASE" run --dsn "$URL" --resource cli/held --ttl 5s -- sleep 3 &
holder=$!
sleep 0.5
rc=0
start=$(date +%s%N)
"$PGLEASE" run --dsn "$URL" --resource cli/held --ttl 5s --wait 300ms -- true 2>/dev/null || rc=$?
took=$((($(date +%s%N) - start) / 1000000))
expect "redis_run_held_exits_75_after_wait" "exit $rc after $took ms" '[ "$rc" -eq 75 ] && [ "$took" -lt 2000 ]'
wait "$holder"

# the server stops during the command: lost at the local deadline, exit 76
rc=0
( sleep 1; "$REDIS" stop "$WORK/r0" >/dev/null ) &
start=$(date +%s%N)
"$PGLEASE" run --dsn "$URL" --resource cli/lost --ttl 2s --grace 1s -- sleep 20 2>/dev/null || rc=$?
took=$((($(date +%s%N) - start) / 1000000))
expect "redis_run_lost_when_server_stops_exits_76" "exit $rc after $took ms" '[ "$rc" -eq 76 ] && [ "$took" -lt 6000 ]'
wait
"$REDIS" start "$WORK/r0" >/dev/null # on its port again

# acquire / renew / release by token
token="$("$PGLEASE" acquire --dsn "$URL" --resource cli/tok --ttl 10s --holder cli-redis --reclaim)"
expect "redis_acquire_prints_token" "printed '$token'" '[ "$token" -gt 0 ]'
rc=0; "$PGLEASE" renew --dsn "$URL" --resource cli/tok --token "$token" --holder cli-redis --ttl 10s || rc=$?
expect "redis_renew_by_token" "exit $rc" '[ "$rc" -eq 0 ]'
rc=0; "$PGLEASE" release --dsn "$URL" --resource cli/tok --token "$token" --holder cli-redis || rc=$?
expect "redis_release_by_token" "exit $rc" '[ "$rc" -eq 0 ]'
rc=0; "$PGLEASE" release --dsn "$URL" --resource cli/tok --token "$token" --holder cli-redis 2>/dev/null || rc=$?
expect "redis_release_again_exits_76" "exit $rc" '[ "$rc" -eq 76 ]'

# redlock: run works with token 0; acquire by token is refused (usage, 64)
out="$("$PGLEASE" run --dsn "$LOCK" --resource cli/rl --ttl 5s -- sh -c 'echo "$PGLEASE_TOKEN"')"
expect "redlock_run_token_is_0" "output '$out'" '[ "$out" = 0 ]'
rc=0; "$PGLEASE" acquire --dsn "$LOCK" --resource cli/rl --ttl 5s >/dev/null 2>&1 || rc=$?
expect "redlock_acquire_by_token_refused_64" "exit $rc" '[ "$rc" -eq 64 ]'

# issue 19/22: a password is never printed: credentials these servers (no
# password) refuse exit 77 (permission), malformed ones 64 (usage)
n=0
for case in "77 redis://alice:s3cr3tPW@${URL#redis://}" "64 redis://s3cr3tPW@${URL#redis://}/2" \
	"77 redis://alice:s3/cr3tPW@${URL#redis://}" "77 redis://:s3cr3tPW@${URL#redis://}" \
	"77 redlock://alice:s3cr3tPW@$NODES"; do
	n=$((n + 1)); want="${case%% *}"; dsn="${case#* }"
	rc=0; msg="$("$PGLEASE" run --dsn "$dsn" --resource cli/pw --ttl 5s -- true 2>&1)" || rc=$?
	expect "password_never_printed_$n" "exit $rc (want $want): $msg" \
		'[ "$rc" -eq "$want" ] && ! grep -qE "s3cr3|cr3tPW" <<<"$msg"'
done
# ... nor by the token-level commands and status, whichever source gave the DSN
PW_URL="redis://alice:s3cr3tPW@${URL#redis://}"
printf '%s\n' "$PW_URL" >"$WORK/dsn"
for cmd in "acquire --resource cli/pw --ttl 5s" "renew --resource cli/pw --token 1 --holder h --ttl 5s" \
	"release --resource cli/pw --token 1 --holder h" status; do
	for source in dsn file env; do
		rc=0
		case "$source" in
		dsn) msg="$("$PGLEASE" --dsn "$PW_URL" $cmd 2>&1)" || rc=$? ;;
		file) msg="$("$PGLEASE" --dsn-file "$WORK/dsn" $cmd 2>&1)" || rc=$? ;;
		env) msg="$(PGLEASE_DSN="$PW_URL" "$PGLEASE" $cmd 2>&1)" || rc=$? ;;
		esac
		want=77; [ "${cmd%% *}" = status ] && want=64 # status: PostgreSQL only
		expect "password_never_printed_${cmd%% *}_$source" "exit $rc (want $want): $msg" \
			'[ "$rc" -eq "$want" ] && ! grep -qE "s3cr3|cr3tPW" <<<"$msg"'
	done
done
rc=0; msg="$("$PGLEASE" run --dsn "$URL/16" --resource cli/db --ttl 5s -- true 2>&1)" || rc=$?
expect "redis_missing_database_exits_64" "exit $rc: $msg" '[ "$rc" -eq 64 ] && grep -q "database 16" <<<"$msg"'

# issue 19: durations near the clock's end (2600000h is about 297 years)
rc=0; "$PGLEASE" run --dsn "$URL" --resource cli/long --ttl 2600000h -- sleep 0.5 2>/dev/null || rc=$?
expect "redis_run_ttl_2600000h_exits_0" "exit $rc" '[ "$rc" -eq 0 ]'
rc=0; msg="$("$PGLEASE" run --dsn "$URL" --resource cli/long --ttl 9007199254741s -- true 2>&1)" || rc=$?
expect "redis_ttl_above_max_exits_64_naming_it" "exit $rc: $msg" '[ "$rc" -eq 64 ] && grep -q 9007199254740991ms <<<"$msg"'
"$PGLEASE" run --dsn "$URL" --resource cli/huge-wait --ttl 5s -- sleep 1 &
holder=$!
sleep 0.3
rc=0
start=$(date +%s%N)
"$PGLEASE" run --dsn "$URL" --resource cli/huge-wait --ttl 5s --wait 2600000h -- true 2>/dev/null || rc=$?
took=$((($(date +%s%N) - start) / 1000000))
expect "redis_run_wait_2600000h_waits_for_the_release" "exit $rc after $took ms" '[ "$rc" -eq 0 ] && [ "$took" -ge 400 ]'
wait "$holder"

# issue 22: rediss:// (a TLS-only server wanting a client certificate and a
# password): acquire and release by token; an unknown CA exits 77, an
# unreadable CA file 64, plain redis:// to the TLS port 69 saying so; no
# password is printed
"$ROOT/scripts/certs.sh" "$WORK/certs" >/dev/null
TLS_NODE="$("$REDIS" start "$WORK/rtls" tls="$WORK/certs" requirepass=s3cr3tPW)"
client="cert=$WORK/certs/client.crt&key=$WORK/certs/client.key"
TLS_URL="rediss://:s3cr3tPW@$TLS_NODE?cacert=$WORK/certs/ca.crt&$client"
token="$("$PGLEASE" acquire --dsn "$TLS_URL" --resource cli/tls --ttl 10s --holder tls-holder --reclaim)"
expect "rediss_acquire_prints_token" "printed '$token'" '[ "$token" -gt 0 ]'
rc=0; "$PGLEASE" release --dsn "$TLS_URL" --resource cli/tls --token "$token" --holder tls-holder || rc=$?
expect "rediss_release_by_token" "exit $rc" '[ "$rc" -eq 0 ]'
n=0
for case in "77 certificate rediss://:s3cr3tPW@$TLS_NODE?cacert=$WORK/certs/other-ca.crt&$client" \
	"64 nonexistent rediss://:s3cr3tPW@$TLS_NODE?cacert=$WORK/nonexistent.crt" \
	"69 rediss:// redis://:s3cr3tPW@$TLS_NODE"; do
	n=$((n + 1)); want="${case%% *}"; rest="${case#* }"; says="${rest%% *}"; dsn="${rest#* }"
	rc=0; msg="$("$PGLEASE" run --dsn "$dsn" --resource cli/tls --ttl 5s -- true 2>&1)" || rc=$?
	expect "rediss_refusal_$n" "exit $rc (want $want, saying $says): $msg" \
		'[ "$rc" -eq "$want" ] && grep -qF "$says" <<<"$msg" && ! grep -qE "s3cr3|cr3tPW" <<<"$msg"'
done

# the same TLS files as options (--cacert, --cert, --key: ClientOptions::tls_*)
# instead of the URL's query
TLS_BARE="rediss://:s3cr3tPW@$TLS_NODE"
tls_files=(--cacert "$WORK/certs/ca.crt" --cert "$WORK/certs/client.crt" --key "$WORK/certs/client.key")
token="$("$PGLEASE" acquire --dsn "$TLS_BARE" "${tls_files[@]}" --resource cli/tls-flags --ttl 10s --holder h --reclaim)"
expect "rediss_with_tls_options_acquires" "printed '$token'" '[ "$token" -gt 0 ]'
rc=0; "$PGLEASE" release --dsn "$TLS_BARE" "${tls_files[@]}" --resource cli/tls-flags --token "$token" \
	--holder h || rc=$?
expect "rediss_with_tls_options_releases" "exit $rc" '[ "$rc" -eq 0 ]'
rc=0; msg="$("$PGLEASE" run --dsn "$TLS_BARE" --cacert "$WORK/certs/other-ca.crt" --cert "$WORK/certs/client.crt" \
	--key "$WORK/certs/client.key" --resource cli/tls-flags --ttl 5s -- true 2>&1)" || rc=$?
expect "rediss_tls_option_with_another_ca_is_refused" "exit $rc: $msg" '[ "$rc" -eq 77 ]'
# PostgreSQL's TLS files are libpq's: the options are refused, before any I/O
rc=0; msg="$("$PGLEASE" acquire --dsn "postgresql://u:s3cr3tPW@127.0.0.1:1/db" --cacert "$WORK/certs/ca.crt" \
	--resource cli/x --ttl 5s 2>&1)" || rc=$?
expect "tls_options_with_postgres_refused" "exit $rc: $msg" \
	'[ "$rc" -eq 64 ] && grep -q sslrootcert <<<"$msg" && ! grep -qE "s3cr3|cr3tPW" <<<"$msg"'

# an unknown scheme is a usage error naming it
rc=0; msg="$("$PGLEASE" run --dsn foo://x --resource cli/x --ttl 5s -- true 2>&1)" || rc=$?
expect "unknown_scheme_exits_64" "exit $rc: $msg" '[ "$rc" -eq 64 ] && grep -q foo <<<"$msg"'
finish
