#!/usr/bin/env bash
# elect.sh PROVIDER [DIR] -- `pglease elect` and `pglease leader` (issue 23,
# item 3) against a provider's real server, several pglease processes on one
# election:
#   postgres        the cluster of libpq's environment (the CTest fixture pg_preload)
#   redis           a redis-server of its own (scripts/redis.sh, a free port)
#   etcd DIR        the etcd member of the CTest fixture etcd_cli (its port in DIR/port)
#   zookeeper DIR   the ZooKeeper server of the fixture zookeeper_cli (its port in DIR/port)
# Checked: elect runs the command with PGLEASE_TERM, PGLEASE_VALUE and
# PGLEASE_ELECTION and resigns when it exits (its status is the command's);
# leader prints the leader or "no leader" (exit 0 either way) and --json
# parses; a second elect waits, and a --wait too short exits 75; after a
# SIGKILL of the first pglease the second is elected once the TTL has run
# out, with a higher term; leader --watch (text and --json) prints each
# change in order, "no leader" included, terms never going back; --requeue
# campaigns again after the command exits and after losing (a leader frozen
# with SIGSTOP past its TTL); bad arguments exit 64 with a clear message.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
[ $# -ge 1 ] || die "usage: elect.sh postgres | redis | etcd DIR | zookeeper DIR"
PROVIDER="$1"
source "$ROOT/tests/cli/lib.sh"
cli_binary "elect $PROVIDER"
command -v python3 >/dev/null || { echo "not ok - elect $PROVIDER: no python3 (apt-get install python3)"; exit 1; }
work_dir pglease-cli-elect
fixture_dsn elect "$@"
E="cli-elect/$PROVIDER/$$"
TTL=3 # seconds (etcd leases are whole seconds)
P() { "$PGLEASE" "$1" "${DSN[@]}" "${@:2}"; }
# B -- P for a background start (`B ... &`): exec, so that $! is pglease's own
# pid and a signal sent to it reaches pglease, not a subshell
B() { exec "$PGLEASE" "$1" "${DSN[@]}" "${@:2}"; }

# exit_of PID SECONDS -- rc: the exit status of background PID, or "running"
# (not in a subshell: only this shell may wait for its children)
exit_of() {
	rc=running
	wait_gone "$1" "$2" || return 0
	rc=0
	wait "$1" || rc=$?
}

# ---- one leader: the command's environment, resign, its exit status -----------
rc=0
out="$(P elect --name "$E/a" --value alpha --ttl ${TTL}s \
	-- sh -c 'echo "$PGLEASE_TERM|$PGLEASE_VALUE|$PGLEASE_ELECTION"; exit 3' 2>"$WORK/a.err")" || rc=$?
IFS='|' read -r term value election <<<"$out"
expect "${PROVIDER}_elect_runs_the_command_with_term_value_election" "exit $rc, output '$out'" \
	'[[ "$term" =~ ^[1-9][0-9]*$ ]] && [ "$value" = alpha ] && [ "$election" = "$E/a" ]'
expect "${PROVIDER}_elect_exits_with_the_commands_status" "exit $rc" '[ "$rc" -eq 3 ]'
expect "${PROVIDER}_elect_says_elected_and_resigned" "stderr: $(cat "$WORK/a.err")" \
	'grep -q "elected term $term" "$WORK/a.err" && grep -q "resigned term $term" "$WORK/a.err"'
rc=0; out="$(P leader --name "$E/a" 2>&1)" || rc=$?
expect "${PROVIDER}_leader_after_resign_is_no_leader" "exit $rc: $out" '[ "$rc" -eq 0 ] && [ "$out" = "no leader" ]'
# with no leader, "term" is the last term that ended where the provider
# says it (Redis), else null: never 0 after a term ended (issue 36, item 11)
rc=0; out="$(P leader --name "$E/a" --json 2>&1)" || rc=$?
expect "${PROVIDER}_leader_json_after_resign_is_the_ended_term_or_null" "exit $rc: $out (term $term ended)" \
	'[ "$rc" -eq 0 ] && python3 -c "import json,sys; v = json.loads(sys.argv[1]); assert v[\"leader\"] is False and v[\"term\"] in (None, int(sys.argv[2]))" "$out" "$term"'
rc=0; out="$(P leader --name "$E/never" --json 2>&1)" || rc=$?
expect "${PROVIDER}_leader_json_of_an_unused_election" "exit $rc: $out" \
	'[ "$rc" -eq 0 ] && python3 -c "import json,sys; v = json.loads(sys.argv[1]); assert v[\"leader\"] is False and v[\"term\"] is None" "$out"'

# ---- a second candidate waits; the first killed, it leads after the TTL ---------
B elect --name "$E/b" --value 'first "one"' --ttl ${TTL}s -- sh -c 'echo "$PGLEASE_TERM $$" >"$0"; exec sleep 60' \
	"$WORK/first" 2>"$WORK/first.err" &
started
FIRST=$!
wait_lines "$WORK/first" 10 || true
read -r t1 first_child <"$WORK/first" || true
expect "${PROVIDER}_first_candidate_is_elected" "no term in $WORK/first; stderr: $(cat "$WORK/first.err")" \
	'[[ "${t1:-}" =~ ^[1-9][0-9]*$ ]]'
rc=0; out="$(P leader --name "$E/b" 2>&1)" || rc=$?
expect "${PROVIDER}_leader_prints_value_term_since" "exit $rc: $out" \
	'[ "$rc" -eq 0 ] && [[ "$out" =~ ^first\ \"one\"\ term\ $t1(\ since\ [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z)?$ ]]'
rc=0; out="$(P leader --name "$E/b" --json 2>&1)" || rc=$?
expect "${PROVIDER}_leader_json_parses" "exit $rc: $out" \
	'[ "$rc" -eq 0 ] && python3 -c "import json,sys; v = json.loads(sys.argv[1]); assert v[\"leader\"] is True and v[\"value\"] == \"first \\\"one\\\"\" and v[\"term\"] == int(sys.argv[2])" "$out" "$t1"'

B leader --name "$E/b" --watch >"$WORK/watch" 2>"$WORK/watch.err" &
started
WATCH=$!
B leader --name "$E/b" --watch --json >"$WORK/watch.json" 2>"$WORK/watch.json.err" &
started
WATCH_JSON=$!
wait_lines "$WORK/watch" 10 && wait_lines "$WORK/watch.json" 10 || true

rc=0; P elect --name "$E/b" --value impatient --ttl ${TTL}s --wait 1s -- true 2>/dev/null || rc=$?
expect "${PROVIDER}_elect_not_elected_within_wait_exits_75" "exit $rc" '[ "$rc" -eq 75 ]'

B elect --name "$E/b" --value second --ttl ${TTL}s -- sh -c 'echo "$PGLEASE_TERM" >"$0"; exec sleep 60' \
	"$WORK/second" 2>"$WORK/second.err" &
started
SECOND=$!
sleep 1
expect "${PROVIDER}_second_candidate_waits" "it ran its command while the first leads" '[ ! -e "$WORK/second" ]'
killed_at=$(now_ms)
kill -KILL "$FIRST"
wait "$FIRST" 2>/dev/null || true # reaped here, so bash reports nothing of it
kill -KILL "${first_child:-0}" 2>/dev/null || true # its command, orphaned by the SIGKILL
wait_lines "$WORK/second" $((TTL + 10)) || true
took=$(($(now_ms) - killed_at))
t2="$(cat "$WORK/second" 2>/dev/null || echo none)"
expect "${PROVIDER}_second_elected_after_the_ttl_with_a_higher_term" \
	"term '$t2' after $t1, $took ms after the kill; its stderr: $(tr '\n' ' ' <"$WORK/second.err")" \
	'[[ "$t2" =~ ^[0-9]+$ ]] && [ "$t2" -gt "$t1" ] && [ "$took" -ge $((TTL * 1000 / 2)) ] && [ "$took" -le $((TTL * 1000 + 8000)) ]'
rc=0; out="$(P leader --name "$E/b" 2>&1)" || rc=$?
expect "${PROVIDER}_leader_prints_the_new_leader" "exit $rc: $out" '[ "$rc" -eq 0 ] && [[ "$out" == "second term $t2"* ]]'

kill -TERM "$SECOND" # passed on to its command, which ends: pglease resigns
exit_of "$SECOND" 10
expect "${PROVIDER}_sigterm_ends_the_command_and_resigns" "exit $rc; stderr: $(cat "$WORK/second.err")" \
	'[ "$rc" = 143 ] && grep -q "resigned term $t2" "$WORK/second.err"'
sleep 2 # for the watchers to print "no leader"
kill -TERM "$WATCH" "$WATCH_JSON"
exit_of "$WATCH" 5
expect "${PROVIDER}_leader_watch_ends_on_sigterm_with_0" "exit $rc; stderr: $(cat "$WORK/watch.err")" '[ "$rc" = 0 ]'
exit_of "$WATCH_JSON" 5

# the text watch: first, maybe "no leader" (expired before the second took
# over), second, "no leader"; nothing else, in that order
seen="$(tr '\n' '|' <"$WORK/watch")"
expect "${PROVIDER}_leader_watch_prints_each_change_in_order" "printed: $seen" \
	'[[ "$seen" =~ ^first\ \"one\"\ term\ $t1[^|]*\|(no\ leader\|)?second\ term\ $t2[^|]*\|no\ leader\|$ ]]'
# the JSON watch: every line an object, the same changes, terms never lower
expect "${PROVIDER}_leader_watch_json_parses_in_order" "exit $rc; printed: $(tr '\n' '|' <"$WORK/watch.json")" \
	'[ "$rc" = 0 ] && python3 - "$WORK/watch.json" "$t1" "$t2" <<"PY"
import json, sys
views = [json.loads(line) for line in open(sys.argv[1])]
leaders = [(v["value"], v["term"]) for v in views if v["leader"]]
assert leaders == [("first \"one\"", int(sys.argv[2])), ("second", int(sys.argv[3]))], leaders
assert views[0]["leader"] and not views[-1]["leader"], views
terms = [v["term"] for v in views]
assert terms == sorted(terms), terms
PY'

# ---- --requeue: campaign again after the command exits ----------------------------
B elect --name "$E/c" --value again --ttl ${TTL}s --requeue -- sh -c 'echo "$PGLEASE_TERM" >>"$0"' "$WORK/requeue" \
	2>"$WORK/requeue.err" &
started
REQUEUE=$!
wait_lines "$WORK/requeue" 15 3 || true
kill -TERM "$REQUEUE"
exit_of "$REQUEUE" 5
terms="$(tr '\n' ' ' <"$WORK/requeue")"
expect "${PROVIDER}_requeue_campaigns_again_after_the_command_exits" "terms: $terms; stderr: $(tail -3 "$WORK/requeue.err")" \
	'[ "$(wc -l <"$WORK/requeue")" -ge 3 ] && sort -n -c "$WORK/requeue" && [ "$(sort -n -u "$WORK/requeue" | wc -l)" -eq "$(wc -l <"$WORK/requeue")" ]'
expect "${PROVIDER}_requeue_ends_on_sigterm" "still $rc after 5 s" '[ "$rc" != running ]'

# ---- --requeue after losing: frozen past the TTL, deposed, elected again -----------
B elect --name "$E/d" --value frozen --ttl ${TTL}s --grace 1s --requeue \
	-- sh -c 'echo "$PGLEASE_TERM" >>"$0"; exec sleep 60' "$WORK/frozen" 2>"$WORK/frozen.err" &
started
FROZEN=$!
wait_lines "$WORK/frozen" 10 || true
kill -STOP "$FROZEN"
B elect --name "$E/d" --value usurper --ttl ${TTL}s -- sh -c 'echo "$PGLEASE_TERM" >"$0"; sleep 2' "$WORK/usurper" \
	2>"$WORK/usurper.err" &
started
USURPER=$!
wait_lines "$WORK/usurper" $((TTL + 10)) || true
kill -CONT "$FROZEN"
exit_of "$USURPER" 15
wait_lines "$WORK/frozen" 15 2 || true
read -r -d '' f1 f2 <<<"$(tr '\n' ' ' <"$WORK/frozen")" || true
tu="$(cat "$WORK/usurper" 2>/dev/null || echo none)"
expect "${PROVIDER}_requeue_after_losing_is_elected_again_with_a_higher_term" \
	"frozen leader's terms '${f1:-} ${f2:-}', the usurper's '$tu' (exit $rc); stderr: $(tr '\n' ' ' <"$WORK/frozen.err")" \
	'[ "$rc" = 0 ] && [[ "$tu" =~ ^[0-9]+$ ]] && [ "$tu" -gt "${f1:-0}" ] && [ "${f2:-0}" -gt "$tu" ] && grep -q "lost term $f1" "$WORK/frozen.err"'
kill -TERM "$FROZEN"
exit_of "$FROZEN" 10

# ---- bad arguments: 64 and what is wrong, before any I/O ------------------------
bad() { # bad NAME WANTED ARGS... -- exit 64 and WANTED in the message
	local name="$1" wanted="$2" rc=0 out
	shift 2
	out="$("$PGLEASE" "$@" 2>&1)" || rc=$?
	expect "${PROVIDER}_$name" "exit $rc: $out" '[ "$rc" -eq 64 ] && [[ "$out" == *"$wanted"* ]]'
}
bad elect_without_name_exits_64 "--name is required" elect "${DSN[@]}" --value v -- true
bad elect_without_value_exits_64 "--value is required" elect "${DSN[@]}" --name "$E/x" -- true
bad elect_without_command_exits_64 "needs a command after --" elect "${DSN[@]}" --name "$E/x" --value v
bad elect_bad_ttl_exits_64 "not a duration" elect "${DSN[@]}" --name "$E/x" --value v --ttl soon -- true
bad elect_switch_with_a_value_exits_64 "takes no value" elect "${DSN[@]}" --name "$E/x" --value v --requeue=yes -- true
bad elect_value_too_long_exits_64 "value" elect "${DSN[@]}" --name "$E/x" --value "$(head -c 1025 /dev/zero | tr '\0' v)" -- true
bad leader_without_name_exits_64 "--name is required" leader "${DSN[@]}"
bad leader_unknown_flag_exits_64 "unknown option --follow" leader "${DSN[@]}" --name "$E/x" --follow
finish
