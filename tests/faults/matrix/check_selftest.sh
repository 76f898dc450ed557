#!/usr/bin/env bash
# check_selftest.sh -- the matrix checker (check.sh) on planted histories:
# it must count what is there and nothing else.  Prints ok/not ok lines.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
CHECK="$ROOT/tests/faults/matrix/check.sh"
t="$(mktemp -d)"
on_exit 'rm -rf "$t"'

# clean: w1 holds [110, 300), w2 granted after w1's release, w1 again later
printf 'G 5 100 110 1100\nA 5 1\nL 5 300\nG 7 1500 1600 2600\nA 7 3\nL 7 1700\n' >"$t/c1"
printf 'G 6 290 400 1400\nA 6 2\nL 6 500\n' >"$t/c2"
out="$("$CHECK" 3 "$t/c1" "$t/c2")"
expect matrix_checker_clean_history "$out" '[[ "$out" == *"lost=0 overlaps=0 token_bad=0"* ]]'

# planted: w2 granted inside w1's interval (overlap), with a lower token
# (token_bad), and both acknowledged the same value (one lost update)
printf 'G 5 100 110 1100\nA 5 1\nL 5 900\n' >"$t/p1"
printf 'G 4 200 300 1300\nA 4 1\nL 4 400\n' >"$t/p2"
out="$("$CHECK" 1 "$t/p1" "$t/p2")"
negative_control matrix_checker_finds_planted_violations "planted lost=1 overlaps=1 token_bad=1, counted: $out" \
	'[[ "$out" == *"lost=1 overlaps=1 token_bad=1"* ]]'

# the grant's end is its local deadline when its release came later (a paused holder)
printf 'G 5 100 110 1100\nL 5 5000\n' >"$t/d1"
printf 'G 6 1200 1300 2300\n' >"$t/d2"
out="$("$CHECK" 0 "$t/d1" "$t/d2")"
expect matrix_checker_uses_local_deadline "$out" '[[ "$out" == *"overlaps=0"* ]]'
# tokens all 0 (Redlock): token checks not applicable
printf 'G 0 100 110 1100\nL 0 200\n' >"$t/r1"
printf 'G 0 300 310 1300\nL 0 400\n' >"$t/r2"
out="$("$CHECK" 0 "$t/r1" "$t/r2")"
expect matrix_checker_no_tokens_is_na "$out" '[[ "$out" == *"token_bad=-1"* ]]'
finish
