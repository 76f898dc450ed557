/*
 * extension/pg_lease.sql -- install script of the current pg_lease version
 *
 * The build copies it to pg_lease--<default_version>.sql.  Released versions
 * keep their install script as it shipped (pg_lease--0.1.0.sql) and reach the
 * current one through the upgrade scripts pg_lease--<from>--<to>.sql; a
 * change here needs the same change in a new upgrade script, and
 * tests/shell/upgrade.sh checks that both give the same schema.
 */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION pg_lease" to load this file. \quit

/*
 * Everything below is schema-qualified (functions, types, operators), so no
 * object a user creates in public or pg_temp can change what the extension
 * runs.  The functions are all C: they carry no SET clause (applying one costs
 * every call); the statements they run are schema-qualified too, and run with
 * the search path pinned to pg_catalog alone (lease_spi.c, lease_begin), with
 * the role switched to the table owner.  lease.acquire and lease.try_acquire
 * set lock_timeout = 0 themselves for the duration of the call: their wait
 * argument is the timeout.
 */
CREATE SCHEMA lease;
GRANT USAGE ON SCHEMA lease TO PUBLIC;

/*
 * One global sequence hands out every fencing token.  A global counter is
 * per-resource monotonic for free, survives gc() deleting a resource's row, and
 * is WAL-logged ahead of use, so neither crash recovery nor promotion of a
 * synchronous standby can hand a token out twice.
 */
CREATE SEQUENCE lease.token_seq AS pg_catalog.int8 MINVALUE 1 NO CYCLE;

/*
 * One row per grant (since 0.4.0): a resource has one exclusive grant, or
 * any number of shared ones, or up to `permits` permits.  owner is the role
 * that acquired the grant; as a regrole it is dumped by name, so a restore
 * into another cluster gives the lease to the role of the same name there,
 * never to whichever role has the old OID.  A grant is current while
 * expires_at is in the future (server clock) and, for session-bound grants,
 * its backend is alive.  release/break set expires_at to the current instant;
 * the next acquire of the resource deletes the grants that are over (gc()
 * those of resources nobody acquires again).  Only resource is indexed, not
 * token: a renewal (expires_at, renewed_at) and a lock taking a released
 * lock's row in place (a new token) are HOT updates (fillfactor leaves room
 * on the page), as they were when a resource had one row.  Tokens come from
 * the sequence and so are unique without an index; every statement finds a
 * grant by its resource first.
 *
 * mode is 'exclusive' (a lock, a writer, a permit) or 'shared' (a reader);
 * permits is 0 for a lock or reader-writer grant, else the limit of the
 * semaphore the grant is a permit of (docs/sql.md "Shared and counted
 * leases").  Their values are checked by the functions, the table's only
 * writers, before any write.  The table has no CHECK constraint: every
 * UPDATE of a row (a renewal, a release, a lock taken in place) would read
 * and evaluate each CHECK expression anew, about 50,000 instructions per
 * statement for these two (docs/shared-leases.md "Measured").
 */
CREATE TABLE lease.grants (
	resource      pg_catalog.text COLLATE "C" NOT NULL,
	token         pg_catalog.int8 NOT NULL,
	expires_at    pg_catalog.timestamptz NOT NULL,
	granted_at    pg_catalog.timestamptz NOT NULL,
	renewed_at    pg_catalog.timestamptz NOT NULL,
	owner         pg_catalog.regrole NOT NULL,
	released      pg_catalog.bool NOT NULL DEFAULT false,
	backend_pid   pg_catalog.int4,
	backend_start pg_catalog.timestamptz,
	holder        pg_catalog.text NOT NULL,
	value         pg_catalog.text,			-- an election's proclamation; NULL = none
	mode          pg_catalog.text COLLATE "C" NOT NULL DEFAULT 'exclusive',	-- or 'shared'
	permits       pg_catalog.int4 NOT NULL DEFAULT 0	-- 0, or 1..10000
) WITH (fillfactor = 70);

CREATE INDEX grants_resource ON lease.grants (resource);

/*
 * One row per resource acquired (until gc): an acquire locks it (FOR
 * UPDATE) while it decides, so the grants of one resource are decided one
 * acquire at a time.  Not dumped: an acquire creates a missing row.
 */
CREATE TABLE lease.resources (
	resource      pg_catalog.text COLLATE "C" NOT NULL PRIMARY KEY
);

REVOKE ALL ON TABLE lease.resources FROM PUBLIC;
REVOKE ALL ON TABLE lease.grants FROM PUBLIC;
REVOKE ALL ON SEQUENCE lease.token_seq FROM PUBLIC;

-- pg_dump keeps the leases and the sequence position: restored tokens go on upward.
SELECT pg_catalog.pg_extension_config_dump('lease.grants', '');
SELECT pg_catalog.pg_extension_config_dump('lease.token_seq', '');

CREATE FUNCTION lease.acquire(resource pg_catalog.text,
							  ttl pg_catalog.interval,
							  wait pg_catalog.interval DEFAULT '0'::pg_catalog.interval,
							  holder pg_catalog.text DEFAULT NULL,
							  session_bound pg_catalog.bool DEFAULT false)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'lease_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

/*
 * A campaign: acquire with a value stored with the grant (lease.leader reads
 * it).  value has no default, so every call of the 5-argument form above
 * still resolves to it alone.
 */
CREATE FUNCTION lease.acquire(resource pg_catalog.text,
							  ttl pg_catalog.interval,
							  wait pg_catalog.interval,
							  holder pg_catalog.text,
							  session_bound pg_catalog.bool,
							  value pg_catalog.text)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'lease_acquire_value'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION lease.try_acquire(resource pg_catalog.text,
								  ttl pg_catalog.interval,
								  holder pg_catalog.text DEFAULT NULL,
								  session_bound pg_catalog.bool DEFAULT false)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'lease_try_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

/*
 * Shared and counted leases (since 0.4.0): a reader of a reader-writer lease,
 * and a permit of a semaphore of `permits` permits.  lease.acquire keeps its
 * meaning: an exclusive lock, the writer of the same resource.
 */
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

CREATE FUNCTION lease.renew(resource pg_catalog.text, token pg_catalog.int8, ttl pg_catalog.interval)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'lease_renew'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION lease.release(resource pg_catalog.text, token pg_catalog.int8)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'lease_release'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION lease.fence(resource pg_catalog.text, token pg_catalog.int8)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'lease_fence'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- exclusive => true: admit only a current grant nobody else holds with it
CREATE FUNCTION lease.fence(resource pg_catalog.text, token pg_catalog.int8, exclusive pg_catalog.bool)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'lease_fence_mode'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION lease.is_current(resource pg_catalog.text, token pg_catalog.int8)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'lease_is_current'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION lease."break"(resource pg_catalog.text)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'lease_break'
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

CREATE FUNCTION lease.gc(retain pg_catalog.interval DEFAULT '1 hour'::pg_catalog.interval)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'lease_gc'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

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

-- Is the backend that took a session-bound grant still alive?  (Used by the view.)
CREATE FUNCTION lease.session_alive(pid pg_catalog.int4, started pg_catalog.timestamptz)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'lease_session_alive'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

-- Number of backends queued for a resource (NULL when not preloaded).
CREATE FUNCTION lease.waiters(resource pg_catalog.text)
RETURNS pg_catalog.int4
AS 'MODULE_PATHNAME', 'lease_waiters'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

/*
 * Current grants.  The view runs with its owner's rights, so PUBLIC can read
 * it without any right on lease.grants; security_barrier keeps a caller's
 * cheap leaky function in WHERE from seeing rows the view filters out.
 */
CREATE VIEW lease.leases WITH (security_barrier) AS
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

REVOKE ALL ON FUNCTION lease."break"(pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION lease.gc(pg_catalog.interval) FROM PUBLIC;
GRANT SELECT ON lease.leases TO PUBLIC;

COMMENT ON SCHEMA lease IS 'pg_lease: leased locks with fencing tokens';
COMMENT ON FUNCTION lease.acquire(pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.bool)
	IS 'grant the resource for ttl, waiting at most wait; returns a fencing token, or NULL';
COMMENT ON FUNCTION lease.acquire(pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.bool, pg_catalog.text)
	IS 'campaign: acquire, storing value with the grant (a re-acquire replaces it); returns the term, or NULL';
COMMENT ON FUNCTION lease.try_acquire(pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.bool)
	IS 'acquire without waiting; returns a fencing token, or NULL';
COMMENT ON FUNCTION lease.acquire_shared(pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.bool)
	IS 'grant a shared (reader) lease on resource for ttl, waiting at most wait; returns its fencing token, or NULL';
COMMENT ON FUNCTION lease.acquire_permit(pg_catalog.text, pg_catalog.interval, pg_catalog.int4, pg_catalog.interval, pg_catalog.text, pg_catalog.bool)
	IS 'grant one of permits permits of resource for ttl, waiting at most wait; returns its fencing token, or NULL';
COMMENT ON FUNCTION lease.renew(pg_catalog.text, pg_catalog.int8, pg_catalog.interval)
	IS 'extend the grant (resource, token) to now + ttl; false if it is not current';
COMMENT ON FUNCTION lease.release(pg_catalog.text, pg_catalog.int8)
	IS 'end the grant (resource, token) now; false if it was not current';
COMMENT ON FUNCTION lease.fence(pg_catalog.text, pg_catalog.int8)
	IS 'admit a write of the current grant: LS001 unless token is current; holds the grant until the transaction ends';
COMMENT ON FUNCTION lease.fence(pg_catalog.text, pg_catalog.int8, pg_catalog.bool)
	IS 'fence; with exclusive true, LS001 unless token is a current grant held alone (a lock, a writer, a permit of 1)';
COMMENT ON FUNCTION lease.is_current(pg_catalog.text, pg_catalog.int8)
	IS 'is token the current, unexpired grant of resource (no lock taken)';
COMMENT ON FUNCTION lease."break"(pg_catalog.text)
	IS 'admin: end every current grant of resource now; returns the highest token ended, or NULL';
COMMENT ON FUNCTION lease.proclaim(pg_catalog.text, pg_catalog.int8, pg_catalog.text)
	IS 'set the value of the grant (resource, token); false if it is not current';
COMMENT ON FUNCTION lease.leader(pg_catalog.text)
	IS 'the current exclusive grant of election: value, term, since, expires_at; all NULL when nobody leads';
COMMENT ON FUNCTION lease.observe(pg_catalog.text, pg_catalog.int8, pg_catalog.text, pg_catalog.interval)
	IS 'wait at most wait until the election differs from (after_term, after_value); returns it as leader does';
COMMENT ON FUNCTION lease.gc(pg_catalog.interval)
	IS 'admin: delete the grants over for longer than retain; tokens never go backwards';
COMMENT ON FUNCTION lease.stats()
	IS 'counters since server start (needs shared_preload_libraries)';
COMMENT ON FUNCTION lease.session_alive(pg_catalog.int4, pg_catalog.timestamptz)
	IS 'is the backend with this PID and start time alive (for session-bound grants)';
COMMENT ON FUNCTION lease.waiters(pg_catalog.text)
	IS 'backends queued for resource in this database; NULL when not preloaded';
COMMENT ON VIEW lease.leases IS 'current grants, readable by everyone';
