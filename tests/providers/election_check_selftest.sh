#!/usr/bin/env bash
# election_check_selftest.sh -- election_check.sh must catch each kind of
# violation: feed it histories with one planted violation each and expect
# that property, and no other, to fail (a checker that cannot fail proves
# nothing); a clean history must pass.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
work_dir pglease_election_check_selftest
export MIN_LEADERSHIPS=2 MIN_VIEWS=2

# a clean history: terms 10 and 20, handed over after 10's last valid moment
CLEAN="C 0 100 2000 ok\nL 10 100\nV 10 200\nV 10 300\nX 10 350\nC 150 400 2000 ok\nL 20 400\nV 20 500\nO 1 10\nO 0 10\nO 1 20\n"

# plant NAME PROPERTY LINES -- LINES must fail PROPERTY and nothing else
plant() {
	local name="$1" property="$2" out shown=0
	printf '%b' "$3" >"$WORK/planted.log"
	out="$("$ROOT/tests/providers/election_check.sh" planted "$WORK/planted.log" || true)"
	grep -q "^not ok - planted: $property" <<<"$out" && [ "$(grep -c "^not ok" <<<"$out")" -eq 1 ] && shown=1
	negative_control "election_checker_catches_$name" "property '$property' fails, and no other" '[ "$shown" = 1 ]'
	[ "$shown" = 1 ] || sed 's/^/#   checker said: /' <<<"$out"
}

# passes NAME LINES -- the checker passes LINES (no property fails)
passes() {
	local out status
	printf '%b' "$2" >"$WORK/$1.log"
	out="$("$ROOT/tests/providers/election_check.sh" planted "$WORK/$1.log" 2>&1)" && status=0 || status=$?
	expect "$1" "$(tr '\n' ' ' <<<"$out")" '[ "$status" = 0 ]'
}

printf '%b' "$CLEAN" >"$WORK/clean.log"
clean="$("$ROOT/tests/providers/election_check.sh" planted "$WORK/clean.log" 2>&1)" && status=0 || status=$?
expect clean_history_passes "$(tr '\n' ' ' <<<"$clean")" '[ "$status" = 0 ] && ! grep -q "^not ok" <<<"$clean"'

plant overlap "leaderships overlap" "${CLEAN}V 10 450\n"
plant term_twice "terms handed out twice" "${CLEAN}L 20 900\n"
plant observer_back "every observer saw terms that never go down" "${CLEAN}O 1 15\n"
plant observer_back_in_one_process "every observer saw terms that never go down" "${CLEAN}K 600\nO 1 20\nO 1 15\n"
# a candidate killed and started again: its new observer first sees no leader, term 0
passes restarted_observer_starts_afresh "${CLEAN}K 600\nO 0 0\nO 1 30\n"
plant slow_campaign "no campaign took over 5000 ms" "${CLEAN}C 1000 6000001 2000 timeout\n"
plant vacuous "only 1 leaderships" "C 0 100 2000 ok\nL 10 100\nV 10 200\nO 1 10\nO 0 10\n"
# a campaign frozen by the test is excused
passes frozen_campaign_is_excused "${CLEAN}C 1000 9000000 2000 ok\nF 2000 5000000\n"
finish
