#!/usr/bin/env bash
# election_check.sh NAME LOG... -- check the files election_worker's history
# mode wrote (tests/client/election_worker.cpp; times from CLOCK_MONOTONIC,
# one clock for every process of the machine) for one election:
#   - no two leaderships overlap: a term's last "still valid" moment comes
#     before the next term's election (a later term began only after);
#   - no term is handed out twice;
#   - every observer's sequence of views has terms that never go down (a
#     "K" line, a killed candidate, starts a new observer in the same file);
#   - no campaign took longer than CAMPAIGN_BOUND_MS (5000: its 2 s wait
#     and a grace of 3 s),
#     unless a freeze of that candidate (an "F from to" line the test wrote)
#     overlaps it;
#   - the run is not vacuous: at least MIN_LEADERSHIPS (10) leaderships and
#     MIN_VIEWS (20) observed views.
# Prints "ok - NAME: ..." or "not ok - NAME: ..." per property; exits 1 if any failed.
set -euo pipefail
source "$(dirname "$0")/../../scripts/lib/common.sh"
name="${1:?usage: election_check.sh NAME LOG...}"
shift
MIN_LEADERSHIPS="${MIN_LEADERSHIPS:-10}" MIN_VIEWS="${MIN_VIEWS:-20}" CAMPAIGN_BOUND_MS="${CAMPAIGN_BOUND_MS:-5000}"

cat "$@" | awk -v p="$name" -v min="$MIN_LEADERSHIPS" '
	$1 == "L" { if ($2 in start) dup = dup " " $2; start[$2] = $3 }
	$1 == "V" { if (!($2 in last) || $3 > last[$2]) last[$2] = $3 }
	$1 == "K" { kills++ }
	END {
		k = 0
		for (t in start) terms[++k] = t + 0
		for (i = 2; i <= k; i++) { v = terms[i]; j = i - 1
			while (j > 0 && terms[j] > v) { terms[j + 1] = terms[j]; j-- } terms[j + 1] = v }
		bad = ""
		for (i = 1; i < k; i++) {
			a = terms[i]; b = terms[i + 1]
			if ((a in last) && last[a] >= start[b])
				bad = bad sprintf(" term %d still valid at %d us, term %d elected at %d us;", a, last[a], b, start[b])
		}
		if (bad != "") print "not ok - " p ": leaderships overlap:" bad
		else print "ok - " p ": no two of " k " leaderships overlap"
		if (dup != "") print "not ok - " p ": terms handed out twice:" dup
		else print "ok - " p ": every term handed out once"
		if (k < min) print "not ok - " p ": only " k " leaderships in the run (at least " min " expected)"
		else print "ok - " p ": " k " leaderships, " kills + 0 " candidates killed"
	}' | tee "${TMPDIR:-/tmp}/election_check.$$"
grep -q '^not ok' "${TMPDIR:-/tmp}/election_check.$$" && failures=$((failures + 1))
rm -f "${TMPDIR:-/tmp}/election_check.$$"

bad_obs="" views=0 slow=""
for f in "$@"; do
	views=$((views + $(grep -c '^O ' "$f" || true)))
	# a K line ends the killed candidate's observer: the one started again
	# in its place remembers nothing, so its first "no leader" may say term 0
	went="$(awk '$1 == "K" { t = 0 } $1 == "O" { if ($3 < t) { print "term " t " then " $3; exit } t = $3 }' "$f")"
	[ -z "$went" ] || bad_obs="$bad_obs $(basename "$f"): $went;"
	slow="$slow$(awk -v bound_us="$((CAMPAIGN_BOUND_MS * 1000))" '$1 == "F" { fs[++nf] = $2; fe[nf] = $3 }
		$1 == "C" { c[++nc] = $0; cs[nc] = $2; ce[nc] = $3 }
		END { for (i = 1; i <= nc; i++) {
			if (ce[i] - cs[i] <= bound_us) continue
			frozen = 0
			for (j = 1; j <= nf; j++) if (fs[j] < ce[i] && fe[j] > cs[i]) frozen = 1
			if (!frozen) printf " %s: %s;", FILENAME, c[i] } }' "$f")"
done
expect "$name: every observer saw terms that never go down" "$bad_obs" '[ -z "$bad_obs" ]'
expect "$name: observers saw the handovers" "$views views observed (at least $MIN_VIEWS expected)" \
	'[ "$views" -ge "$MIN_VIEWS" ]'
expect "$name: no campaign took over $CAMPAIGN_BOUND_MS ms" "$slow" '[ -z "$slow" ]'
finish
