#!/usr/bin/env bash
# check_history.sh DB WORKER_FILE... -- verify a fault run against what
# actually happened: the server's history (fault_history, fault_ledger, see
# schema.sql) and what the workers were told (their files).
#
# Prints "ok - ..." per property, or "not ok - ..." with the offending
# events, and exits non-zero if any property fails.
set -euo pipefail
source "$(dirname "$0")/../../scripts/lib/common.sh"
db="$1"
shift
tmp="$(mktemp -d)"
on_exit 'rm -rf "$tmp"'
cat "$@" | awk '$1 == "G" { print $2 "\t" $3 "\t" $4 "\t" $5 "\t" $6 }' >"$tmp/grants.tsv"
cat "$@" | awk '$1 == "A" { print $2 "\t" $3 "\t" $4 }' >"$tmp/acks.tsv"
chmod 644 "$tmp"/*.tsv
chmod 755 "$tmp"

q() { psql_q -d "$db" "$@"; }

q <<SQL
CREATE TABLE IF NOT EXISTS client_grants (resource text, token bigint, holder text, send_us bigint, recv_us bigint);
CREATE TABLE IF NOT EXISTS client_acks (resource text, token bigint, write_id text);
TRUNCATE client_grants, client_acks;
\copy client_grants FROM '$tmp/grants.tsv'
\copy client_acks FROM '$tmp/acks.tsv'
SQL

# property NAME SQL -- SQL lists violations (one per row); none = ok
property() {
	local name="$1" sql="$2" out
	out="$(q -c "$sql" 2>&1)" || true
	if [ -z "$out" ]; then
		echo "ok - $name"
	else
		echo "not ok - $name:"
		head -20 <<<"$out" | sed 's/^/#   /'
		failures=$((failures + 1))
	fi
}

counts="$(q -c "SELECT (SELECT count(*) FROM client_grants) || ' grants told to workers, ' ||
	(SELECT count(*) FROM client_acks) || ' acknowledged fenced writes, ' ||
	(SELECT count(DISTINCT (resource, token)) FROM fault_history) || ' grants in the server history, ' ||
	(SELECT count(*) FROM fault_ledger) || ' ledger rows'")"
echo "# $counts"

property "token_never_given_to_two_grants" "
	SELECT 'token ' || token || ' told to ' || string_agg(DISTINCT resource || '/' || holder, ', ')
	  FROM client_grants GROUP BY token
	HAVING count(DISTINCT (resource, holder)) > 1"

property "every_acknowledged_grant_is_in_server_history" "
	SELECT 'grant ' || c.resource || ' token ' || c.token || ' to ' || c.holder || ' not durable'
	  FROM client_grants c
	 WHERE NOT EXISTS (SELECT 1 FROM fault_history h
					   WHERE h.resource = c.resource AND h.token = c.token AND h.holder = c.holder)"

property "tokens_strictly_increase_in_grant_order" "
	SELECT resource || ': token ' || token || ' granted at ' || granted_at || ' after token ' || prev
	  FROM (SELECT resource, token, granted_at,
				   lag(token) OVER (PARTITION BY resource ORDER BY granted_at, token) AS prev
			  FROM (SELECT DISTINCT resource, token, granted_at FROM fault_history) g) x
	 WHERE token <= prev"

property "no_two_grants_overlap_in_server_time" "
	WITH g AS (SELECT resource, token, min(granted_at) AS start_at,
					  (array_agg(expires_at ORDER BY id DESC))[1] AS end_at
				 FROM fault_history GROUP BY resource, token)
	SELECT resource || ': token ' || token || ' granted at ' || start_at ||
		   ' before token ' || prev_token || ' ended at ' || prev_end
	  FROM (SELECT *, lag(end_at) OVER w AS prev_end, lag(token) OVER w AS prev_token
			  FROM g WINDOW w AS (PARTITION BY resource ORDER BY start_at, token)) x
	 WHERE start_at < prev_end"

property "every_acknowledged_fenced_write_is_in_the_ledger" "
	SELECT 'write ' || write_id || ' (' || resource || ' token ' || token || ') acknowledged but missing'
	  FROM client_acks a WHERE NOT EXISTS (SELECT 1 FROM fault_ledger l WHERE l.write_id = a.write_id)"

property "no_lower_token_write_after_a_higher_one" "
	SELECT resource || ': ledger seq ' || seq || ' token ' || token || ' after token ' || prev
	  FROM (SELECT resource, seq, token, max(token) OVER (PARTITION BY resource ORDER BY seq
											ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev
			  FROM fault_ledger) x
	 WHERE token < prev"

property "every_ledger_write_belongs_to_a_grant" "
	SELECT 'ledger seq ' || seq || ': ' || resource || ' token ' || token || ' never granted'
	  FROM fault_ledger l WHERE NOT EXISTS (SELECT 1 FROM fault_history h
											 WHERE h.resource = l.resource AND h.token = l.token)"

exit $((failures > 0))
