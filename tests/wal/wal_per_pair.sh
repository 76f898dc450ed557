#!/usr/bin/env bash
# wal_per_pair.sh MODE [CLIENT_DRIVER] -- WAL written per uncontended
# acquire+release pair (issue 38): at most 6 records and 450 bytes, on a
# cluster of its own (MODE preload or nopreload), so no other test's WAL is
# counted.  By SQL (pgbench), and, given CLIENT_DRIVER (wal_client_pairs,
# tests/wal/wal_client_pairs.cpp), through the C++ client too: a Lease's
# release, and the token-level release naming the holder (the CLI's).
#
# The table is as a long-lived one is: 20,000 released locks inserted at the
# table's fillfactor (as grants of new resources are), each page full to it, so
# that every new row version crosses the point where PostgreSQL prunes a page
# on access; then N pairs on random resources, each statement its own
# transaction as a client sends them, measured by pg_current_wal_insert_lsn
# and pg_waldump --stats=record (the records by type are printed).  No
# checkpoint runs while it measures (checkpoint_timeout 1 h): its full-page
# images would be the checkpoint's cost, not the pair's.
#
# Settings: WAL_PAIRS (default 1500), WAL_MAX_RECORDS (6), WAL_MAX_BYTES (450).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
MODE="${1:?usage: wal_per_pair.sh preload|nopreload [CLIENT_DRIVER]}"
DRIVER="${2:-}"
[ -z "$DRIVER" ] || [ -x "$DRIVER" ] || die "$DRIVER not found: build the CMake target wal_client_pairs"
PAIRS="${WAL_PAIRS:-1500}" MAX_RECORDS="${WAL_MAX_RECORDS:-6}" MAX_BYTES="${WAL_MAX_BYTES:-450}"
NRES=20000

command -v pg_config >/dev/null 2>&1 || die "pg_config not found: run 'make deps' (postgresql-server-dev-15)"
BIN="$(pg_config --bindir)"
for tool in pgbench psql pg_waldump; do
	[ -x "$BIN/$tool" ] || die "$tool not found in $BIN: run 'make deps' (postgresql-15)"
done
work_dir pglease-wal
on_exit '"$ROOT/scripts/cluster.sh" stop "$WORK/pg" immediate >/dev/null 2>&1 || true'
"$ROOT/scripts/cluster.sh" start "$WORK/pg" "$MODE" >/dev/null
eval "$("$ROOT/scripts/cluster.sh" env "$WORK/pg")"
export PGHOST PGPORT PGUSER PGDATABASE
psql_q -c "ALTER SYSTEM SET checkpoint_timeout = '1h'" -c "ALTER SYSTEM SET max_wal_size = '4GB'" \
	-c "SELECT pg_reload_conf()" >/dev/null
psql_q -v n="$NRES" <<'EOF' >/dev/null
CREATE EXTENSION pg_lease;
INSERT INTO lease.grants (resource, token, expires_at, granted_at, renewed_at, owner, released, holder)
SELECT 'wal/' || i, i, now(), now(), now(), 'postgres'::regrole::oid, true, 'filled'
  FROM generate_series(1, :n) i;
SELECT setval('lease.token_seq', :n);
VACUUM lease.grants;
EOF
[ "$(psql_q -c "SELECT count(*) FROM lease.grants")" = "$NRES" ] || die "the table was not filled"

cat >"$WORK/pair.sql" <<EOF
\\set r random(1, $NRES)
SELECT lease.acquire('wal/' || :r, '30 s') AS t \\gset
SELECT lease.release('wal/' || :r, :t);
EOF
lsn() { psql_q -c "SELECT pg_current_wal_insert_lsn()"; }
pgbench_pairs() {
	"$BIN/pgbench" -n -t "$PAIRS" -f "$WORK/pair.sql" >"$WORK/run.log" 2>&1 ||
		{ cat "$WORK/run.log"; die "pgbench failed"; }
	grep -q "number of failed transactions: 0" "$WORK/run.log" || { cat "$WORK/run.log"; die "pairs failed"; }
}
client_pairs() { "$DRIVER" "host=$PGHOST port=$PGPORT user=$PGUSER dbname=$PGDATABASE" "$1" "$PAIRS" "$NRES"; }

# measure NAME CMD... -- run CMD (PAIRS pairs) twice, a warm-up (plans
# prepared, the sequence's first log written) and the measured run; print the
# WAL records per pair by type, and check the totals
measure() {
	local name="$1" start end stats by_type records bytes distance
	shift
	"$@" || die "$name: the warm-up pairs failed"
	start="$(lsn)"
	"$@" || die "$name: the pairs failed"
	end="$(lsn)"
	# the records between the two positions, by type: N, record bytes, FPI bytes
	# (it may end complaining of the record being written at the end position)
	psql_q -c "SELECT pg_switch_wal()" >/dev/null
	stats="$("$BIN/pg_waldump" -p "$WORK/pg/data/pg_wal" -s "$start" -e "$end" --stats=record 2>&1 || true)"
	grep -q '^Total ' <<<"$stats" || { echo "$stats"; die "pg_waldump read nothing between $start and $end"; }
	by_type="$(awk -v n="$PAIRS" '/^[A-Za-z0-9]+\/[A-Za-z_0-9+]+ / { gsub(/\([^)]*\)/, "")
		if ($2 > 0) printf "  %-24s %6.2f records %7.1f bytes (FPI %.1f)\n", $1, $2 / n, ($3 + $4) / n, $4 / n }' <<<"$stats")"
	# the records' own sizes (record and full-page images), as pg_stat_wal.wal_bytes counts
	# them; the distance between the positions adds page headers and alignment
	read -r records bytes < <(awk -v n="$PAIRS" '/^Total / { gsub(/\[[^]]*\]/, "")
		printf "%.2f %.0f\n", $2 / n, $5 / n }' <<<"$stats")
	distance="$(psql_q -c "SELECT round(pg_wal_lsn_diff('$end', '$start') / $PAIRS)")"
	echo "# $MODE, $name: $PAIRS pairs over $NRES resources: $records WAL records and $bytes bytes per pair" \
		"($distance bytes of WAL position)"
	echo "$by_type"
	expect "${name}_wal_records_per_pair_at_most_$MAX_RECORDS" "$records records per pair" \
		'awk -v r="$records" -v m="$MAX_RECORDS" "BEGIN { exit !(r <= m) }"'
	expect "${name}_wal_bytes_per_pair_at_most_$MAX_BYTES" "$bytes bytes per pair" '[ "$bytes" -le "$MAX_BYTES" ]'
}

measure sql pgbench_pairs
if [ -n "$DRIVER" ]; then
	measure client_lease client_pairs lease
	measure client_token_holder client_pairs token
fi
finish
