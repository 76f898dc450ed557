#!/usr/bin/env bash
# shared_label.sh postgres|redis|etcd -- one holder label given to two
# processes never gives two holders (issue 36, item 1).
#
# Before, a label given with --holder was stored as it is, and a provider
# gives a holder asking again its own grant: two `pglease run --holder
# "nightly@box" --wait 0s` started at once both ran, with one token
# (PostgreSQL, Redis).  Now the label is stored as LABEL~RANDOM (64 bits)
# unless --reclaim, which keeps it as given so that it takes back its own
# grant (after a restart); a provider that cannot (etcd: a grant belongs to
# its etcd lease) refuses --reclaim with 64.  Checked here:
#   - two runs of one label, started together: one runs its command, the
#     other exits 75;
#   - two acquires of one label: the second exits 75; the first printed the
#     stored label (LABEL~RANDOM) on stderr;
#   - --reclaim: the label as given; an acquire of it again gets the same
#     token back, a run of it runs at once with that token, renew and release
#     name it by the label (etcd: 64, nothing taken);
#   - --reclaim without --holder: 64 before any I/O.
# The server is the test's own: PostgreSQL a throwaway cluster on a Unix
# socket (scripts/cluster.sh, CREATE EXTENSION pg_lease); Redis and etcd a
# server on a free port (scripts/redis.sh, scripts/etcd.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
[ $# -eq 1 ] || die "usage: shared_label.sh postgres|redis|etcd"
PROVIDER="$1"
source "$ROOT/tests/cli/lib.sh"
cli_binary "shared_label $PROVIDER"
work_dir pglease-cli-shared-label

case "$PROVIDER" in
postgres | redis | etcd) own_server shared_label "$PROVIDER" ;;
*) die "unknown provider $PROVIDER: postgres, redis or etcd" ;;
esac
P() { "$PGLEASE" "$1" "${DSN[@]}" "${@:2}"; }
LABEL="nightly@box"

# ---- two runs of one label, started together -------------------------------------------
for n in 1 2; do
	(
		rc=0
		P run --resource "label/run" --holder "$LABEL" --ttl 30s --wait 0s -- \
			sh -c 'echo "$PGLEASE_TOKEN" >>"$0"; sleep 3' "$WORK/run.ran" 2>>"$WORK/run.err" || rc=$?
		echo "$rc" >>"$WORK/run.rc"
	) &
done
wait
ran="$(tr '\n' ' ' <"$WORK/run.ran" 2>/dev/null || true)"
codes="$(sort -n "$WORK/run.rc" | tr '\n' ' ')"
expect "${PROVIDER}_two_runs_of_one_label_run_once" \
	"tokens of the commands that ran: '$ran'; exit codes: $codes; stderr: $(tr '\n' ' ' <"$WORK/run.err")" \
	'[ "$(wc -l <"$WORK/run.ran")" -eq 1 ] && [ "$codes" = "0 75 " ]'

# ---- two acquires of one label -----------------------------------------------------------
rc=0; first="$(P acquire --resource label/acquire --holder "$LABEL" --ttl 30s 2>"$WORK/a1.err")" || rc=$?
stored="$(awk '/^pglease: holder /{ print $3 }' "$WORK/a1.err")"
expect "${PROVIDER}_acquire_stores_the_label_with_random_bits" "exit $rc, stderr: $(cat "$WORK/a1.err")" \
	'[ "$rc" -eq 0 ] && [[ "$stored" =~ ^nightly@box~[0-9a-f]{16}$ ]]'
rc=0; second="$(P acquire --resource label/acquire --holder "$LABEL" --ttl 30s 2>"$WORK/a2.err")" || rc=$?
expect "${PROVIDER}_second_acquire_of_one_label_is_refused" "exit $rc, token '$second' beside '$first'" \
	'[ "$rc" -eq 75 ] && [ -z "$second" ]'
rc=0; P release --resource label/acquire --token "$first" --holder "$stored" || rc=$?
expect "${PROVIDER}_the_stored_label_releases" "exit $rc" '[ "$rc" -eq 0 ]'

# ---- --reclaim: the label as given, taken back -------------------------------------------
rc=0; P run --resource label/x --reclaim --ttl 5s -- true 2>"$WORK/nolabel.err" || rc=$?
expect "${PROVIDER}_reclaim_without_holder_is_a_usage_error" "exit $rc: $(cat "$WORK/nolabel.err")" \
	'[ "$rc" -eq 64 ] && grep -q -- "--reclaim needs --holder" "$WORK/nolabel.err"'
rc=0; kept="$(P acquire --resource label/reclaim --holder "$LABEL" --reclaim --ttl 30s 2>"$WORK/r1.err")" || rc=$?
if [ "$PROVIDER" = etcd ]; then
	expect "${PROVIDER}_reclaim_is_refused_where_grants_are_the_sessions" "exit $rc: $(cat "$WORK/r1.err")" \
		'[ "$rc" -eq 64 ] && grep -q "cannot take back" "$WORK/r1.err"'
	rc=0; t="$(P acquire --resource label/reclaim --holder other --ttl 5s 2>/dev/null)" || rc=$?
	expect "${PROVIDER}_refused_reclaim_took_nothing" "exit $rc" '[ "$rc" -eq 0 ] && [ -n "$t" ]'
	finish
fi
expect "${PROVIDER}_reclaim_acquires_under_the_label_as_given" "exit $rc, stderr: $(cat "$WORK/r1.err")" \
	'[ "$rc" -eq 0 ] && [ ! -s "$WORK/r1.err" ]'
rc=0; again="$(P acquire --resource label/reclaim --holder "$LABEL" --reclaim --ttl 30s)" || rc=$?
expect "${PROVIDER}_reclaim_takes_back_the_same_token" "exit $rc, token '$again', first '$kept'" \
	'[ "$rc" -eq 0 ] && [ "$again" = "$kept" ]'
rc=0; P acquire --resource label/reclaim --holder "$LABEL" --ttl 5s >/dev/null 2>&1 || rc=$?
expect "${PROVIDER}_without_reclaim_the_label_is_another_holder" "exit $rc" '[ "$rc" -eq 75 ]'
rc=0; P run --resource label/reclaim --holder "$LABEL" --reclaim --ttl 30s --wait 0s -- \
	sh -c 'echo "$PGLEASE_TOKEN" >"$0"' "$WORK/reclaimed" || rc=$?
expect "${PROVIDER}_run_with_reclaim_takes_back_the_grant" "exit $rc, token '$(cat "$WORK/reclaimed" 2>/dev/null)'" \
	'[ "$rc" -eq 0 ] && [ "$(cat "$WORK/reclaimed")" = "$kept" ]'
finish
