#!/usr/bin/env bash
# child_environment.sh postgres|redis -- the command of `pglease run` and
# `pglease elect` gets its lease, not pglease's credentials (issue 36,
# item 10).
#
# pglease reads its DSN from --dsn, --dsn-file or PGLEASE_DSN.  Before, a DSN
# given as PGLEASE_DSN went on into the command's environment, password and
# all.  Here the DSN holds a password ("...-secret") and comes as
# PGLEASE_DSN: the command's environment (`env`) has PGLEASE_TOKEN (run) or
# PGLEASE_TERM (elect), no PGLEASE_DSN and nowhere the password.
#
# The server is the test's own, with a password: PostgreSQL a throwaway
# cluster on a Unix socket (scripts/cluster.sh; pglease_password_user logs in
# with SCRAM there), Redis a redis-server with requirepass on a free port.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
[ $# -eq 1 ] || die "usage: child_environment.sh postgres|redis"
PROVIDER="$1"
PGLEASE="${PGLEASE_CLI:-$ROOT/build/client/pglease}"
[ -x "$PGLEASE" ] || { echo "not ok - child_environment $PROVIDER: no $PGLEASE"; exit 1; }
work_dir pglease-cli-childenv
PW="Pw$RANDOM$RANDOM-secret" # no line of the commands' output may hold it

case "$PROVIDER" in
postgres)
	on_exit 'PGLEASE_TEST_PORT=5432 "$ROOT/scripts/cluster.sh" stop "$WORK/pg" immediate >/dev/null 2>&1 || true'
	PGLEASE_TEST_PORT=5432 "$ROOT/scripts/cluster.sh" start "$WORK/pg" preload
	PGHOST="$WORK/pg/sock" PGPORT=5432 PGUSER=postgres PGDATABASE=postgres \
		psql_q -c 'CREATE EXTENSION pg_lease' -c "CREATE ROLE pglease_password_user LOGIN PASSWORD '$PW'"
	# no libpq variable to fall back on: the DSN alone reaches the server
	unset PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGPASSWORD PGSERVICE
	URL="postgresql://pglease_password_user:$PW@/postgres?host=$WORK/pg/sock&port=5432" ;;
redis)
	on_exit '"$ROOT/scripts/redis.sh" kill "$WORK/r" >/dev/null 2>&1 || true'
	URL="redis://:$PW@$("$ROOT/scripts/redis.sh" start "$WORK/r" "requirepass=$PW")" ;;
*) die "unknown provider $PROVIDER: postgres or redis" ;;
esac

# environment_of NAME SUBCOMMAND ARGS... -- the command `env` under pglease,
# its DSN in PGLEASE_DSN; output in $WORK/NAME.env, exit code in rc
environment_of() {
	local name="$1"
	shift
	rc=0
	PGLEASE_DSN="$URL" "$PGLEASE" "$@" -- env >"$WORK/$name.env" 2>"$WORK/$name.err" || rc=$?
}

for cmd in run elect; do
	if [ "$cmd" = run ]; then
		environment_of run run --resource "childenv/$$" --ttl 10s
		lease=PGLEASE_TOKEN
	else
		environment_of elect elect --name "childenv/$$" --value v --ttl 10s
		lease=PGLEASE_TERM
	fi
	expect "${PROVIDER}_${cmd}_command_gets_its_${lease,,}" \
		"exit $rc; stderr: $(tr '\n' ' ' <"$WORK/$cmd.err"); $lease: $(grep "^$lease=" "$WORK/$cmd.env" || echo none)" \
		'[ "$rc" -eq 0 ] && grep -q "^$lease=[1-9]" "$WORK/$cmd.env"'
	expect "${PROVIDER}_${cmd}_command_gets_no_pglease_dsn" "$(grep -c "^PGLEASE_DSN=" "$WORK/$cmd.env") PGLEASE_DSN line(s)" \
		'! grep -q "^PGLEASE_DSN=" "$WORK/$cmd.env"'
	expect "${PROVIDER}_${cmd}_command_environment_holds_no_password" \
		"the variables that hold it: $(grep -F -- "$PW" "$WORK/$cmd.env" | cut -d= -f1 | tr '\n' ' ')" \
		'! grep -q -F -- "$PW" "$WORK/$cmd.env" && ! grep -q -F -- "$PW" "$WORK/$cmd.err"'
done
finish
