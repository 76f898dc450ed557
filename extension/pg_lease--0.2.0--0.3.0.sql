/*
 * extension/pg_lease--0.2.0--0.3.0.sql -- upgrade script from 0.2.0 to 0.3.0
 *
 * Released: never edit.  What 0.3.0 adds (leader election, issue 23):
 * - lease.grants.value, an election's proclamation (NULL for every grant
 *   made before: none);
 * - lease.acquire(resource, ttl, wait, holder, session_bound, value), a
 *   campaign; lease.proclaim, lease.leader and lease.observe;
 * - lease.leases shows value, as its last column.
 * Leases, tokens and privileges are kept as they are.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_lease UPDATE TO '0.3.0'" to load this file. \quit

-- a new nullable column without a default: no table rewrite
ALTER TABLE lease.grants ADD COLUMN value pg_catalog.text;

CREATE FUNCTION lease.acquire(resource pg_catalog.text,
							  ttl pg_catalog.interval,
							  wait pg_catalog.interval,
							  holder pg_catalog.text,
							  session_bound pg_catalog.bool,
							  value pg_catalog.text)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'lease_acquire_value'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION lease.proclaim(resource pg_catalog.text, token pg_catalog.int8, value pg_catalog.text)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'lease_proclaim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- The current grant of an election: one row, all NULL when nobody leads.
CREATE FUNCTION lease.leader(election pg_catalog.text,
							 OUT value pg_catalog.text,
							 OUT term pg_catalog.int8,
							 OUT since pg_catalog.timestamptz,
							 OUT expires_at pg_catalog.timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'lease_leader'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Sleeps in the server until the election differs from (after_term, after_value).
CREATE FUNCTION lease.observe(election pg_catalog.text,
							  after_term pg_catalog.int8,
							  after_value pg_catalog.text,
							  wait pg_catalog.interval,
							  OUT value pg_catalog.text,
							  OUT term pg_catalog.int8,
							  OUT since pg_catalog.timestamptz,
							  OUT expires_at pg_catalog.timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'lease_observe'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

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
	   lease.waiters(g.resource) AS waiters,
	   g.value
  FROM lease.grants g
 WHERE g.expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()
   AND CASE WHEN g.backend_pid IS NULL THEN true
			ELSE lease.session_alive(g.backend_pid, g.backend_start) END;


COMMENT ON FUNCTION lease.acquire(pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.bool, pg_catalog.text)
	IS 'campaign: acquire, storing value with the grant (a re-acquire replaces it); returns the term, or NULL';
COMMENT ON FUNCTION lease.proclaim(pg_catalog.text, pg_catalog.int8, pg_catalog.text)
	IS 'set the value of the grant (resource, token); false if it is not current';
COMMENT ON FUNCTION lease.leader(pg_catalog.text)
	IS 'the current grant of election: value, term, since, expires_at; all NULL when nobody leads';
COMMENT ON FUNCTION lease.observe(pg_catalog.text, pg_catalog.int8, pg_catalog.text, pg_catalog.interval)
	IS 'wait at most wait until the election differs from (after_term, after_value); returns it as leader does';
