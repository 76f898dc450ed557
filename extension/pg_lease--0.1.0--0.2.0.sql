/*
 * extension/pg_lease--0.1.0--0.2.0.sql -- upgrade script from 0.1.0 to 0.2.0
 *
 * Released: never edit.  What 0.2.0 changes in the schema:
 * - lease.grants.owner is a regrole instead of an oid, so a dump restored
 *   into another cluster keeps each lease with the role of the same name;
 * - lease.stats() has a wakeups column (C symbol lease_stats_0_2; the 0.1.0
 *   definition keeps calling lease_stats, which still returns 8 columns);
 * - every object has a comment.
 * Leases, tokens and privileges are kept as they are.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_lease UPDATE TO '0.2.0'" to load this file. \quit

/*
 * The view reads owner, which blocks changing its type: point the view away
 * from it (CREATE OR REPLACE keeps the view, its privileges and its
 * dependents), change the column (oid to regrole is binary coercible: no
 * rewrite), then restore the view's definition.
 */
CREATE OR REPLACE VIEW lease.leases WITH (security_barrier) AS
SELECT g.resource,
	   g.holder,
	   g.token,
	   NULL::pg_catalog.regrole AS owner,
	   g.granted_at,
	   g.renewed_at,
	   g.expires_at,
	   g.expires_at OPERATOR(pg_catalog.-) pg_catalog.clock_timestamp() AS remaining,
	   g.backend_pid IS NOT NULL AS session_bound,
	   lease.waiters(g.resource) AS waiters
  FROM lease.grants g
 WHERE false;

ALTER TABLE lease.grants ALTER COLUMN owner TYPE pg_catalog.regrole USING owner::pg_catalog.regrole;

CREATE OR REPLACE VIEW lease.leases WITH (security_barrier) AS
SELECT g.resource,
	   g.holder,
	   g.token,
	   g.owner,
	   g.granted_at,
	   g.renewed_at,
	   g.expires_at,
	   g.expires_at OPERATOR(pg_catalog.-) pg_catalog.clock_timestamp() AS remaining,
	   g.backend_pid IS NOT NULL AS session_bound,
	   lease.waiters(g.resource) AS waiters
  FROM lease.grants g
 WHERE g.expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()
   AND CASE WHEN g.backend_pid IS NULL THEN true
			ELSE lease.session_alive(g.backend_pid, g.backend_start) END;
/*
 * lease.stats() gains a column: a new function over a new C symbol.  DROP
 * loses privileges granted on the old one; PUBLIC's EXECUTE is the default.
 */
DROP FUNCTION lease.stats();
CREATE FUNCTION lease.stats(OUT grants pg_catalog.int8,
							OUT contended pg_catalog.int8,
							OUT timeouts pg_catalog.int8,
							OUT takeovers pg_catalog.int8,
							OUT renewals pg_catalog.int8,
							OUT failed_renewals pg_catalog.int8,
							OUT releases pg_catalog.int8,
							OUT fence_rejections pg_catalog.int8,
							OUT wakeups pg_catalog.int8)
RETURNS record
AS 'MODULE_PATHNAME', 'lease_stats_0_2'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON SCHEMA lease IS 'pg_lease: leased locks with fencing tokens';
COMMENT ON FUNCTION lease.acquire(pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.bool)
	IS 'grant the resource for ttl, waiting at most wait; returns a fencing token, or NULL';
COMMENT ON FUNCTION lease.try_acquire(pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.bool)
	IS 'acquire without waiting; returns a fencing token, or NULL';
COMMENT ON FUNCTION lease.renew(pg_catalog.text, pg_catalog.int8, pg_catalog.interval)
	IS 'extend the grant (resource, token) to now + ttl; false if it is not current';
COMMENT ON FUNCTION lease.release(pg_catalog.text, pg_catalog.int8)
	IS 'end the grant (resource, token) now; false if it was not current';
COMMENT ON FUNCTION lease.fence(pg_catalog.text, pg_catalog.int8)
	IS 'admit a write of the current grant: LS001 unless token is current; holds the grant until the transaction ends';
COMMENT ON FUNCTION lease.is_current(pg_catalog.text, pg_catalog.int8)
	IS 'is token the current, unexpired grant of resource (no lock taken)';
COMMENT ON FUNCTION lease."break"(pg_catalog.text)
	IS 'admin: end the current grant of resource now; returns its token, or NULL';
COMMENT ON FUNCTION lease.gc(pg_catalog.interval)
	IS 'admin: delete the rows of resources free for longer than retain; tokens never go backwards';
COMMENT ON FUNCTION lease.stats()
	IS 'counters since server start (needs shared_preload_libraries)';
COMMENT ON FUNCTION lease.session_alive(pg_catalog.int4, pg_catalog.timestamptz)
	IS 'is the backend with this PID and start time alive (for session-bound grants)';
COMMENT ON FUNCTION lease.waiters(pg_catalog.text)
	IS 'backends queued for resource in this database; NULL when not preloaded';
COMMENT ON VIEW lease.leases IS 'current grants, readable by everyone';
