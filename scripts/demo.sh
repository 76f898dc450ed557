#!/usr/bin/env bash
# demo.sh -- make demo: why fencing tokens matter, in under a minute.
#
# Four worker processes (examples/ledger_worker.cpp, on the C++ client) take
# turns appending to a ledger table; every append is a fenced write under the
# lease "ledger" (TTL 2 s, renewed in the background).  While one worker holds
# the lease, the demo freezes it with SIGSTOP (a GC pause, a stopped VM) for
# longer than the TTL: its renewals stop, the lease expires, the others carry
# on with higher tokens.  Then SIGCONT: the frozen worker, still believing it
# holds the lease, tries its write -- and lease.fence rejects it (LS001)
# inside its own transaction.  The demo ends by checking the ledger (and
# exits non-zero if the check fails).  make test does not run it (its
# timeline depends on the machine's load; tests/CMakeLists.txt);
# DEMO_SKIP_INSTALL=1 skips the installs when the build is done.  Its cluster
# listens on a Unix socket in a temporary directory only (PGLEASE_DEMO_PORT,
# default 5432, names the socket file).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
if [ "${DEMO_SKIP_INSTALL:-0}" != 1 ]; then
	"$ROOT/scripts/install-deps.sh"
	"$ROOT/scripts/install-extension.sh" # extension and client (make install)
fi

WORKER="$ROOT/build/client/pglease_ledger_worker"
[ -x "$WORKER" ] || die "$WORKER was not built"

work_dir pg_lease_demo
DIR="$WORK"
# the cluster listens on a Unix socket in $DIR only: the number names its socket file
export PGLEASE_TEST_PORT="${PGLEASE_DEMO_PORT:-5432}"
pids=()
on_exit '"$ROOT/scripts/cluster.sh" stop "$DIR/pg" immediate || true'
on_exit 'for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done'
"$ROOT/scripts/cluster.sh" start "$DIR/pg" preload
eval "$("$ROOT/scripts/cluster.sh" env "$DIR/pg")"

sql() { psql_q "$@"; }
event() { echo "$(now_ms) demo $*" >>"$DIR/demo.log"; }

sql -c "CREATE EXTENSION pg_lease" \
	-c "CREATE TABLE ledger (seq bigserial PRIMARY KEY, writer text, token bigint, entry text)"

T0="$(now_ms)"
for n in 1 2 3 4; do
	PGAPPNAME="worker-$n" "$WORKER" "worker-$n" 4 >"$DIR/worker-$n.log" 2>&1 &
	pids+=($!)
done

# Freeze whichever worker holds the lease while it works between its acquire
# and its fenced write (its log's last line is "acquired token N"), once the
# ledger has at least one entry: frozen there, it holds no transaction open,
# so nothing keeps its grant alive and its late write must be refused.  (A
# worker frozen inside its fenced transaction would keep the grant until
# that transaction ends, by design, and its write would rightly succeed.)
working() { tail -n 1 "$DIR/$1.log" 2>/dev/null | grep -q " $1 acquired token "; }
in_transaction() { # any of the worker's sessions (PGAPPNAME) is inside a transaction
	[ "$(sql -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = '$1' AND xact_start IS NOT NULL")" != 0 ]
}
frozen=""
for attempt in $(seq 1 400); do
	# the grant's label is the worker's name, "~" and 64 random bits
	label="$(sql -c "SELECT holder FROM lease.leases WHERE resource = 'ledger'")"
	holder="${label%%~*}"
	if [ -n "$holder" ] && working "$holder" && [ "$(sql -c "SELECT count(*) FROM ledger")" -ge 1 ]; then
		pid="${pids[$((${holder#worker-} - 1))]}"
		kill -STOP "$pid"
		# still the holder, still between acquire and write, no transaction open?
		if working "$holder" && ! in_transaction "$holder" &&
			[ "$(sql -c "SELECT holder FROM lease.leases WHERE resource = 'ledger'")" = "$label" ]; then
			frozen="$holder"
			event "SIGSTOP $holder while it holds the lease (TTL 2s), before its fenced write"
			break
		fi
		kill -CONT "$pid"
	fi
	sleep 0.02
done
[ -n "$frozen" ] || die "no worker could be frozen while holding the lease"
sleep 3.5
event "SIGCONT $frozen after 3.5s"
kill -CONT "$pid"

deadline=$(($(now_ms) + 45000))
for p in "${pids[@]}"; do
	while kill -0 "$p" 2>/dev/null; do
		[ "$(now_ms)" -lt "$deadline" ] || die "workers did not finish in time"
		sleep 0.1
	done
done
pids=()

echo "timeline (seconds since start):"
cat "$DIR"/worker-*.log "$DIR/demo.log" | sort -n |
	awk -v t0="$T0" '{ printf "  %6.2f  %s\n", ($1 - t0) / 1000, substr($0, index($0, " ") + 1) }'
echo
echo "ledger:"
psql -X -q -c "SELECT seq, writer, token, entry FROM ledger ORDER BY seq"

# Every acknowledged write is in the ledger, no rejected write is, the tokens
# never go backwards in commit order, and the frozen worker's late write is
# one of those refused (others may be refused too: a holder whose grant came
# back late on a loaded machine finds its lease already taken over).
acked="$(grep -h ' wrote entry ' "$DIR"/worker-*.log | wc -l)"
rejected="$(grep -h ' write REJECTED ' "$DIR"/worker-*.log | wc -l)"
frozen_rejected="$(grep -c " $frozen write REJECTED " "$DIR/$frozen.log" || true)"
rows="$(sql -c "SELECT count(*) FROM ledger")"
backwards="$(sql -c "SELECT count(*) FROM (SELECT token < lag(token) OVER (ORDER BY seq) AS back FROM ledger) l WHERE back")"
echo "check: $acked acknowledged writes, $rows ledger rows, $rejected stale write(s) rejected" \
	"($frozen_rejected of them $frozen's after its freeze), $backwards out of order"
if [ "$acked" -ne "$rows" ] || [ "$frozen_rejected" -lt 1 ] || [ "$backwards" -ne 0 ]; then
	echo "check FAILED" >&2
	exit 1
fi
echo "check passed: no lost or out-of-order entry; the frozen worker's stale write was fenced off"
echo
echo "configuration used:"
"$WORKER" --describe | sed 's/^/    /'
