/*
 * extension/pg_lease--0.3.0--0.4.0.sql -- upgrade script from 0.3.0 to 0.4.0
 *
 * What 0.4.0 adds (shared and counted leases, issue 24):
 * - lease.grants holds one row per grant, indexed by resource alone (a new
 *   token in a row is a HOT update; tokens are unique by the sequence), with
 *   its mode ('exclusive' or 'shared') and permits (0, or the limit of the
 *   semaphore it is a permit of); every existing grant becomes an exclusive
 *   lock (mode 'exclusive', permits 0), token and expiry kept;
 * - lease.resources, one row per resource, locked by an acquire while it
 *   decides;
 * - lease.acquire_shared, lease.acquire_permit, lease.fence(resource, token,
 *   exclusive);
 * - lease.leases shows mode and permits, as its last columns.
 * Leases, tokens and privileges are kept as they are.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_lease UPDATE TO '0.4.0'" to load this file. \quit

-- constant defaults: no table rewrite; the new index is built once.  No
-- CHECK constraints: the functions check mode and permits (see pg_lease.sql).
ALTER TABLE lease.grants
	ADD COLUMN mode pg_catalog.text COLLATE "C" NOT NULL DEFAULT 'exclusive',	-- or 'shared'
	ADD COLUMN permits pg_catalog.int4 NOT NULL DEFAULT 0,	-- 0, or 1..10000
	DROP CONSTRAINT grants_pkey;

CREATE INDEX grants_resource ON lease.grants (resource);

CREATE TABLE lease.resources (
	resource      pg_catalog.text COLLATE "C" NOT NULL PRIMARY KEY
);

REVOKE ALL ON TABLE lease.resources FROM PUBLIC;

INSERT INTO lease.resources (resource) SELECT g.resource FROM lease.grants g;

CREATE FUNCTION lease.acquire_shared(resource pg_catalog.text,
									 ttl pg_catalog.interval,
									 wait pg_catalog.interval DEFAULT '0'::pg_catalog.interval,
									 holder pg_catalog.text DEFAULT NULL,
									 session_bound pg_catalog.bool DEFAULT false)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'lease_acquire_shared'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION lease.acquire_permit(resource pg_catalog.text,
									 ttl pg_catalog.interval,
									 permits pg_catalog.int4,
									 wait pg_catalog.interval DEFAULT '0'::pg_catalog.interval,
									 holder pg_catalog.text DEFAULT NULL,
									 session_bound pg_catalog.bool DEFAULT false)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'lease_acquire_permit'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION lease.fence(resource pg_catalog.text, token pg_catalog.int8, exclusive pg_catalog.bool)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'lease_fence_mode'
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
	   g.value,
	   g.mode,
	   g.permits
  FROM lease.grants g
 WHERE g.expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()
   AND CASE WHEN g.backend_pid IS NULL THEN true
			ELSE lease.session_alive(g.backend_pid, g.backend_start) END;

COMMENT ON FUNCTION lease.acquire_shared(pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.bool)
	IS 'grant a shared (reader) lease on resource for ttl, waiting at most wait; returns its fencing token, or NULL';
COMMENT ON FUNCTION lease.acquire_permit(pg_catalog.text, pg_catalog.interval, pg_catalog.int4, pg_catalog.interval, pg_catalog.text, pg_catalog.bool)
	IS 'grant one of permits permits of resource for ttl, waiting at most wait; returns its fencing token, or NULL';
COMMENT ON FUNCTION lease.fence(pg_catalog.text, pg_catalog.int8, pg_catalog.bool)
	IS 'fence; with exclusive true, LS001 unless token is a current grant held alone (a lock, a writer, a permit of 1)';
COMMENT ON FUNCTION lease."break"(pg_catalog.text)
	IS 'admin: end every current grant of resource now; returns the highest token ended, or NULL';
COMMENT ON FUNCTION lease.leader(pg_catalog.text)
	IS 'the current exclusive grant of election: value, term, since, expires_at; all NULL when nobody leads';
COMMENT ON FUNCTION lease.gc(pg_catalog.interval)
	IS 'admin: delete the grants over for longer than retain; tokens never go backwards';
