#!/usr/bin/env bash
# requeue_outage.sh redis|etcd -- `pglease elect --requeue` outlasts a short
# outage of its server (issue 36, item 4).
#
# The server is the test's own (scripts/redis.sh with persist: the term
# counter survives a restart, as a production server's would; scripts/etcd.sh:
# its data directory does): a leader elected with --requeue, then the server
# stopped for 2 s and started again on the same port.  The leadership is lost
# while the server is away; before, the next campaign failed with
# "unavailable" and pglease exited 69, nobody campaigning once the server was
# back.  Now pglease is still running, campaigns again through the outage and
# leads with a higher term within a few seconds of the restart (its pauses
# between campaigns grow to 2 s at most; an etcd lease also outlives a
# restart by its TTL).  A failure that will not pass (an invalid value)
# still ends it, exit 64.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
[ $# -eq 1 ] || die "usage: requeue_outage.sh redis|etcd"
PROVIDER="$1"
PGLEASE="${PGLEASE_CLI:-$ROOT/build/client/pglease}"
[ -x "$PGLEASE" ] || { echo "not ok - requeue_outage $PROVIDER: no $PGLEASE"; exit 1; }
work_dir pglease-cli-requeue
TTL=2 # seconds (etcd leases are whole seconds)

case "$PROVIDER" in
redis)
	SERVER="$ROOT/scripts/redis.sh"
	MODE=persist ;;
etcd)
	SERVER="$ROOT/scripts/etcd.sh"
	MODE="" ;;
*) die "unknown provider $PROVIDER: redis or etcd" ;;
esac
on_exit '"$SERVER" kill "$WORK/server" >/dev/null 2>&1 || true'
address="$("$SERVER" start "$WORK/server" $MODE)"
DSN="$PROVIDER://$address"

"$PGLEASE" elect --dsn "$DSN" --name "requeue/$PROVIDER/$$" --value v --ttl ${TTL}s --grace 1s --requeue \
	-- sh -c 'echo "$PGLEASE_TERM" >>"$0"; exec sleep 600' "$WORK/terms" 2>"$WORK/elect.err" &
ELECT=$!
on_exit 'kill -TERM "$ELECT" 2>/dev/null || true; wait_gone "$ELECT" 5 || kill -KILL "$ELECT" 2>/dev/null || true'

# wait_for_lines FILE N SECONDS -- until FILE has N lines (not after
# pglease has exited)
wait_for_lines() {
	local i
	for ((i = 0; i < $3 * 20; i++)); do
		[ -f "$1" ] && [ "$(wc -l <"$1")" -ge "$2" ] && return 0
		alive "$ELECT" || return 1
		sleep 0.05
	done
	return 1
}

wait_for_lines "$WORK/terms" 1 15 || true
expect "${PROVIDER}_requeue_candidate_is_elected" "no term; stderr: $(tr '\n' ' ' <"$WORK/elect.err")" \
	'[ -s "$WORK/terms" ]'

"$SERVER" stop "$WORK/server"
sleep 2
"$SERVER" start "$WORK/server" $MODE >/dev/null
restarted=$(now_ms)
expect "${PROVIDER}_server_back_on_its_port" "it came back as $(cat "$WORK/server/port")" \
	'[ "$DSN" = "$PROVIDER://127.0.0.1:$(cat "$WORK/server/port")" ]'

wait_for_lines "$WORK/terms" 2 $((TTL + 15)) || true
took=$(($(now_ms) - restarted))
read -r -d '' t1 t2 <<<"$(tr '\n' ' ' <"$WORK/terms")" || true
expect "${PROVIDER}_requeue_outlasts_a_2s_outage" \
	"pglease $(alive "$ELECT" && echo running || echo exited); terms '${t1:-} ${t2:-}'; stderr: $(tr '\n' ' ' <"$WORK/elect.err")" \
	'alive "$ELECT" && grep -q "lost term $t1" "$WORK/elect.err"'
expect "${PROVIDER}_requeue_leads_again_with_a_higher_term_soon_after_the_restart" \
	"terms '${t1:-} ${t2:-}', $took ms after the restart (at most $((TTL + 6)) s)" \
	'[[ "${t2:-}" =~ ^[0-9]+$ ]] && [ "$t2" -gt "$t1" ] && [ "$took" -le $(((TTL + 6) * 1000)) ]'
[ -z "${t2:-}" ] || echo "# $PROVIDER: elected again $took ms after the restart"

# a failure that will not pass still ends --requeue: a value over 1024 bytes
rc=0
timeout 10 "$PGLEASE" elect --dsn "$DSN" --name "requeue/$PROVIDER/$$/bad" --value "$(head -c 1025 /dev/zero | tr '\0' v)" \
	--requeue -- true 2>"$WORK/bad.err" || rc=$?
expect "${PROVIDER}_requeue_ends_on_an_invalid_argument" "exit $rc: $(tr '\n' ' ' <"$WORK/bad.err")" '[ "$rc" -eq 64 ]'
finish
