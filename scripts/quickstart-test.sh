#!/usr/bin/env bash
# quickstart-test.sh BUILD -- the README's quick start, as a user runs it:
# the client of BUILD (the build directory of client/) installed into a
# prefix of its own, examples/quickstart/ built from that package with CMake
# (find_package) and with pkg-config (g++ and pkg-config's flags), and each
# program run:
#   postgres.cpp against the test cluster (the pg_preload fixture's PG*
#     environment): fenced rows in table reports, tokens increasing;
#   connect.cpp against memory:, that cluster, and the Redis, etcd and
#     ZooKeeper servers `make servers` starts (scripts/local.sh, on free
#     ports); then `make db`, run twice (the same conninfo), the PostgreSQL
#     program against it, and `make stop`.
# Run by ctest (the test "quickstart", tests/CMakeLists.txt).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
[ $# -eq 1 ] && [ -f "$1/CMakeCache.txt" ] || die "usage: quickstart-test.sh BUILD (a configured build of client/)"
BUILD="$(cd "$1" && pwd)"
[ -n "${PGHOST:-}" ] && [ -n "${PGDATABASE:-}" ] ||
	die "PGHOST and PGDATABASE unset: ctest runs this with the pg_preload fixture (ctest -R quickstart)"
SRC="$ROOT/examples/quickstart"
work_dir pglease-quickstart
PREFIX="$WORK/prefix"
export PGLEASE_LOCAL="$WORK/local" # where make db and make servers keep their servers
on_exit 'make -s --no-print-directory -C "$ROOT" stop >/dev/null 2>&1'

# ---- the package, and the programs built from it -----------------------------

install_and_build() {
	cmake --install "$BUILD" --prefix "$PREFIX" >"$WORK/install.log"
	pcdir="$(dirname "$(find "$PREFIX" -name pglease.pc | head -1)")"
	cmake -S "$SRC" -B "$WORK/cmake" -DCMAKE_PREFIX_PATH="$PREFIX" >"$WORK/cmake.log" 2>&1 &&
		cmake --build "$WORK/cmake" -j2 >>"$WORK/cmake.log" 2>&1 || cat "$WORK/cmake.log"
	expect built_with_cmake_from_the_installed_package "see the CMake output above" \
		'[ -x "$WORK/cmake/quickstart_postgres" ] && [ -x "$WORK/cmake/quickstart_connect" ] &&
		grep -qF "pglease_DIR:PATH=$PREFIX/" "$WORK/cmake/CMakeCache.txt"'
	# the README's g++ lines; --define-prefix: the .pc files name /usr/local,
	# this copy is in $PREFIX
	mkdir -p "$WORK/pc"
	local pc=(env PKG_CONFIG_PATH="$pcdir" pkg-config --define-prefix --cflags --libs)
	pg_flags="$("${pc[@]}" pglease)" &&
		any_flags="$("${pc[@]}" pglease pglease-redis pglease-etcd pglease-zookeeper)" &&
		g++ -std=c++17 "$SRC/postgres.cpp" $pg_flags -o "$WORK/pc/quickstart_postgres" &&
		g++ -std=c++17 "$SRC/connect.cpp" $any_flags -o "$WORK/pc/quickstart_connect" || true
	expect built_with_pkg_config_from_the_installed_package "flags: ${any_flags:-none}" \
		'[ -x "$WORK/pc/quickstart_postgres" ] && [ -x "$WORK/pc/quickstart_connect" ] &&
		[[ "$any_flags" == *"-I$PREFIX/include"* ]]'
}

# run NAME PROGRAM ARG -- OUT: what it printed, RC: its exit status
run() {
	RC=0
	OUT="$("$2" "$3" 2>"$WORK/stderr")" || RC=$?
	echo "$1: $(tr '\n' '|' <<<"$OUT") (exit $RC)$( [ ! -s "$WORK/stderr" ] || echo "; stderr: $(cat "$WORK/stderr")")"
}

# ---- the PostgreSQL program ------------------------------------------------

check_postgres() {
	local conninfo="host=$PGHOST port=$PGPORT user=$PGUSER dbname=$PGDATABASE" first second
	psql_q -c "DROP TABLE IF EXISTS reports"
	run "postgres, CMake build" "$WORK/cmake/quickstart_postgres" "$conninfo"
	first="$(sed -n 's/^token \([0-9]*\): row written to table reports$/\1/p' <<<"$OUT")"
	run "postgres, pkg-config build" "$WORK/pc/quickstart_postgres" "$conninfo"
	second="$(sed -n 's/^token \([0-9]*\): row written to table reports$/\1/p' <<<"$OUT")"
	expect postgres_program_writes_fenced_rows_with_increasing_tokens "tokens '$first' then '$second'" \
		'[ -n "$first" ] && [ -n "$second" ] && [ "$second" -gt "$first" ]'
	expect postgres_program_rows_are_in_the_table "table reports: $(psql_q -c 'TABLE reports' 2>&1 | paste -sd' ')" \
		'[ "$(psql_q -c "SELECT string_agg(token::text, '"' '"' ORDER BY token) FROM reports")" = "$first $second" ]'
	# the same resource through connect(conninfo): the next token
	check_connect postgresql "$conninfo" PostgreSQL "$second"
}

# check_connect NAME URL PROVIDER [AFTER] -- both builds of connect.cpp take
# the lease in turn: each writes three parts with its token, the second's
# token is higher (and the first's is above AFTER)
check_connect() {
	local name="$1" url="$2" provider="$3" after="${4:-0}" first second
	run "connect, CMake build, $url" "$WORK/cmake/quickstart_connect" "$url"
	first="$(sed -n "s/^$provider: token \([0-9]*\)\$/\1/p" <<<"$OUT")"
	local parts="$(grep -c "^write part-[123] with token ${first:-x}\$" <<<"$OUT" || true)"
	run "connect, pkg-config build, $url" "$WORK/pc/quickstart_connect" "$url"
	second="$(sed -n "s/^$provider: token \([0-9]*\)\$/\1/p" <<<"$OUT")"
	if [ "$name" = memory ]; then
		# each process has its own lock table: both get the first token
		expect connect_program_memory_gives_token_1 "tokens '$first' and '$second', $parts parts" \
			'[ "$first" = 1 ] && [ "$second" = 1 ] && [ "$parts" = 3 ]'
		return
	fi
	expect "connect_program_${name}_tokens_increase" "tokens '$first' then '$second' (after $after), $parts parts" \
		'[ -n "$first" ] && [ -n "$second" ] && [ "$first" -gt "$after" ] && [ "$second" -gt "$first" ] && [ "$parts" = 3 ]'
}

check_usage() {
	local program
	for program in quickstart_postgres quickstart_connect; do
		RC=0
		"$WORK/cmake/$program" >/dev/null 2>"$WORK/stderr" || RC=$?
		expect "${program}_without_argument_prints_usage" "exit $RC, stderr: $(cat "$WORK/stderr")" \
			'[ "$RC" = 64 ] && grep -q "^usage: .*$program" "$WORK/stderr"'
	done
}

# ---- make servers, make db, make stop ----------------------------------------

# url_of OUTPUT LABEL -- the address a make db / make servers output gives for LABEL
url_of() { sed -n "s/^  $2: *//p" <<<"$1"; }

check_local_servers() {
	local out
	out="$(make -s --no-print-directory -C "$ROOT" servers 2>&1)" || true
	echo "$out"
	check_connect redis "$(url_of "$out" redis)" Redis
	check_connect etcd "$(url_of "$out" etcd)" etcd
	check_connect zookeeper "$(url_of "$out" zookeeper)" ZooKeeper
}

check_local_db() {
	local out again conninfo
	out="$(make -s --no-print-directory -C "$ROOT" db 2>&1)" || true
	echo "$out"
	conninfo="$(url_of "$out" conninfo)"
	run "postgres, CMake build, make db" "$WORK/cmake/quickstart_postgres" "$conninfo"
	expect make_db_serves_the_postgres_program "conninfo '$conninfo'" \
		'[ -n "$conninfo" ] && [ "$RC" = 0 ] && grep -q "^token 1: row written" <<<"$OUT"'
	again="$(make -s --no-print-directory -C "$ROOT" db 2>&1)" || true
	expect make_db_again_prints_the_same_conninfo "second run: $again" \
		'[ "$(url_of "$again" conninfo)" = "$conninfo" ]'
	out="$(make -s --no-print-directory -C "$ROOT" stop 2>&1)" || true
	echo "$out"
	run "postgres, CMake build, after make stop" "$WORK/cmake/quickstart_postgres" "$conninfo"
	expect make_stop_stops_every_server "make stop said: $out" \
		'[ "$out" = "stopped: PostgreSQL redis etcd zookeeper (data kept in $PGLEASE_LOCAL)" ] && [ "$RC" = 1 ] &&
		! pgrep -f "$PGLEASE_LOCAL/" >/dev/null'
}

install_and_build
check_usage
check_postgres
check_connect memory memory: in-memory
check_local_servers
check_local_db
finish
