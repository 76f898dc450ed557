--
-- privileges: PUBLIC can call the API but not write the tables; a lease is
-- renewed, released or fenced only by the role that acquired it; break is
-- not PUBLIC; search_path cannot change what the extension runs.
--
SET client_min_messages = warning;
DROP ROLE IF EXISTS lease_alice;
DROP SCHEMA IF EXISTS bob_tricks CASCADE;
DROP ROLE IF EXISTS lease_bob;
RESET client_min_messages;
CREATE ROLE lease_alice;
CREATE ROLE lease_bob;
CREATE SCHEMA bob_tricks AUTHORIZATION lease_bob;

SET ROLE lease_alice;
SELECT lease.release('priv/released', lease.acquire('priv/released', '1 min', holder => 'alice')) AS released_one;
SELECT lease.acquire('priv/a', '1 min', holder => 'alice') AS ta \gset
SELECT owner FROM lease.leases WHERE resource = 'priv/a';
RESET ROLE;

CREATE TEMP TABLE before AS SELECT ctid::text AS tid, xmin::text AS x, * FROM lease.grants;

SET ROLE lease_bob;
-- another role's lease
SELECT sqlstate(format('SELECT lease.renew(%L, %s, %L)', 'priv/a', :ta, '1 min')) AS bob_renews_alice;
SELECT sqlstate(format('SELECT lease.release(%L, %s)', 'priv/a', :ta)) AS bob_releases_alice;
SELECT sqlstate(format('SELECT lease.fence(%L, %s)', 'priv/a', :ta)) AS bob_fences_alice;
-- naming alice's holder, or another (0.5.0): still alice's lease
SELECT sqlstate(format('SELECT lease.renew(%L, %s, %L, %L)', 'priv/a', :ta, '1 min', 'alice')) AS bob_renews_alice_holder;
SELECT sqlstate(format('SELECT lease.release(%L, %s, %L)', 'priv/a', :ta, 'alice')) AS bob_releases_alice_holder;
SELECT sqlstate(format('SELECT lease.release(%L, %s, %L)', 'priv/a', :ta, 'bob')) AS bob_releases_alice_other_holder;
SELECT lease.acquire('priv/a', '1 min', holder => 'alice') IS NULL AS bob_reusing_alice_label_gets_null;
SELECT sqlstate('SELECT lease.break(''priv/a'')') AS bob_breaks;
SELECT sqlstate('SELECT lease.gc(''0'')') AS bob_gc;
-- the tables and the sequence
SELECT sqlstate('UPDATE lease.grants SET expires_at = now()') AS bob_updates_table;
SELECT sqlstate('DELETE FROM lease.grants') AS bob_deletes_table;
SELECT sqlstate('INSERT INTO lease.grants SELECT * FROM lease.grants') AS bob_inserts_table;
SELECT sqlstate('SELECT * FROM lease.grants') AS bob_reads_table;
SELECT sqlstate('SELECT pg_catalog.setval(''lease.token_seq'', 1)') AS bob_setval;
SELECT sqlstate('SELECT pg_catalog.nextval(''lease.token_seq'')') AS bob_nextval;
SELECT sqlstate('UPDATE lease.leases SET holder = ''bob''') AS bob_updates_view;
-- the view and is_current are for everyone
SELECT holder, owner FROM lease.leases WHERE resource = 'priv/a';
-- ... but a cheap leaky function in WHERE sees only what the view shows
CREATE TEMP TABLE seen (r text);
CREATE FUNCTION bob_tricks.leak(text) RETURNS boolean LANGUAGE plpgsql COST 0.0000001 AS $$
BEGIN INSERT INTO pg_temp.seen VALUES ($1); RETURN true; END $$;
SELECT count(*) > 0 AS view_rows FROM lease.leases WHERE bob_tricks.leak(resource);
SELECT count(*) AS leaked_released_grant FROM seen WHERE r = 'priv/released';
DROP TABLE seen;
SELECT lease.is_current('priv/a', :ta) AS bob_can_check;

-- search_path: shadow the clock, equality, nextval and count in bob's schema
-- and in pg_temp, put them first, and try to get alice's lease
CREATE FUNCTION bob_tricks.clock_timestamp() RETURNS timestamptz
	LANGUAGE sql AS $$ SELECT '2999-01-01'::timestamptz $$;
CREATE FUNCTION bob_tricks.nextval(regclass) RETURNS bigint
	LANGUAGE sql AS $$ SELECT 1::bigint $$;
CREATE FUNCTION bob_tricks.text_eq_always(text, text) RETURNS boolean
	LANGUAGE sql AS $$ SELECT true $$;
CREATE OPERATOR bob_tricks.= (LEFTARG = text, RIGHTARG = text, FUNCTION = bob_tricks.text_eq_always);
CREATE OPERATOR bob_tricks.> (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = pg_catalog.timestamptz_lt);
CREATE FUNCTION pg_temp.clock_timestamp() RETURNS timestamptz
	LANGUAGE sql AS $$ SELECT '2999-01-01'::timestamptz $$;
SET search_path = pg_temp, bob_tricks, pg_catalog, public;
SELECT lease.acquire('priv/a', '1 min', holder => 'bob') IS NULL AS shadowed_acquire_still_null;
SELECT lease.acquire('priv/b', '1 min', holder => 'bob') AS tb \gset
SELECT :tb > :ta AS shadowed_nextval_not_used;
SELECT lease.is_current('priv/b', :tb) AS shadowed_clock_not_used;
SELECT string_agg(resource, ',' ORDER BY resource) AS view_unaffected
  FROM lease.leases WHERE resource OPERATOR(pg_catalog.~~) 'priv/%';
RESET search_path;
DROP FUNCTION pg_temp.clock_timestamp();
SELECT lease.release('priv/b', :tb) AS bob_releases_own;
RESET ROLE;

-- nothing of alice's changed
SELECT NOT EXISTS (SELECT * FROM before WHERE resource = 'priv/a'
				   EXCEPT SELECT ctid::text, xmin::text, * FROM lease.grants)
	   AS alice_grant_unchanged;

-- break only where granted: a superuser can; so can a role granted EXECUTE
SET ROLE lease_alice;
SELECT sqlstate('SELECT lease.break(''priv/a'')') AS alice_breaks_without_grant;
RESET ROLE;
GRANT EXECUTE ON FUNCTION lease.break(text) TO lease_alice;
SET ROLE lease_alice;
SELECT lease.break('priv/a') = :ta AS granted_role_breaks;
RESET ROLE;
SELECT lease.acquire('priv/a', '1 min', holder => 'admin') AS tc \gset
SELECT lease.break('priv/a') = :tc AS superuser_breaks;

-- a superuser may renew/release another role's lease (operator override)
SET ROLE lease_alice;
SELECT lease.acquire('priv/c', '1 min') AS td \gset
RESET ROLE;
SELECT lease.release('priv/c', :td) AS superuser_releases_alice;

REVOKE EXECUTE ON FUNCTION lease.break(text) FROM lease_alice;
DROP SCHEMA bob_tricks CASCADE;
DROP ROLE lease_alice;
DROP ROLE lease_bob;
