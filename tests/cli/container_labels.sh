#!/usr/bin/env bash
# container_labels.sh postgres|redis -- two containers of one host name never
# both run (issue 36, item 2).
#
# Each container is `unshare --pid --uts --fork --mount-proc` with its host
# name set to "box", and pglease exec'd as its PID 1: host name and PID are
# the same in both, which is all the old default holder label
# (pglease@HOST:PID:N:K) was made of, so the second took the first's grant,
# the same token, and both ran.  Here `pglease run --wait 0s` on one resource
# and `pglease elect --wait 0s` on one election each run in one box, and
# while their commands run, again in a second box: exactly one of each pair
# runs its command (exit 0), the other is refused (exit 75).
#
# The server is the test's own: PostgreSQL a throwaway cluster on a Unix
# socket in the test's directory (scripts/cluster.sh, preloaded, CREATE
# EXTENSION pg_lease), Redis a redis-server on a free port (scripts/redis.sh).
# unshare needs root (CAP_SYS_ADMIN): without it the test fails, it does not
# skip.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
[ $# -eq 1 ] || die "usage: container_labels.sh postgres|redis"
PROVIDER="$1"
source "$ROOT/tests/cli/lib.sh"
cli_binary "container_labels $PROVIDER"
command -v unshare >/dev/null || { echo "not ok - container_labels $PROVIDER: no unshare (util-linux)"; exit 1; }
unshare --pid --uts --fork --mount-proc true 2>/dev/null ||
	{ echo "not ok - container_labels $PROVIDER: unshare --pid --uts --mount-proc fails (it needs root)"; exit 1; }
work_dir pglease-cli-labels

case "$PROVIDER" in
postgres | redis) own_server container_labels "$PROVIDER" ;; # the containers inherit libpq's environment
*) die "unknown provider $PROVIDER: postgres or redis" ;;
esac

# in_box COMMAND... -- COMMAND as PID 1 of a new PID and UTS namespace whose
# host name is "box" (a container of that name)
in_box() { unshare --pid --uts --fork --mount-proc sh -c 'hostname box && exec "$@"' box "$@"; }

# box NAME SUBCOMMAND ARGS... -- the pglease command in a box, in the
# background; its command appends "PID-in-box TOKEN" to $WORK/NAME.ran, and
# pglease's exit code goes to $WORK/NAME.rc
box() {
	local name="$1"
	shift
	(
		rc=0
		in_box "$PGLEASE" "$1" "${DSN[@]}" "${@:2}" -- sh -c 'echo "$$ ${PGLEASE_TOKEN:-}${PGLEASE_TERM:-}" >>"$0"; sleep 5' \
			"$WORK/$name.ran" 2>>"$WORK/$name.err" || rc=$?
		echo "$rc" >>"$WORK/$name.rc"
	) &
}

# The first box of each pair runs its command (5 s); the second box starts
# while it does.  Run and elect side by side, so the test takes about 5 s.
run=(run --resource "labels/run/$PROVIDER" --wait 0s --ttl 30s)
elect=(elect --name "labels/elect/$PROVIDER" --value box --wait 0s --ttl 30s)
box run "${run[@]}"
box elect "${elect[@]}"
wait_file "$WORK/run.ran" 10 || true
wait_file "$WORK/elect.ran" 10 || true
box run "${run[@]}"
box elect "${elect[@]}"
wait

for cmd in run elect; do
	ran="$(tr '\n' '|' <"$WORK/$cmd.ran" 2>/dev/null || true)"
	codes="$(sort -n "$WORK/$cmd.rc" | tr '\n' ' ')"
	expect "${PROVIDER}_${cmd}_in_two_containers_of_one_hostname_runs_once" \
		"the commands that ran (pid in box, token): '$ran'; exit codes: $codes; stderr: $(tr '\n' ' ' <"$WORK/$cmd.err")" \
		'[ "$ran" = "${ran%%|*}|" ] && [ -n "${ran%%|*}" ] && [ "$codes" = "0 75 " ]'
done
finish
