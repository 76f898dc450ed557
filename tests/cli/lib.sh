# lib.sh -- shared by the CLI tests of tests/cli/ (sourced, after
# scripts/lib/common.sh and work_dir: the servers it starts live in $WORK and
# are stopped at exit).
#
#   cli_binary TEST            PGLEASE: $PGLEASE_CLI, else build/client/pglease;
#                              a "not ok" line and exit 1 if it is missing
#   fixture_dsn TEST PROVIDER [DIR]   DSN: the pglease arguments that name
#                              PROVIDER's server --
#       postgres        the cluster of libpq's environment (the CTest fixture pg_preload)
#       redis           a redis-server of its own (scripts/redis.sh, a free port)
#       etcd DIR        the etcd member of the CTest fixture etcd_cli (its port in DIR/port)
#       zookeeper DIR   the ZooKeeper server of the fixture zookeeper_cli (its port in DIR/port)
#   own_server TEST PROVIDER   DSN for a server of the test's own: PostgreSQL a
#                              throwaway cluster on a Unix socket in $WORK
#                              (scripts/cluster.sh, preloaded, CREATE EXTENSION
#                              pg_lease; libpq's environment exported), Redis
#                              and etcd a server on a free port

cli_binary() {
	PGLEASE="${PGLEASE_CLI:-$ROOT/build/client/pglease}"
	[ -x "$PGLEASE" ] ||
		{ echo "not ok - $1: no $PGLEASE (cmake --build build/client --target pglease_cli)"; exit 1; }
}

fixture_dsn() {
	local test="$1" provider="$2" dir="${3:-}"
	case "$provider" in
	postgres)
		[ -n "${PGHOST:-}" ] ||
			{ echo "not ok - $test postgres: no PGHOST (run it through ctest: fixture pg_preload)"; exit 1; }
		DSN=() ;; # libpq's environment
	redis) own_server "$test" redis ;;
	etcd | zookeeper)
		[ -n "$dir" ] && [ -s "$dir/port" ] ||
			{ echo "not ok - $test $provider: no server in ${dir:-DIR} (its fixture, scripts/$provider.sh start DIR, did not run)"; exit 1; }
		DSN=(--dsn "$provider://127.0.0.1:$(cat "$dir/port")") ;;
	*) die "unknown provider $provider: postgres, redis, etcd DIR or zookeeper DIR" ;;
	esac
}

own_server() {
	local provider="$2"
	case "$provider" in
	postgres)
		on_exit 'PGLEASE_TEST_PORT=5432 "$ROOT/scripts/cluster.sh" stop "$WORK/pg" immediate >/dev/null 2>&1 || true'
		PGLEASE_TEST_PORT=5432 "$ROOT/scripts/cluster.sh" start "$WORK/pg" preload
		export PGHOST="$WORK/pg/sock" PGPORT=5432 PGUSER=postgres PGDATABASE=postgres
		unset PGSERVICE PGPASSWORD
		psql_q -c 'CREATE EXTENSION pg_lease'
		DSN=() ;; # libpq's environment, which the test's children inherit
	redis | etcd)
		on_exit '"$ROOT/scripts/'"$provider"'.sh" kill "$WORK/'"$provider"'" >/dev/null 2>&1 || true'
		DSN=(--dsn "$provider://$("$ROOT/scripts/$provider.sh" start "$WORK/$provider")") ;;
	*) die "$1: no server of its own for $provider" ;;
	esac
}
