#!/usr/bin/env bash
# sharing_check_selftest.sh -- sharing_check.py must catch each kind of
# violation: feed it histories with one planted violation each and expect
# that property, and no other, to fail (a checker that cannot fail proves
# nothing); a clean history must pass, and so must the histories whose
# oddities are allowed (a holder frozen past its deadline, a wait that a
# freeze made long).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
CHECK="$ROOT/tests/providers/sharing_check.py"
work_dir pglease_sharing_check_selftest
export MIN_GRANTS=2
command -v python3 >/dev/null || die "python3 is missing (apt-get install python3)"

# A clean history, times in microseconds, one file per client process.  rw:
# two readers together (tokens 10, 20), a writer queued behind them (30,
# granted once both left), a reader after it (40).  sem (limit 3): three
# permits (1-3), a fourth waiting for the first release (4), and a try with
# the mismatched limit 2 refused (LS003).  Client c1 was also killed once
# and frozen once, after its requests.
declare -A CLEAN
CLEAN[c1]="R c1-0:1:1 p/rw shared 0 2000 0\nG c1-0:1:1 10 1000 500000\nU c1-0:1:1 300000
R c1-0:1:2 p/sem exclusive 3 0 0\nG c1-0:1:2 1 1000 500000\nU c1-0:1:2 200000
F 1500000 1600000\nK 2000000\n"
CLEAN[c2]="R c2-0:2:1 p/rw shared 0 2000 10000\nG c2-0:2:1 20 11000 510000\nD c2-0:2:1 520000\nU c2-0:2:1 310000
R c2-0:2:2 p/sem exclusive 3 0 0\nG c2-0:2:2 2 2000 500000\nU c2-0:2:2 250000\n"
CLEAN[c3]="R c3-0:3:1 p/rw exclusive 0 2000 20000\nG c3-0:3:1 30 400000 900000\nU c3-0:3:1 600000
R c3-0:3:2 p/sem exclusive 3 0 0\nG c3-0:3:2 3 3000 500000\nU c3-0:3:2 300000\n"
CLEAN[c4]="R c4-0:4:1 p/rw shared 0 2000 500000\nG c4-0:4:1 40 700000 1200000\nU c4-0:4:1 800000
R c4-0:4:2 p/sem exclusive 3 2000 5000\nG c4-0:4:2 4 210000 700000\nU c4-0:4:2 400000
R c4-0:4:3 p/sem exclusive 2 0 100000\nE c4-0:4:3 invalid_argument LS003 101000\n"

# history DIR [FILE LINES]... -- the clean history in DIR, plus LINES in FILE
history() {
	local dir="$1" c
	shift
	rm -rf "$dir" && mkdir -p "$dir"
	for c in "${!CLEAN[@]}"; do printf '%b' "${CLEAN[$c]}" >"$dir/$c.log"; done
	while [ $# -ge 2 ]; do
		printf '%b' "$2" >>"$dir/$1.log"
		shift 2
	done
}

# memory's and PostgreSQL's flags (sharing_history.sh): FIFO, tokens drawn at the grant
FLAGS="--fifo --grant-tokens --chaos"
# shellcheck disable=SC2086 # FLAGS are words
check() { python3 "$CHECK" $FLAGS planted "$1"/*.log 2>&1; }

# plant NAME PROPERTY [FILE LINES]... -- the lines must fail PROPERTY and nothing else
plant() {
	local name="$1" property="$2" out shown=0
	shift 2
	history "$WORK/$name" "$@"
	out="$(check "$WORK/$name" || true)"
	grep -q "^not ok - planted: $property" <<<"$out" && [ "$(grep -c "^not ok" <<<"$out")" -eq 1 ] && shown=1
	negative_control "sharing_checker_catches_$name" "property '$property' fails, and no other" '[ "$shown" = 1 ]'
	[ "$shown" = 1 ] || sed 's/^/#   checker said: /' <<<"$out"
}

# allowed NAME [FILE LINES]... -- the lines must pass every property
allowed() {
	local name="$1" out status
	shift
	history "$WORK/$name" "$@"
	out="$(check "$WORK/$name")" && status=0 || status=$?
	expect "$name" "$(grep '^not ok' <<<"$out" | tr '\n' ' ')" '[ "$status" = 0 ]'
}

allowed clean_history_passes
plant fourth_permit "never more holders than the limit" \
	c5 "R c5-0:5:1 p/sem exclusive 3 0 4000\nG c5-0:5:1 5 5000 500000\nU c5-0:5:1 100000\n"
plant smaller_limit "never more holders than the limit" \
	c5 "R c5-0:5:1 p/sem exclusive 2 0 4000\nG c5-0:5:1 5 5000 500000\nU c5-0:5:1 100000\n"
plant writer_with_readers "never a writer together with anyone" \
	c5 "R c5-0:5:1 p/rw exclusive 0 0 50000\nG c5-0:5:1 25 60000 500000\nU c5-0:5:1 100000\n"
plant reader_with_writer "never a writer together with anyone" \
	c5 "R c5-0:5:1 p/rw shared 0 0 450000\nG c5-0:5:1 35 460000 900000\nU c5-0:5:1 470000\n"
# a frozen holder relies on its grant until its deadline, not its late release
plant writer_before_frozen_deadline "never a writer together with anyone" \
	x "R x-0:6:1 p/rw exclusive 0 0 1000000\nG x-0:6:1 45 1001000 1500000\nF 1100000 3900000\nU x-0:6:1 4000000\n" \
	y "R y-0:7:1 p/rw exclusive 0 2000 1200000\nG y-0:7:1 46 1400000 1900000\nU y-0:7:1 1700000\n"
allowed writer_after_frozen_deadline_passes \
	x "R x-0:6:1 p/rw exclusive 0 0 1000000\nG x-0:6:1 45 1001000 1500000\nF 1100000 3900000\nU x-0:6:1 4000000\n" \
	y "R y-0:7:1 p/rw exclusive 0 2000 1200000\nG y-0:7:1 46 1600000 2100000\nU y-0:7:1 1700000\n"
plant token_twice "every token granted once per resource" \
	c5 "R c5-0:5:1 p/rw shared 0 0 650000\nG c5-0:5:1 40 710000 1200000\nU c5-0:5:1 750000\n"
plant token_lower "tokens increase in grant order" \
	c5 "R c5-0:5:1 p/rw shared 0 0 850000\nG c5-0:5:1 35 860000 1200000\nU c5-0:5:1 870000\n"
plant reader_overtook_writer "no waiter overtaken" \
	c5 "R c5-0:5:2 p/rw exclusive 0 2000 1000000\nE c5-0:5:2 timeout - 3000000\n" \
	c6 "R c6-0:8:1 p/rw shared 0 2000 1400000\nG c6-0:8:1 50 1500000 2000000\nU c6-0:8:1 1600000\n"
plant try_barged "no waiter overtaken" \
	c5 "R c5-0:5:2 p/sem exclusive 3 2000 1000000\nG c5-0:5:2 6 2500000 3000000\nU c5-0:5:2 2600000\n" \
	c6 "R c6-0:8:1 p/sem exclusive 3 0 1400000\nG c6-0:8:1 5 1401000 2000000\nU c6-0:8:1 1450000\n"
# A grant's acquire may return long after the grant: one that waited over
# TTL - heartbeat renews once first, and its process may be descheduled.
# Reader A (token 50) asked at 1.0 s and returned at 3.0 s; reader B, asked
# at 1.5 s, got token 51 and returned at 1.6 s: granted after A, in order
# (sharing_history on PostgreSQL flagged such a pair, tokens 701 and 709)
allowed late_return_is_no_overtaking \
	c5 "R c5-0:5:2 p/rw shared 0 2000 1000000\nG c5-0:5:2 50 3000000 4000000 1000050\nU c5-0:5:2 3100000\n" \
	c6 "R c6-0:8:1 p/rw shared 0 2000 1500000\nG c6-0:8:1 51 1600000 3000000 1500040\nU c6-0:8:1 1700000\n"
# ... and one that gave up: writer A's wait of 500 ms ran out at 1.5 s, its
# acquire returned at 2.2 s; reader B, asked at 1.55 s, was granted after it
allowed late_timeout_is_no_overtaking \
	c5 "R c5-0:5:2 p/rw exclusive 0 500 1000000\nE c5-0:5:2 timeout - 2200000 1000050\n" \
	c6 "R c6-0:8:1 p/rw shared 0 2000 1550000\nG c6-0:8:1 50 1600000 3000000 1550040\nU c6-0:8:1 1700000\n"
# Writer A's R line at 1.0 s took 500 ms to write (its call made at 1.5 s):
# reader B, whose call was made at 1.4 s, was first in the queue (sharing_history
# on memory flagged such a pair, tokens 519 and 523) ...
allowed stalled_log_write_is_no_early_ask \
	c5 "R c5-0:5:2 p/rw exclusive 0 2000 1000000\nG c5-0:5:2 52 2500000 4000000 1500000\nU c5-0:5:2 2600000\n" \
	c6 "R c6-0:8:1 p/rw shared 0 2000 1400000\nG c6-0:8:1 51 1450000 3000000 1400040\nU c6-0:8:1 1500000\n"
# ... but called at 1.0 s, A waited before B: B's lower token overtook it
plant reader_overtook_writer_by_token "no waiter overtaken" \
	c5 "R c5-0:5:2 p/rw exclusive 0 2000 1000000\nG c5-0:5:2 52 2500000 4000000 1000050\nU c5-0:5:2 2600000\n" \
	c6 "R c6-0:8:1 p/rw shared 0 2000 1400000\nG c6-0:8:1 51 1450000 3000000 1400040\nU c6-0:8:1 1500000\n"
# etcd's and ZooKeeper's tokens are their keys' and nodes' creation, when a
# request queues: there the returns are the order of grants, late or not
FLAGS="--fifo --chaos"
plant late_return_without_grant_tokens "no waiter overtaken" \
	c5 "R c5-0:5:2 p/rw shared 0 2000 1000000\nG c5-0:5:2 50 3000000 4000000 1000050\nU c5-0:5:2 3100000\n" \
	c6 "R c6-0:8:1 p/rw shared 0 2000 1500000\nG c6-0:8:1 51 1600000 3000000 1500040\nU c6-0:8:1 1700000\n"
plant try_barged_without_grant_tokens "no waiter overtaken" \
	c5 "R c5-0:5:2 p/sem exclusive 3 2000 1000000\nG c5-0:5:2 6 2500000 3000000\nU c5-0:5:2 2600000\n" \
	c6 "R c6-0:8:1 p/sem exclusive 3 0 1400000\nG c6-0:8:1 5 1401000 2000000\nU c6-0:8:1 1450000\n"
# without FIFO, a reader still must not overtake a waiting writer ...
FLAGS="--chaos"
plant reader_overtook_writer_without_fifo "no reader overtook a waiting writer" \
	c5 "R c5-0:5:2 p/rw exclusive 0 2000 1000000\nE c5-0:5:2 timeout - 3000000\n" \
	c6 "R c6-0:8:1 p/rw shared 0 2000 1400000\nG c6-0:8:1 50 1500000 2000000\nU c6-0:8:1 1600000\n"
FLAGS="--chaos"
# ... and without FIFO a permit may overtake a permit
allowed try_may_barge_without_fifo \
	c5 "R c5-0:5:2 p/sem exclusive 3 2000 1000000\nG c5-0:5:2 6 2500000 3000000\nU c5-0:5:2 2600000\n" \
	c6 "R c6-0:8:1 p/sem exclusive 3 0 1400000\nG c6-0:8:1 5 1401000 2000000\nU c6-0:8:1 1450000\n"
FLAGS="--fifo --grant-tokens --chaos"
plant slow_acquire "every acquire returned within its wait + grace" \
	c5 "R c5-0:5:3 p/rw shared 0 500 3000000\nE c5-0:5:3 timeout - 7000000\n"
plant never_returned "every acquire returned within its wait + grace" \
	c5 "R c5-0:5:3 p/rw shared 0 500 3000000\n"
allowed frozen_acquire_is_excused \
	c5 "R c5-0:5:3 p/rw shared 0 500 3000000\nF 3100000 6000000\nE c5-0:5:3 timeout - 7000000\n"
allowed killed_acquire_is_excused \
	c5 "R c5-0:5:3 p/rw shared 0 500 3000000\nK 3100000\n"
plant refusal_without_ls003 "every refusal explained" \
	c5 "R c5-0:5:4 p/sem exclusive 2 0 100000\nE c5-0:5:4 invalid_argument 22023 101000\n"
plant refusal_without_cause "every refusal explained" \
	c5 "R c5-0:5:4 p/rw shared 0 0 5000000\nE c5-0:5:4 invalid_argument LS003 5001000\n"
# a grant of another limit abandoned (detach) at 3.1 s stays on the server
# until it runs out (its last deadline 4.5 s): a refusal at 5.0 s is
# explained by it; one at 6.5 s, past that deadline and the TTL, is not
allowed abandoned_grant_explains_refusals_until_it_runs_out \
	c5 "R c5-0:5:5 p/sem exclusive 2 0 3000000\nG c5-0:5:5 5 3001000 4500000\nA c5-0:5:5 3100000\n" \
	c6 "R c6-0:8:2 p/sem exclusive 3 0 5000000\nE c6-0:8:2 invalid_argument LS003 5001000\n"
plant refusal_after_the_abandoned_grant_ran_out "every refusal explained" \
	c5 "R c5-0:5:5 p/sem exclusive 2 0 3000000\nG c5-0:5:5 5 3001000 4500000\nA c5-0:5:5 3100000\n" \
	c6 "R c6-0:8:2 p/sem exclusive 3 0 6500000\nE c6-0:8:2 invalid_argument LS003 6501000\n"
plant internal_error "no unexpected errors" \
	c5 "R c5-0:5:4 p/rw shared 0 0 5000000\nE c5-0:5:4 internal - 5001000\n"

# too little happened: one resource, two readers, no writer, no wait, no chaos
mkdir -p "$WORK/vacuous"
printf '%b' "R v-0:1:1 p/rw shared 0 0 0\nG v-0:1:1 1 1000 500000\nU v-0:1:1 2000\n" >"$WORK/vacuous/v.log"
out="$(check "$WORK/vacuous" || true)"
shown=0
grep -q "^not ok - planted: the run exercised sharing" <<<"$out" && [ "$(grep -c "^not ok" <<<"$out")" -eq 1 ] && shown=1
negative_control sharing_checker_catches_vacuous_run "property 'the run exercised sharing' fails, and no other" \
	'[ "$shown" = 1 ]'
[ "$shown" = 1 ] || sed 's/^/#   checker said: /' <<<"$out"
finish
