#!/usr/bin/env bash
# etcd_elect.sh PROBE PGLEASE -- pglease beside etcd's own clients on one
# etcd member of its own (scripts/etcd.sh, a free port): the promise of
# docs/election.md#etcd and docs/providers.md that `etcdctl elect NAME` and
# `etcdctl lock NAME` (etcd's concurrency.Election and Mutex) and pglease
# candidates and holders on the same name see and respect each other.
#   PROBE: tests/providers/etcd_elect_probe (campaign / leader through the
#   library); PGLEASE: the CLI (`pglease run` for the locks).
# Elections: (1) etcdctl elect leads first -> a pglease candidate waits,
# leader() shows etcdctl's value and create revision, etcdctl's resignation
# (SIGTERM) hands over; (2) pglease leads -> `etcdctl elect` waits,
# `etcdctl elect --listen` prints the pglease value and then its proclaimed
# one, the pglease resignation hands over to etcdctl; election_prefix= (empty)
# names the same election by its whole etcd name.  Locks: `etcdctl lock
# pglease/lock/R` and `pglease run --resource R` exclude each other both
# ways, and with lock_prefix= a custom prefix.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
[ $# -eq 2 ] || die "usage: etcd_elect.sh PATH/etcd_elect_probe PATH/pglease"
PROBE="$1" PGLEASE="$2"
for tool in "$PROBE" "$PGLEASE"; do
	[ -x "$tool" ] || { echo "not ok - etcd_elect: no $tool (build the tests: make client)"; exit 1; }
done
command -v etcdctl >/dev/null || { echo "not ok - etcd_elect: no etcdctl (scripts/install-deps.sh installs etcd-client)"; exit 1; }
export ETCDCTL_API=3
failures=0
work_dir pglease_etcd_elect
pids=()
on_exit 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; sleep 0.3
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	"$ROOT/scripts/etcd.sh" kill "$WORK/etcd" >/dev/null 2>&1 || true'
E="$("$ROOT/scripts/etcd.sh" start "$WORK/etcd")"
URL="etcd://$E"
ctl() { etcdctl --endpoints="$E" "$@"; }

# wait_line FILE PATTERN SECONDS -- a line of FILE matches the grep pattern in time
wait_line() {
	local i
	for ((i = 0; i < $3 * 20; i++)); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
# first_rev PREFIX -- the create revision of the prefix's first key (etcd's leader)
first_rev() {
	ctl get --prefix "$1" --sort-by=CREATE --order=ASCEND --limit=1 -w fields |
		sed -n 's/^"CreateRevision" : //p'
}
# candidate NAME ELECTION VALUE [URL] -- a pglease candidate in the
# background, its stdin the fifo $WORK/NAME.in (kept open on fd of its own),
# its stdout $WORK/NAME.out
candidate() {
	mkfifo "$WORK/$1.in"
	"$PROBE" campaign "${4:-$URL}" "$2" "$3" <"$WORK/$1.in" >"$WORK/$1.out" 2>&1 &
	pids+=($!)
	eval "exec {fd_$1}>\"\$WORK/\$1.in\""
}
say() { local fd="fd_$1"; echo "$2" >&"${!fd}"; }

# ---- (1) etcdctl elect leads, a pglease candidate waits ----------------------
name="one$$" NAME="pglease/election/one$$"
etcdctl --endpoints="$E" elect "$NAME" v1 >"$WORK/ctl1.out" 2>&1 & # $!: etcdctl itself
ctl1=$!
pids+=("$ctl1")
expect etcdctl_elect_leads_first "etcdctl elect printed '$(cat "$WORK/ctl1.out")'" \
	'wait_line "$WORK/ctl1.out" "^v1$" 10'
rev="$(first_rev "$NAME/")"
seen="$("$PROBE" leader "$URL" "$name")"
expect leader_shows_etcdctl_value_and_revision "leader() '$seen', etcdctl's key created at $rev" \
	'[ -n "$rev" ] && [ "$seen" = "leader $rev v1" ]'
# sed reads every line: `head -1` could end etcdctl with SIGPIPE, fatal under pipefail
key="$(ctl get --prefix "$NAME/" --keys-only | sed -n 1p)"
expect etcdctl_key_is_name_slash_lease_hex "etcdctl's key '$key'" '[[ "$key" =~ ^$NAME/[0-9a-f]{1,16}$ ]]'
candidate p1 "$name" p1
sleep 1.5
expect pglease_candidate_waits_for_etcdctl "the candidate printed '$(cat "$WORK/p1.out")'" \
	'! grep -q elected "$WORK/p1.out"'
kill -TERM "$ctl1" # etcdctl resigns on SIGTERM (SIGINT is ignored in a background job)
expect etcdctl_resigning_hands_over "the candidate printed '$(cat "$WORK/p1.out" 2>/dev/null)'" \
	'wait_line "$WORK/p1.out" "^elected " 5'
term="$(sed -n 's/^elected //p' "$WORK/p1.out")"
expect pglease_term_above_etcdctl_revision "term '$term', etcdctl's revision $rev" '[ "${term:-0}" -gt "$rev" ]'
value="$(ctl get --prefix "$NAME/" --sort-by=CREATE --order=ASCEND --limit=1 --print-value-only)"
expect etcdctl_reads_pglease_value "the first key's value '$value'" '[ "$value" = p1 ]'

# ---- (2) the pglease leader first: etcdctl elect waits, --listen follows ------
etcdctl --endpoints="$E" elect "$NAME" v2 >"$WORK/ctl2.out" 2>&1 &
pids+=($!)
etcdctl --endpoints="$E" elect --listen "$NAME" >"$WORK/listen.out" 2>&1 &
pids+=($!)
sleep 1.5
expect etcdctl_elect_waits_for_pglease "etcdctl elect printed '$(cat "$WORK/ctl2.out")'" '[ ! -s "$WORK/ctl2.out" ]'
expect etcdctl_listen_prints_pglease_leader "etcdctl elect --listen printed '$(cat "$WORK/listen.out")'" \
	'wait_line "$WORK/listen.out" "^p1$" 5'
seen="$("$PROBE" leader "etcd://$E?election_prefix=" "$NAME")"
expect empty_election_prefix_names_the_same_election "leader() of '$NAME' with election_prefix= empty: '$seen'" \
	'[ "$seen" = "leader $term p1" ]'
say p1 "proclaim p1-moved"
expect pglease_proclaim_ok "the leader printed '$(cat "$WORK/p1.out")'" 'wait_line "$WORK/p1.out" "^proclaimed ok" 5'
expect etcdctl_listen_prints_proclamation "etcdctl elect --listen printed '$(cat "$WORK/listen.out")'" \
	'wait_line "$WORK/listen.out" "^p1-moved$" 5'
say p1 resign
expect pglease_resigning_hands_over_to_etcdctl "etcdctl elect printed '$(cat "$WORK/ctl2.out")'" \
	'wait_line "$WORK/ctl2.out" "^v2$" 5'
seen="$("$PROBE" leader "$URL" "$name")"
expect leader_shows_etcdctl_after_handover "leader() '$seen'" '[ "${seen% *}" != "leader $term" ] && [ "${seen##* }" = v2 ]'
expect etcdctl_listen_prints_etcdctl_leader "etcdctl elect --listen printed '$(cat "$WORK/listen.out")'" \
	'wait_line "$WORK/listen.out" "^v2$" 5'

# ---- locks: etcdctl lock and pglease run exclude each other, both ways ---------
# lock_both RESOURCE ETCD_NAME URL -- the checks for one prefix
lock_both() {
	local r="$1" n="$2" url="$3" tag="$4" rc out
	"$PGLEASE" run --dsn "$url" --resource "$r" --ttl 5s -- sleep 3 &
	local held=$!
	sleep 1
	out="$(timeout 1.5 etcdctl --endpoints="$E" lock "$n" echo got 2>&1)" || true
	expect "${tag}_etcdctl_lock_waits_for_pglease" "etcdctl lock printed '$out'" '[[ "$out" != *got* ]]'
	wait "$held"
	out="$(timeout 5 etcdctl --endpoints="$E" lock "$n" echo got 2>&1)" || true
	expect "${tag}_etcdctl_lock_after_pglease" "etcdctl lock printed '$out'" '[[ "$out" == *got* ]]'
	ctl lock "$n" sleep 3 >/dev/null 2>&1 &
	held=$!
	sleep 1
	rc=0
	"$PGLEASE" run --dsn "$url" --resource "$r" --ttl 5s --wait 300ms -- true 2>/dev/null || rc=$?
	expect "${tag}_pglease_waits_for_etcdctl_lock" "pglease run exited $rc" '[ "$rc" -eq 75 ]'
	wait "$held" || true
	rc=0
	"$PGLEASE" run --dsn "$url" --resource "$r" --ttl 5s --wait 5s -- true 2>/dev/null || rc=$?
	expect "${tag}_pglease_after_etcdctl_lock" "pglease run exited $rc" '[ "$rc" -eq 0 ]'
}
lock_both "lk$$" "pglease/lock/lk$$" "$URL" default_prefix
lock_both "lk$$" "custom/locks/lk$$" "$URL?lock_prefix=custom%2Flocks%2F" lock_prefix
finish
