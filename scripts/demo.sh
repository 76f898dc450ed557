#!/usr/bin/env bash
# demo.sh -- make demo: why fencing tokens matter, on a throwaway cluster.
#
# Two workers append to a ledger under one lease.  Worker A stalls (a GC
# pause, a stopped VM) past its TTL; worker B takes the lease over with a
# higher token and writes; A wakes up and tries to write with its old token.
# The write is fenced inside A's own transaction and rejected (LS001), so the
# ledger has no lost or out-of-order entry.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
"$ROOT/scripts/install-deps.sh"
"$ROOT/scripts/install-extension.sh"

DIR="$(mktemp -d /tmp/pg_lease_demo.XXXXXX)"
export PGLEASE_TEST_PORT="${PGLEASE_DEMO_PORT:-54351}"
cleanup() { "$ROOT/scripts/cluster.sh" stop "$DIR" immediate || true; rm -rf "$DIR"; }
trap cleanup EXIT
"$ROOT/scripts/cluster.sh" start "$DIR" preload
eval "$("$ROOT/scripts/cluster.sh" env "$DIR")"

sql() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }
T0=$(date +%s%N)
say() { awk -v t0="$T0" -v now="$(date +%s%N)" -v msg="$*" 'BEGIN { printf "%6.2fs  %s\n", (now - t0) / 1e9, msg }'; }

sql -c "CREATE EXTENSION pg_lease" \
	-c "CREATE TABLE ledger (seq bigserial PRIMARY KEY, writer text, token bigint, entry text)"

# fenced_append WORKER TOKEN ENTRY -- the write and its fence in one transaction
fenced_append() {
	sql -v VERBOSITY=verbose -c "BEGIN" \
		-c "SELECT lease.fence('ledger', $2)" \
		-c "INSERT INTO ledger (writer, token, entry) VALUES ('$1', $2, '$3')" \
		-c "COMMIT" >/dev/null
}

echo "pg_lease demo: two workers, one ledger, a 2 s lease"
echo
A=$(sql -c "SELECT lease.acquire('ledger', '2 s', holder => 'worker-A')")
say "worker-A acquires 'ledger'            -> token $A"
B=$(sql -c "SELECT coalesce(lease.acquire('ledger', '2 s', holder => 'worker-B')::text, 'NULL')")
say "worker-B tries to acquire              -> $B (A holds it)"
fenced_append worker-A "$A" "A: entry 1"
say "worker-A fenced write                  -> accepted"
say "worker-A stalls (GC pause / SIGSTOP) past its TTL ..."
B=$(sql -c "SELECT lease.acquire('ledger', '10 s', wait => '5 s', holder => 'worker-B')")
say "worker-B waited, lease expired         -> token $B (higher than $A)"
fenced_append worker-B "$B" "B: entry 1"
say "worker-B fenced write                  -> accepted"
if err=$(fenced_append worker-A "$A" "A: entry 2 (stale)" 2>&1); then
	say "worker-A wakes, writes with token $A   -> ACCEPTED (this must not happen)"
	exit 1
fi
err="$(grep -m1 'ERROR' <<<"$err")"
say "worker-A wakes, writes with token $A    -> rejected: ${err#*ERROR:  }"
fenced_append worker-B "$B" "B: entry 2"
say "worker-B fenced write                  -> accepted"
sql -c "SELECT lease.release('ledger', $B)" >/dev/null
say "worker-B releases"
echo
echo "ledger:"
psql -X -q -c "SELECT seq, writer, token, entry FROM ledger ORDER BY seq"
check=$(sql -c "SELECT count(*) FILTER (WHERE entry LIKE '%stale%') = 0
                  AND bool_and(token >= prev) IS NOT FALSE
                FROM (SELECT entry, token, lag(token, 1, 0::bigint) OVER (ORDER BY seq) AS prev FROM ledger) l")
if [ "$check" = t ]; then
	echo "check: no stale write landed; tokens never go backwards in the ledger"
else
	echo "check FAILED: the ledger has a stale or out-of-order entry" >&2
	exit 1
fi
echo
echo "configuration used:"
echo "    Provider: PostgreSQL"
echo "    Strategy: Lease"
echo "    TTL: 2s"
echo "    Safety: fencing"
