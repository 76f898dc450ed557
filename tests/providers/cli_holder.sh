#!/usr/bin/env bash
# cli_holder.sh PROVIDER [DIR] -- who may renew or release a lease through
# the CLI (issue 22, item 5): `pglease renew` and `release` name a grant by
# its token AND the holder label it was acquired with, for every provider
# whose grants the CLI names by token, against its real server:
#   postgres       the cluster of libpq's environment (the CTest fixture pg_preload)
#   redis          a redis-server of its own (scripts/redis.sh, a free port)
#   etcd DIR       the etcd member of the CTest fixture etcd_cli (its port in DIR/port)
# Checked: acquire prints the token alone on stdout, and without --holder the
# label it made on stderr; the right holder renews (the lease outlives its
# first TTL) and releases; a wrong holder, or none, with the right token is
# refused (76, 64) and changes nothing: the lease is still held (another
# holder's acquire exits 75) and its TTL is not extended (it expires on time).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
[ $# -ge 1 ] || die "usage: cli_holder.sh postgres | redis | etcd DIR"
PROVIDER="$1"
PGLEASE="${PGLEASE_CLI:-$ROOT/build/client/pglease}"
[ -x "$PGLEASE" ] || { echo "not ok - cli_holder $PROVIDER: no $PGLEASE (make client)"; exit 1; }
WORK="$(mktemp -d /tmp/pglease_cli_holder.XXXXXX)"
on_exit 'rm -rf "$WORK"'

case "$PROVIDER" in
postgres)
	[ -n "${PGHOST:-}" ] || { echo "not ok - cli_holder postgres: no PGHOST (run it through ctest: fixture pg_preload)"; exit 1; }
	DSN=() ;; # libpq's environment
redis)
	REDIS="$ROOT/scripts/redis.sh"
	on_exit '"$REDIS" kill "$WORK/r" >/dev/null 2>&1 || true; rm -rf "$WORK"'
	DSN=(--dsn "redis://$("$REDIS" start "$WORK/r")") ;;
etcd)
	[ $# -eq 2 ] && [ -s "$2/port" ] ||
		{ echo "not ok - cli_holder etcd: no server in ${2:-DIR} (its fixture, scripts/etcd.sh start DIR, did not run)"; exit 1; }
	DSN=(--dsn "etcd://127.0.0.1:$(cat "$2/port")") ;;
*) die "unknown provider $PROVIDER: postgres, redis or etcd" ;;
esac
R="cli-holder/$PROVIDER/$$"
TTL=3 # seconds; etcd leases are whole seconds
P() { "$PGLEASE" "$1" "${DSN[@]}" "${@:2}"; }

# held_by_another RESOURCE -- exit status of another holder's try: 75 while held
held_by_another() {
	local rc=0
	P acquire --resource "$1" --ttl 1s --holder intruder >/dev/null 2>&1 || rc=$?
	echo "$rc"
}

# ---- acquire: the token on stdout, a label made for it on stderr ----------------------
rc=0; token="$(P acquire --resource "$R/made" --ttl 10s 2>"$WORK/err")" || rc=$?
label="$(awk '/^pglease: holder /{ print $3 }' "$WORK/err")"
expect "${PROVIDER}_acquire_prints_only_the_token_on_stdout" "exit $rc, stdout '$token'" \
	'[ "$rc" -eq 0 ] && [[ "$token" =~ ^[1-9][0-9]*$ ]]'
expect "${PROVIDER}_acquire_without_holder_prints_its_label_on_stderr" "stderr: $(cat "$WORK/err")" \
	'[[ "$label" =~ ^pglease@.+:[0-9]+:[0-9a-f]{16}:[0-9]+$ ]]'
rc=0; P release --resource "$R/made" --token "$token" --holder "$label" || rc=$?
expect "${PROVIDER}_printed_label_releases" "exit $rc" '[ "$rc" -eq 0 ]'
# a given label is stored with 64 random bits (two processes of one label
# never share a grant, issue 36), and the stored label is printed the same way
rc=0; P acquire --resource "$R/given" --ttl 10s --holder alice >/dev/null 2>"$WORK/err" || rc=$?
expect "${PROVIDER}_acquire_with_holder_prints_the_stored_label" "exit $rc, stderr: $(cat "$WORK/err")" \
	'[ "$rc" -eq 0 ] && grep -Eq "^pglease: holder alice~[0-9a-f]{16} " "$WORK/err"'
# acquire_as LABEL RESOURCE TTL -- acquire as LABEL; sets token and stored (the printed label)
acquire_as() {
	token="$(P acquire --resource "$2" --ttl "$3" --holder "$1" 2>"$WORK/err")" || return
	stored="$(awk '/^pglease: holder /{ print $3 }' "$WORK/err")"
}
labels="$(for i in 1 2 3; do P acquire --resource "$R/labels/$i" --ttl 5s 2>&1 >/dev/null | awk '{ print $3 }'; done | sort -u | wc -l)"
expect "${PROVIDER}_made_labels_differ" "$labels distinct labels of 3" '[ "$labels" -eq 3 ]'

# ---- a wrong holder, or none, with the right token changes nothing ---------------------
start=$(date +%s%N)
acquire_as alice "$R/a" "${TTL}s"
alice="$stored"
for who in mallory "" alice2 "alic" alice; do
	rc=0; P renew --resource "$R/a" --token "$token" --holder "$who" --ttl 60s 2>"$WORK/err" || rc=$?
	want=76; [ -z "$who" ] && want=64
	expect "${PROVIDER}_renew_as_${who:-nobody}_refused_$want" "exit $rc: $(cat "$WORK/err")" '[ "$rc" -eq "$want" ]'
	rc=0; P release --resource "$R/a" --token "$token" --holder "$who" 2>"$WORK/err" || rc=$?
	expect "${PROVIDER}_release_as_${who:-nobody}_refused_$want" "exit $rc: $(cat "$WORK/err")" '[ "$rc" -eq "$want" ]'
done
rc=0; P release --resource "$R/a" --token "$token" 2>"$WORK/err" || rc=$?
expect "${PROVIDER}_release_without_holder_is_a_usage_error" "exit $rc: $(cat "$WORK/err")" \
	'[ "$rc" -eq 64 ] && grep -q -- "--holder is required" "$WORK/err"'
rc=0; P renew --resource "$R/a" --token "$token" --ttl 60s 2>/dev/null || rc=$?
expect "${PROVIDER}_renew_without_holder_is_a_usage_error" "exit $rc" '[ "$rc" -eq 64 ]'
rc="$(held_by_another "$R/a")"
expect "${PROVIDER}_wrong_holders_left_the_lease_held" "another holder's acquire exited $rc" '[ "$rc" -eq 75 ]'
# not extended: free once its first TTL is over (etcd revokes within ~0.5 s after it)
took=0; rc=1
while [ "$rc" -ne 0 ] && [ "$took" -lt $((TTL * 1000 + 4000)) ]; do
	sleep 0.2
	rc=0; next="$(P acquire --resource "$R/a" --ttl 10s --holder bob 2>"$WORK/err")" || rc=$?
	took=$((($(date +%s%N) - start) / 1000000))
done
expect "${PROVIDER}_wrong_holders_did_not_extend_the_ttl" "bob got it after $took ms (TTL ${TTL}s), exit $rc" \
	'[ "$rc" -eq 0 ] && [ "$took" -ge $((TTL * 1000 - 200)) ]'
expect "${PROVIDER}_next_holder_gets_a_higher_token" "alice $token, bob '${next:-}'" '[ "${next:-0}" -gt "$token" ]'
bob="$(awk '/^pglease: holder /{ print $3 }' "$WORK/err")"
rc=0; P release --resource "$R/a" --token "$token" --holder "$alice" 2>/dev/null || rc=$?
expect "${PROVIDER}_old_holder_cannot_release_the_new_grant" "exit $rc" '[ "$rc" -eq 76 ]'
rc=0; P release --resource "$R/a" --token "$next" --holder "$bob" || rc=$?
expect "${PROVIDER}_new_holder_releases" "exit $rc" '[ "$rc" -eq 0 ]'

# ---- the right holder renews (the lease outlives its first TTL) and releases ---------
start=$(date +%s%N)
acquire_as alice "$R/b" "${TTL}s"
alice="$stored"
sleep 1.5
rc=0; P renew --resource "$R/b" --token "$token" --holder "$alice" --ttl "${TTL}s" || rc=$?
expect "${PROVIDER}_holder_renews" "exit $rc" '[ "$rc" -eq 0 ]'
sleep $((TTL - 1))
rc="$(held_by_another "$R/b")"
took=$((($(date +%s%N) - start) / 1000000))
expect "${PROVIDER}_renewed_lease_outlives_its_first_ttl" "another holder's acquire exited $rc at $took ms" \
	'[ "$rc" -eq 75 ] && [ "$took" -gt $((TTL * 1000)) ]'
rc=0; P release --resource "$R/b" --token "$token" --holder "$alice" || rc=$?
expect "${PROVIDER}_holder_releases" "exit $rc" '[ "$rc" -eq 0 ]'
rc=0; P release --resource "$R/b" --token "$token" --holder "$alice" 2>"$WORK/err" || rc=$?
expect "${PROVIDER}_second_release_exits_76_saying_why" "exit $rc: $(cat "$WORK/err")" \
	'[ "$rc" -eq 76 ] && grep -qF "not held with token $token by holder \"$alice\"" "$WORK/err"'
rc="$(held_by_another "$R/b")"
expect "${PROVIDER}_released_lease_is_free" "another holder's acquire exited $rc" '[ "$rc" -eq 0 ]'
finish
