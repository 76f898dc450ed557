#!/usr/bin/env bash
# cli_lease.sh NAME SCRIPT DIR [run-only] -- `pglease run/acquire/renew/release
# --dsn NAME://127.0.0.1:PORT` for a provider with fencing tokens, against its
# real server: the one SCRIPT (scripts/etcd.sh or zookeeper.sh) started in DIR
# (a CTest fixture, tests/lib/server_fixture.sh), on the port in DIR/port
# (`SCRIPT stop DIR` and `SCRIPT start DIR` stop it and bring it back on that
# port).  The command gets PGLEASE_TOKEN and tokens strictly increase across
# runs, a held resource exits 75 after --wait, a lease lost because the server
# stopped exits 76, renew/release by token work and a second release exits 76
# (etcd: a renew asking for more than the lease's granted TTL exits 64 and
# leaves the lease's TTL as it was: etcd cannot change it), and (issue 22)
# a DSN with a password, from --dsn, --dsn-file or PGLEASE_DSN, never shows
# it in any command's output, advise's included.  With run-only (a
# provider whose grant is its session's, ZooKeeper), acquire must be refused
# as a usage error (64) instead: its grant would end with it.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
[ $# -ge 3 ] || die "usage: cli_lease.sh NAME SCRIPT DIR [run-only]"
NAME="$1" SCRIPT="$2" DIR="$3" MODE="${4:-tokens}"
[ -s "$DIR/port" ] || { echo "not ok - cli_lease $NAME: no server in $DIR (its fixture, $SCRIPT start $DIR, did not run)"; exit 1; }
URL="$NAME://127.0.0.1:$(cat "$DIR/port")"
START="$SCRIPT start $DIR" STOP="$SCRIPT stop $DIR"
PGLEASE="${PGLEASE_CLI:-$ROOT/build/client/pglease}"
[ -x "$PGLEASE" ] || { echo "not ok - cli_lease $NAME: no $PGLEASE (make client)"; exit 1; }
R="cli/$NAME/$$"
work_dir pglease-cli-lease

out="$("$PGLEASE" run --dsn "$URL" --resource "$R/a" --ttl 5s -- sh -c 'echo "$PGLEASE_TOKEN $PGLEASE_RESOURCE"')"
expect "${NAME}_run_passes_token" "output '$out'" '[ "${out#* }" = "$R/a" ] && [ "${out%% *}" -gt 0 ]'
again="$("$PGLEASE" run --dsn "$URL" --resource "$R/a" --ttl 5s -- sh -c 'echo "$PGLEASE_TOKEN"')"
expect "${NAME}_run_released_next_token_higher" "first ${out%% *}, then '$again'" '[ "$again" -gt "${out%% *}" ]'

"$PGLEASE" run --dsn "$URL" --resource "$R/held" --ttl 5s -- sleep 3 &
holder=$!
sleep 1
rc=0
start=$(date +%s%N)
"$PGLEASE" run --dsn "$URL" --resource "$R/held" --ttl 5s --wait 300ms -- true 2>/dev/null || rc=$?
took=$((($(date +%s%N) - start) / 1000000))
expect "${NAME}_run_held_exits_75_after_wait" "exit $rc after $took ms" '[ "$rc" -eq 75 ] && [ "$took" -lt 2500 ]'
wait "$holder"

rc=0
( sleep 1; eval "$STOP" >/dev/null ) &
start=$(date +%s%N)
"$PGLEASE" run --dsn "$URL" --resource "$R/lost" --ttl 3s --grace 1s -- sleep 30 2>/dev/null || rc=$?
took=$((($(date +%s%N) - start) / 1000000))
expect "${NAME}_run_lost_when_server_stops_exits_76" "exit $rc after $took ms" '[ "$rc" -eq 76 ] && [ "$took" -lt 10000 ]'
wait
eval "$START" >/dev/null

# issue 22: a DSN holding a password, through --dsn, --dsn-file and
# PGLEASE_DSN, never shows it: not in any command's stdout or stderr (this
# server asks for no password), nor in advise's or status's output
SECRET="s3cr3tPW-$$"
PW_URL="$NAME://alice:$SECRET@${URL#*://}"
DSN_FILE="$(mktemp /tmp/pglease_cli_lease_dsn.XXXXXX)"
printf '%s\n' "$PW_URL" >"$DSN_FILE"
for cmd in "run --resource $R/pw --ttl 5s -- true" "acquire --resource $R/pw --ttl 5s" \
	"renew --resource $R/pw --token 1 --holder h --ttl 5s" "release --resource $R/pw --token 1 --holder h" status; do
	for source in dsn file env; do
		rc=0
		case "$source" in
		dsn) out="$("$PGLEASE" --dsn "$PW_URL" $cmd 2>&1)" || rc=$? ;;
		file) out="$("$PGLEASE" --dsn-file "$DSN_FILE" $cmd 2>&1)" || rc=$? ;;
		env) out="$(PGLEASE_DSN="$PW_URL" "$PGLEASE" $cmd 2>&1)" || rc=$? ;;
		esac
		expect "${NAME}_password_never_shown_${cmd%% *}_$source" "exit $rc: $out" \
			'[ "$rc" -ne 70 ] && ! grep -q "cr3tPW" <<<"$out"'
	done
done
rc=0; out="$(PGLEASE_DSN="$PW_URL" "$PGLEASE" --dsn-file "$DSN_FILE" advise --resource R --section 1s \
	--instances 3 --infra "$NAME" --explain --emit cpp 2>&1)" || rc=$?
expect "${NAME}_advise_never_shows_a_dsn_password" "exit $rc" '[ "$rc" -eq 0 ] && ! grep -q "cr3tPW" <<<"$out"'
rm -f "$DSN_FILE"

if [ "$MODE" = run-only ]; then
	rc=0; "$PGLEASE" acquire --dsn "$URL" --resource "$R/tok" --ttl 10s >/dev/null 2>&1 || rc=$?
	expect "${NAME}_acquire_by_token_refused_64" "exit $rc" '[ "$rc" -eq 64 ]'
	finish
fi
token="$("$PGLEASE" acquire --dsn "$URL" --resource "$R/tok" --ttl 10s --wait 10s --holder cli-lease 2>"$WORK/acquire.err")"
# the label the grant is stored under: cli-lease~RANDOM (64 random bits)
label="$(awk '/^pglease: holder /{ print $3 }' "$WORK/acquire.err")"
expect "${NAME}_acquire_prints_token" "printed '$token'" '[ "$token" -gt 0 ]'
rc=0; "$PGLEASE" renew --dsn "$URL" --resource "$R/tok" --token "$token" --holder "$label" --ttl 10s || rc=$?
expect "${NAME}_renew_by_token" "exit $rc" '[ "$rc" -eq 0 ]'
if [ "${URL#etcd://}" != "$URL" ]; then
	# etcd_granted_ttl RESOURCE -- the granted TTL of the lease of RESOURCE's
	# (first) lock key, through the JSON gateway of the URL's first endpoint
	etcd_granted_ttl() {
		local ep="${URL#etcd://}" prefix key end lease
		ep="${ep%%,*}"
		prefix="pglease/lock/$1/"
		key="$(printf '%s' "$prefix" | base64 -w0)"
		end="$(printf '%s' "${prefix%/}0" | base64 -w0)"
		lease="$(curl -s -m 5 "http://$ep/v3/kv/range" -d "{\"key\":\"$key\",\"range_end\":\"$end\"}" |
			grep -o '"lease":"[0-9]*"' | head -1 | grep -o '[0-9][0-9]*')" || return 0
		curl -s -m 5 "http://$ep/v3/lease/timetolive" -d "{\"ID\":\"$lease\"}" |
			grep -o '"grantedTTL":"[0-9]*"' | grep -o '[0-9][0-9]*' || true
	}
	rc=0; "$PGLEASE" renew --dsn "$URL" --resource "$R/tok" --token "$token" --holder "$label" --ttl 1h 2>/dev/null || rc=$?
	granted="$(etcd_granted_ttl "$R/tok")"
	expect "${NAME}_renew_beyond_granted_ttl_exits_64" "exit $rc, the lease's granted TTL now '$granted' s" \
		'[ "$rc" -eq 64 ] && [ "$granted" = 10 ]'
fi
rc=0; "$PGLEASE" release --dsn "$URL" --resource "$R/tok" --token "$token" --holder "$label" || rc=$?
expect "${NAME}_release_by_token" "exit $rc" '[ "$rc" -eq 0 ]'
rc=0; "$PGLEASE" release --dsn "$URL" --resource "$R/tok" --token "$token" --holder "$label" 2>/dev/null || rc=$?
expect "${NAME}_release_again_exits_76" "exit $rc" '[ "$rc" -eq 76 ]'
finish
