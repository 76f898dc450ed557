#!/usr/bin/env bash
# check_selftest.sh -- the partition checker (check.sh) on planted
# histories: a clean run passes (lost and kept), and each broken promise is
# found and named (the negative controls).  Prints ok/not ok lines.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
CHECK="$ROOT/tests/faults/partition/check.sh"
t="$(mktemp -d)"
on_exit 'rm -rf "$t"'

# a clean lost run, times in ms from 1000000 s (written below in us): A
# granted at 100 (deadline 2100), renewed (deadline 2800), cut at 1000,
# valid() false at 2801, on_lost at 2850, B granted at 2900 with a higher
# token, healed at 3500, every late call refused
base=1000000000000
us() { echo $((base + $1 * 1000)); }
events() { printf 'cut %s blackhole\nheal %s\n' "$(us 1000)" "$(us 3500)" >"$t/ev"; }
a_clean() {
	cat <<A
P 2000 5000 1000 2000
G 7 $(us 90) $(us 100) $(us 2100)
D $(us 2800)
V $(us 2801)
O 1 $(us 2850) lost
Q $(us 4000)
C renew lost 0
C token_renew false 3
C token_release false 2
C fenced lost 4
C release lost 0
A
}
b_clean() { printf 'P 2000 0 1000 2000\nT 40 12\nG 8 %s %s %s\n' "$(us 2890)" "$(us 2900)" "$(us 4900)"; }
events
a_clean >"$t/a"
b_clean >"$t/b"

# check NAME EXPECTED_TEXT -- the planted history ($t/a, $t/b) must fail
# naming EXPECTED_TEXT; NAME clean: must pass
check() {
	local out rc=0 want="$2"
	out="$("$CHECK" "$t/ev" "$t/a" "$t/b" 2>&1)" || rc=$?
	out="${out//$'\n'/; }"
	if [ "$2" = clean ]; then
		expect "partition_check_$1" "$out" '[ "$rc" = 0 ] && [[ "$out" != *violation* ]]'
	else
		negative_control "partition_check_finds_$1" "planted: $2; checker: $out" \
			'[ "$rc" = 1 ] && [[ "$out" == *"$want"* ]]'
	fi
}
check clean_lost_run clean
out="$("$CHECK" "$t/ev" "$t/a" "$t/b")"
expect partition_check_figures "$out" '[[ "$out" == "outcome=lost cut_to_lost_ms=1850 cut_to_b_ms=1900 lost_after_deadline_ms=50" ]]'

a_clean | sed "s/^O 1 .*/O 1 $(us 2950) lost/" >"$t/a"
b_clean | sed "s/ $(us 2900) / $(us 3000) /" >"$t/b"
check on_lost_late "ms after the local deadline (at most 100)"
a_clean >"$t/a"
b_clean | sed "s/ $(us 2900) / $(us 2700) /" >"$t/b"
check b_before_deadline "ms before A's local deadline"
b_clean | sed "s/ $(us 2900) / $(us 2820) /" >"$t/b"
check b_before_on_lost "ms before A's on_lost"
b_clean >"$t/b"
{ a_clean; echo "O 2 $(us 2900) lost"; } >"$t/a"
check on_lost_twice "on_lost fired 2 times, not once"
a_clean >"$t/a"
b_clean | sed 's/^G 8 /G 6 /' >"$t/b"
check lower_token "B's token 6 is not above A's 7"
b_clean >"$t/b"
a_clean | sed 's/^C renew lost/C renew ok/' >"$t/a"
check renew_after_heal "A's renew answered ok, not lost"
a_clean | sed 's/^C token_release false/C token_release true/' >"$t/a"
check token_release_after_heal "A's token_release answered true, not false lost"
a_clean | sed 's/^C fenced lost/C fenced ok/' >"$t/a"
check fenced_after_heal "A's fenced answered ok, not lost"
a_clean | sed 's/^C token_renew false/C token_renew unavailable/' >"$t/a"
check token_renew_unanswered "A's token_renew answered unavailable, not false lost"
a_clean | sed 's/^C token_renew false 3/C token_renew false 3900/' >"$t/a"
check slow_call "A's token_renew took 3900 ms, bound 3800"
a_clean | grep -v '^O' >"$t/a"
check no_on_lost "on_lost fired 0 times"
a_clean | sed "s/^Q .*/Q $(us 2880)/" >"$t/a"
check calls_before_b "A's calls after the heal came before B's grant"
# kept: healed before the deadline, A renewed and still valid at the check
printf 'P 2000 5000 1000 2000\nG 7 %s %s %s\nD %s\nK %s\nC release ok 2\n' \
	"$(us 90)" "$(us 100)" "$(us 2100)" "$(us 3300)" "$(us 4000)" >"$t/a"
b_clean | sed "s/ $(us 2900) / $(us 4010) /" >"$t/b"
check clean_kept_run clean
b_clean >"$t/b"
check b_beside_kept "ms before A, still valid, released"
finish
