#!/usr/bin/env bash
# leader_redis.sh -- `pglease leader` and `leader --watch` on Redis where its
# election keys are not what a campaign left (issue 36, items 8 and 9); a
# redis-server of its own without persistence (scripts/redis.sh, a free port).
#
# 8. A name that holds readers or permits (its lock key a sorted set, not the
#    lock's string): leader printed "internal: ... WRONGTYPE" and exited 70,
#    and a --watch ended on it, never showing the next leader.  Now it is
#    "no leader", exit 0, as on PostgreSQL, etcd and ZooKeeper; a watch stays
#    and prints the leader elected once the readers are gone.  A campaign
#    there waits for the readers (--wait: 75), and on permits is a mode
#    mismatch (LS003, exit 64), as docs/shared-leases.md says of any lock.
# 9. The server restarted without its data: terms start again at 1.  A watch
#    dropped every term below the last it had seen, so it printed "no leader"
#    and then nothing while the new leader led.  Now the election carries an
#    epoch (a new one when its term counter starts again): a term of another
#    epoch is shown even when lower, the watch says on stderr that the epoch
#    changed, and --json has the epoch.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
PGLEASE="${PGLEASE_CLI:-$ROOT/build/client/pglease}"
[ -x "$PGLEASE" ] || { echo "not ok - leader_redis: no $PGLEASE (cmake --build BUILD --target pglease_cli)"; exit 1; }
command -v python3 >/dev/null || { echo "not ok - leader_redis: no python3 (apt-get install python3)"; exit 1; }
work_dir pglease-cli-leader-redis
REDIS="$ROOT/scripts/redis.sh"
on_exit '"$REDIS" kill "$WORK/r" >/dev/null 2>&1 || true'
DSN="redis://$("$REDIS" start "$WORK/r")"
E="leader-redis/$$"
TTL=3 # seconds

P() { "$PGLEASE" "$1" --dsn "$DSN" "${@:2}"; }
# B -- P for a background start (`B ... &`): exec, so that $! is pglease's own
B() { exec "$PGLEASE" "$1" --dsn "$DSN" "${@:2}"; }
flat() { tr '\n' '|' <"$1" 2>/dev/null; }

# ---- 8. readers or permits on the name: no leader, and the watch goes on --------
R="$E/readers"
token="$(P acquire --resource "$R" --ttl 60s --shared --holder reader --reclaim 2>/dev/null)" || true
rc=0; out="$(P leader --name "$R" 2>&1)" || rc=$?
expect readers_are_no_leader "exit $rc: $out" '[ "$rc" -eq 0 ] && [ "$out" = "no leader" ]'
rc=0; out="$(P leader --name "$R" --json 2>&1)" || rc=$?
expect readers_are_no_leader_in_json "exit $rc: $out" \
	'[ "$rc" -eq 0 ] && python3 -c "import json,sys; assert json.loads(sys.argv[1])[\"leader\"] is False" "$out"'
rc=0; P elect --name "$R" --value v --wait 1s -- true 2>"$WORK/c.err" || rc=$?
expect a_campaign_waits_for_the_readers "exit $rc: $(flat "$WORK/c.err")" '[ "$rc" -eq 75 ]'

B leader --name "$R" --watch >"$WORK/w8" 2>"$WORK/w8.err" &
started
W8=$!
wait_line "$WORK/w8" '^no leader$' 10 || true
sleep 1.5 # observe meets the readers' key at every re-read (1 s)
expect watch_stays_beside_readers "$(alive "$W8" && echo running || echo exited); $(flat "$WORK/w8"); stderr: $(flat "$WORK/w8.err")" \
	'alive "$W8" && [ "$(flat "$WORK/w8")" = "no leader|" ]'
P release --resource "$R" --token "${token:-0}" --holder reader >/dev/null 2>&1 || true
B elect --name "$R" --value next --ttl ${TTL}s -- sh -c 'echo "$PGLEASE_TERM" >"$0"; exec sleep 60' "$WORK/t8" \
	2>"$WORK/e8.err" &
started
E8=$!
wait_line "$WORK/t8" . 10 || true
t8="$(cat "$WORK/t8" 2>/dev/null || echo none)"
wait_line "$WORK/w8" "^next term $t8" 5 || true
expect watch_shows_the_leader_after_the_readers "term $t8; printed: $(flat "$WORK/w8"); stderr: $(flat "$WORK/w8.err")" \
	'alive "$W8" && [[ "$(flat "$WORK/w8")" =~ ^no\ leader\|next\ term\ $t8\  ]]'

kill -TERM "$W8" 2>/dev/null || true

# the other way: a watch started on a leader that resigns, readers take the
# name, a new leader after them
B leader --name "$R" --watch >"$WORK/w8b" 2>"$WORK/w8b.err" &
started
W8=$!
wait_line "$WORK/w8b" "^next term $t8" 10 || true
kill -TERM "$E8" 2>/dev/null || true
wait_line "$WORK/w8b" '^no leader$' 5 || true
token="$(P acquire --resource "$R" --ttl 60s --shared --holder reader2 --reclaim 2>/dev/null)" || true
sleep 1.5
expect watch_stays_when_readers_take_the_name \
	"$(alive "$W8" && echo running || echo exited); printed: $(flat "$WORK/w8b"); stderr: $(flat "$WORK/w8b.err")" \
	'alive "$W8" && [[ "$(flat "$WORK/w8b")" =~ ^next\ term\ $t8\ [^|]*\|no\ leader\|$ ]]'
P release --resource "$R" --token "${token:-0}" --holder reader2 >/dev/null 2>&1 || true
B elect --name "$R" --value after --ttl ${TTL}s -- sh -c 'echo "$PGLEASE_TERM" >"$0"; exec sleep 60' "$WORK/t8b" \
	2>/dev/null &
started
wait_line "$WORK/t8b" . 10 || true
t8b="$(cat "$WORK/t8b" 2>/dev/null || echo none)"
wait_line "$WORK/w8b" "^after term $t8b" 5 || true
expect watch_shows_the_leader_after_the_second_readers "term $t8b; printed: $(flat "$WORK/w8b"); stderr: $(flat "$WORK/w8b.err")" \
	'alive "$W8" && grep -Eq "^after term $t8b" "$WORK/w8b"'
kill -TERM "$W8" 2>/dev/null || true

S="$E/permits"
P acquire --resource "$S" --ttl 60s --limit 2 --holder permit --reclaim >/dev/null 2>&1 || true
rc=0; out="$(P leader --name "$S" 2>&1)" || rc=$?
expect permits_are_no_leader "exit $rc: $out" '[ "$rc" -eq 0 ] && [ "$out" = "no leader" ]'
rc=0; P elect --name "$S" --value v --wait 1s -- true 2>"$WORK/s.err" || rc=$?
expect a_campaign_on_permits_is_a_mismatch "exit $rc: $(flat "$WORK/s.err")" \
	'[ "$rc" -eq 64 ] && grep -q "LS003" "$WORK/s.err" && grep -q "permits" "$WORK/s.err"'

# ---- 9. a restart without the data: the new leader shown, term 1 again ----------
N="$E/restart"
P elect --name "$N" --value a1 -- true 2>/dev/null || true
P elect --name "$N" --value a2 -- true 2>/dev/null || true
B elect --name "$N" --value a3 --ttl ${TTL}s -- sh -c 'echo "$PGLEASE_TERM" >"$0"; exec sleep 600' "$WORK/t9a" \
	2>"$WORK/e9a.err" &
started
wait_line "$WORK/t9a" . 10 || true
t9a="$(cat "$WORK/t9a" 2>/dev/null || echo none)"
B leader --name "$N" --watch >"$WORK/w9" 2>"$WORK/w9.err" &
started
W9=$!
B leader --name "$N" --watch --json >"$WORK/w9.json" 2>"$WORK/w9.json.err" &
started
W9J=$!
wait_line "$WORK/w9" "^a3 term $t9a" 10 && wait_line "$WORK/w9.json" '"a3"' 10 || true
expect the_first_leader_is_watched "term $t9a; printed: $(flat "$WORK/w9")" '[ "$t9a" -ge 3 ]'

"$REDIS" kill "$WORK/r" >/dev/null
"$REDIS" start "$WORK/r" >/dev/null
expect server_back_on_its_port "it came back as $(cat "$WORK/r/port")" '[ "$DSN" = "redis://127.0.0.1:$(cat "$WORK/r/port")" ]'
B elect --name "$N" --value b --ttl ${TTL}s -- sh -c 'echo "$PGLEASE_TERM" >"$0"; exec sleep 600' "$WORK/t9b" \
	2>"$WORK/e9b.err" &
started
wait_line "$WORK/t9b" . 10 || true
elected=$(now_ms)
t9b="$(cat "$WORK/t9b" 2>/dev/null || echo none)"
expect terms_start_again_after_the_restart "term '$t9b' after $t9a" '[ "$t9b" = 1 ]'
wait_line "$WORK/w9" "^b term 1( |$)" 5 || true
took=$(($(now_ms) - elected))
expect watch_shows_the_new_leader_of_term_1 \
	"$took ms after its election (at most 3000); printed: $(flat "$WORK/w9"); stderr: $(flat "$WORK/w9.err")" \
	'alive "$W9" && grep -Eq "^b term 1( |$)" "$WORK/w9" && [ "$took" -le 3000 ]'
! grep -Eq "^b term 1( |$)" "$WORK/w9" || echo "# the watch showed the new leader $took ms after its election"
expect watch_says_the_epoch_changed "stderr: $(flat "$WORK/w9.err")" 'grep -q "epoch" "$WORK/w9.err"'
wait_line "$WORK/w9.json" '"b"' 3 || true
expect watch_json_shows_the_new_epoch "printed: $(flat "$WORK/w9.json")" 'python3 - "$WORK/w9.json" <<"PY"
import json, sys
views = [json.loads(line) for line in open(sys.argv[1])]
leaders = [v for v in views if v["leader"]]
assert [(v["value"], v["term"]) for v in leaders][-1] == ("b", 1), views
assert leaders[0]["value"] == "a3" and leaders[0]["epoch"] != leaders[-1]["epoch"], views
PY'
rc=0; out="$(P leader --name "$N" 2>&1)" || rc=$?
expect leader_shows_the_new_leader "exit $rc: $out" '[ "$rc" -eq 0 ] && [[ "$out" == "b term 1 "* ]]'
finish
