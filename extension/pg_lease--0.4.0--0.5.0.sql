/*
 * extension/pg_lease--0.4.0--0.5.0.sql -- upgrade script from 0.4.0 to 0.5.0
 *
 * What 0.5.0 adds (issue 38):
 * - lease.renew(resource, token, ttl, holder) and lease.release(resource,
 *   token, holder): renew or release the grant (resource, token) only if
 *   holder took it, compared in the statement that renews or releases it
 *   (false otherwise, nothing changed); a client that names its grant by
 *   token and holder needs no read of lease.leases first.  The forms
 *   without a holder are unchanged.
 * Leases, tokens and privileges are kept as they are.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_lease UPDATE TO '0.5.0'" to load this file. \quit

-- overloads, no defaults: every call of the three- and two-argument forms
-- still means that form; EXECUTE to PUBLIC, as theirs
CREATE FUNCTION lease.renew(resource pg_catalog.text, token pg_catalog.int8, ttl pg_catalog.interval,
							holder pg_catalog.text)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'lease_renew_holder'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION lease.release(resource pg_catalog.text, token pg_catalog.int8, holder pg_catalog.text)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'lease_release_holder'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION lease.renew(pg_catalog.text, pg_catalog.int8, pg_catalog.interval, pg_catalog.text)
	IS 'extend the grant (resource, token) to now + ttl if holder took it; false if it is not current or another holder''s';
COMMENT ON FUNCTION lease.release(pg_catalog.text, pg_catalog.int8, pg_catalog.text)
	IS 'end the grant (resource, token) now if holder took it; false if it was not current or another holder''s';
