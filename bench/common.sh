# bench/common.sh -- the helpers of bench/run.sh (sourced, not run).
#
# The caller sets BENCH_DIR, REPO, sources scripts/lib/common.sh (die, psql_q)
# and defines log() first.
# Functions:
#   bench_prerequisites   check what the run needs (installing nothing), build the
#                         client libraries and the driver
#   cpu_busy_pct SECONDS  whole-machine CPU busy % over that many seconds
#   measure_fdatasync     fdatasync latency of one 8 kB write (pg_test_fsync -s 2)
#   sql DIR PORT DB ARGS  psql on a scripts/cluster.sh cluster
#   conninfo DIR PORT     its libpq connection string (without dbname)
#   fill_lease, fill_handmade, fill_floor   the tables the benchmark works on

# bench_prerequisites: what the benchmark needs, checked, never installed: PostgreSQL 15,
# redis, etcd, ZooKeeper, the client's libraries and g++ (`make deps` installs them), and
# this checkout's extension installed as built (`make install`); a run that finds
# something missing stops, saying which and how to get it.  Then it builds the client
# libraries (build/client, only the library targets) and the driver (the CMake target
# pglease_bench of tests/CMakeLists.txt: build/client/pglease_bench).
bench_prerequisites() {
	local c missing=""
	for c in pg_config redis-server redis-cli etcd java g++ cmake curl; do
		command -v "$c" >/dev/null 2>&1 || missing="$missing $c"
	done
	# curl's header is under the multiarch directory on Debian (libcurl4-openssl-dev)
	for c in zookeeper/zookeeper.h hiredis/hiredis.h pqxx/pqxx; do
		[ -e "/usr/include/$c" ] || missing="$missing $c"
	done
	local inc=/usr/include hdr=curl/curl.h
	compgen -G "$inc/*/$hdr" >/dev/null || [ -e "$inc/$hdr" ] || missing="$missing $hdr"
	[ -e /usr/share/java/zookeeper.jar ] || missing="$missing java/zookeeper.jar"
	[ -z "$missing" ] ||
		die "missing:$missing. Install them with 'make deps' (as root: scripts/install-deps.sh), then run again"
	PG_BINDIR="$(pg_config --bindir)"
	PSQL="$PG_BINDIR/psql"
	[ -x "$PSQL" ] || die "psql not found in $PG_BINDIR: install postgresql-client-15 ('make deps')"
	CLUSTER="$REPO/scripts/cluster.sh"
	[ -x "$CLUSTER" ] || die "$CLUSTER not found or not executable"

	# measure this checkout's extension: build it, and stop when what is installed differs
	# (a stale installation would be measured otherwise); installing is 'make install'
	local script differs=""
	make -s -C "$REPO" all >/dev/null || die "building the extension failed"
	cmp -s "$REPO/pg_lease.so" "$(pg_config --pkglibdir)/pg_lease.so" || differs="$differs pg_lease.so"
	# the control file and every script (one base, the upgrade chain)
	for script in "$REPO/pg_lease.control" "$REPO"/extension/pg_lease--*.sql; do
		cmp -s "$script" "$(pg_config --sharedir)/extension/${script##*/}" || differs="$differs ${script##*/}"
	done
	[ -z "$differs" ] ||
		die "the installed pg_lease ($(pg_config --pkglibdir)) differs from this checkout's or is missing:$differs." \
			"Install it with 'make install' (as root, or sudo) in $REPO, then run again"

	# the client libraries (every provider) and the driver linked against them
	local lib="$REPO/build/client"
	cmake -S "$REPO/client" -B "$lib" >/dev/null || die "cmake of client/ failed"
	log "building the client libraries in $lib"
	cmake --build "$lib" -j2 --target pglease_bench >/dev/null ||
		die "building the client libraries and the benchmark driver failed"
	DRIVER="$lib/pglease_bench"
}

cpu_busy_pct() {
	local a b
	a="$(head -1 /proc/stat)"
	sleep "$1"
	b="$(head -1 /proc/stat)"
	awk -v a="$a" -v b="$b" 'BEGIN {
		split(a, x); split(b, y)
		for (i = 2; i <= 9; i++) { t += y[i] - x[i] }
		idle = (y[5] - x[5]) + (y[6] - x[6])
		printf "%.0f", (t > 0) ? 100 * (t - idle) / t : 0 }'
}

# Prints "N ops/s, M µs/op".  pg_test_fsync is stopped once it has printed the
# fdatasync line of its first section: the rest would take half a minute.
measure_fdatasync() {
	local tool="$PG_BINDIR/pg_test_fsync" file out pid result="" _
	[ -x "$tool" ] || die "pg_test_fsync not found in $PG_BINDIR: install postgresql-15"
	file="$(mktemp /tmp/pglease-bench-fsync.XXXXXX)"
	out="$(mktemp /tmp/pglease-bench-fsync-out.XXXXXX)"
	"$tool" -s 2 -f "$file" >"$out" 2>&1 &
	pid=$!
	for _ in $(seq 1 200); do
		result="$(awk '/one 8kB write/ { f = 1 }
			f && $1 == "fdatasync" && $3 == "ops/sec" { print $2 " ops/s, " $4 " µs/op"; exit }' "$out")"
		[ -n "$result" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -f "$file"
	if [ -z "$result" ]; then
		cat "$out" >&2
		rm -f "$out"
		die "pg_test_fsync printed no fdatasync result"
	fi
	rm -f "$out"
	echo "$result"
}

sql() {
	local dir="$1" port="$2" db="$3"
	shift 3
	PGOPTIONS='-c client_min_messages=warning' psql_q -h "$dir/sock" -p "$port" -U postgres -d "$db" "$@"
}

conninfo() { echo "host=$1/sock port=$2 user=postgres"; }

# fill_lease DIR PORT DB PREFIX N: N released grants, written directly as
# superuser (an acquire per row would take minutes for 1M); the token sequence
# is then set past the largest token, and the 'hot' row is made through the
# API, which checks that.
fill_lease() {
	sql "$1" "$2" "$3" -v prefix="$4" -v n="$5" <<'EOF'
CREATE EXTENSION IF NOT EXISTS pg_lease;
INSERT INTO lease.grants (resource, token, expires_at, granted_at, renewed_at, owner, released, holder)
SELECT :'prefix' || i, i, now(), now(), now(), 'postgres'::regrole::oid, true, 'bench'
  FROM generate_series(1, :n) i;
SELECT setval('lease.token_seq', (SELECT max(token) FROM lease.grants)) \g /dev/null
SELECT lease.release('hot', lease.acquire('hot', '30 s')) \g /dev/null
VACUUM ANALYZE lease.grants;
EOF
}

# fill_handmade DIR PORT DB PREFIX N: the table users write themselves, N released rows
fill_handmade() {
	sql "$1" "$2" "$3" -v prefix="$4" -v n="$5" <<'EOF'
CREATE SEQUENCE handmade_seq;
CREATE TABLE handmade_lease (
	resource   text PRIMARY KEY,
	token      bigint NOT NULL,
	holder     text NOT NULL,
	expires_at timestamptz NOT NULL
);
INSERT INTO handmade_lease
SELECT :'prefix' || i, nextval('handmade_seq'), 'bench', now() FROM generate_series(1, :n) i;
INSERT INTO handmade_lease VALUES ('hot', nextval('handmade_seq'), 'bench', now());
VACUUM ANALYZE handmade_lease;
EOF
}

# fill_floor DIR PORT DB: one row per client for the durable floor
fill_floor() {
	sql "$1" "$2" "$3" -c "CREATE TABLE bench_floor (id int PRIMARY KEY, n bigint NOT NULL)" \
		-c "INSERT INTO bench_floor SELECT i, 0 FROM generate_series(0, 999) i"
}
