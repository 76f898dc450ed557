--
-- upgrade: the walk from the base script (0.1.0) to the current version, one
-- ALTER EXTENSION pg_lease UPDATE at a time, and from each earlier release
-- straight to the current one.  Leases, tokens, owners and privileges survive
-- every step, each version's functions work after it, grants made before
-- 0.4.0 become exclusive locks, grants of every version are renewed and
-- released naming their holder after 0.5.0, and the updated schema equals a
-- fresh install's.  It drops the extension: it runs last, and leaves it installed.
--
SET client_min_messages = warning;
DROP ROLE IF EXISTS lease_upgrade_app;
DROP ROLE IF EXISTS lease_upgrade_admin;
CREATE ROLE lease_upgrade_app;
CREATE ROLE lease_upgrade_admin;
RESET client_min_messages;

-- upgrade_describe(): every object of the extension as text, by name, never by
-- OID: what a fresh install and an updated one must agree on
CREATE FUNCTION public.upgrade_describe() RETURNS SETOF text LANGUAGE sql AS $describe$
WITH ext AS (SELECT oid, extversion, extconfig FROM pg_catalog.pg_extension WHERE extname = 'pg_lease'),
members AS (
	SELECT d.classid, d.objid, pg_catalog.pg_describe_object(d.classid, d.objid, 0) AS name
	  FROM pg_catalog.pg_depend d, ext
	 WHERE d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
	   AND d.refobjid = ext.oid AND d.deptype = 'e'
)
SELECT 'version ' || extversion FROM ext
UNION ALL
SELECT 'config ' || pg_catalog.string_agg(c::pg_catalog.regclass::text, ', ' ORDER BY c::pg_catalog.regclass::text)
  FROM ext, unnest(extconfig) c
UNION ALL
SELECT 'member ' || name FROM members
UNION ALL
-- columns of tables and views
SELECT format('column %s.%s %s%s%s collate %s', a.attrelid::pg_catalog.regclass, a.attname,
			  pg_catalog.format_type(a.atttypid, a.atttypmod),
			  CASE WHEN a.attnotnull THEN ' not null' ELSE '' END,
			  coalesce(' default ' || pg_catalog.pg_get_expr(ad.adbin, ad.adrelid), ''),
			  coalesce(co.collname, '-'))
  FROM members m
  JOIN pg_catalog.pg_attribute a ON m.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND a.attrelid = m.objid
  LEFT JOIN pg_catalog.pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
  LEFT JOIN pg_catalog.pg_collation co ON co.oid = a.attcollation AND a.attcollation <> 0
 WHERE a.attnum > 0 AND NOT a.attisdropped
UNION ALL
-- relations: kind, options, privileges, view text, indexes
SELECT format('relation %s kind %s options %s acl %s', c.oid::pg_catalog.regclass, c.relkind,
			  coalesce(c.reloptions::text, '-'), coalesce(c.relacl::text, '-'))
  FROM members m JOIN pg_catalog.pg_class c ON m.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND c.oid = m.objid
UNION ALL
SELECT format('view %s: %s', c.oid::pg_catalog.regclass, pg_catalog.pg_get_viewdef(c.oid))
  FROM members m JOIN pg_catalog.pg_class c ON m.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND c.oid = m.objid
 WHERE c.relkind = 'v'
UNION ALL
SELECT format('index %s', pg_catalog.pg_get_indexdef(i.indexrelid))
  FROM members m JOIN pg_catalog.pg_index i ON m.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND i.indrelid = m.objid
UNION ALL
SELECT format('sequence %s type %s start %s min %s max %s cycle %s', s.seqrelid::pg_catalog.regclass,
			  s.seqtypid::pg_catalog.regtype, s.seqstart, s.seqmin, s.seqmax, s.seqcycle)
  FROM members m JOIN pg_catalog.pg_sequence s ON m.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND s.seqrelid = m.objid
UNION ALL
-- functions: signature, result, language, C symbol, properties, privileges
SELECT format('function %s(%s) returns %s language %s symbol %s volatile %s strict %s parallel %s secdef %s config %s acl %s',
			  p.oid::pg_catalog.regproc, pg_catalog.pg_get_function_arguments(p.oid),
			  pg_catalog.pg_get_function_result(p.oid), l.lanname, p.prosrc, p.provolatile,
			  p.proisstrict, p.proparallel, p.prosecdef, coalesce(p.proconfig::text, '-'),
			  coalesce(p.proacl::text, '-'))
  FROM members m JOIN pg_catalog.pg_proc p ON m.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND p.oid = m.objid
  JOIN pg_catalog.pg_language l ON l.oid = p.prolang
UNION ALL
SELECT format('schema %s acl %s', n.nspname, coalesce(n.nspacl::text, '-'))
  FROM members m JOIN pg_catalog.pg_namespace n ON m.classid = 'pg_catalog.pg_namespace'::pg_catalog.regclass AND n.oid = m.objid
UNION ALL
SELECT format('comment %s: %s', m.name, ds.description)
  FROM members m JOIN pg_catalog.pg_description ds ON ds.classoid = m.classid AND ds.objoid = m.objid
UNION ALL
SELECT format('initial privileges %s: %s', m.name, ip.initprivs)
  FROM members m JOIN pg_catalog.pg_init_privs ip ON ip.classoid = m.classid AND ip.objoid = m.objid
ORDER BY 1
$describe$;

-- upgrade_checks(app, own, max_before): what must hold after every update,
-- one row a check; the leases were made before (table before) by
-- lease_upgrade_app (app) and by this role (own).  owner_renews renews app's
-- lease: its new expiry is taken into before.
CREATE FUNCTION public.upgrade_checks(app int8, own int8, max_before int8)
RETURNS TABLE (name text, result text) LANGUAGE plpgsql AS $$
DECLARE
	next int8;
BEGIN
	RETURN QUERY SELECT 'grants_kept', count(*)::text || ' changed'
	  FROM ((TABLE before EXCEPT ALL
			 SELECT g.resource, g.token, g.holder, g.owner::regrole::text, g.expires_at, g.released
			   FROM lease.grants g WHERE g.resource IN (SELECT b.resource FROM before b))
			UNION ALL
			(SELECT g.resource, g.token, g.holder, g.owner::regrole::text, g.expires_at, g.released
			   FROM lease.grants g WHERE g.resource IN (SELECT b.resource FROM before b)
			 EXCEPT ALL TABLE before)) d;
	RETURN QUERY SELECT 'held_leases_current',
		(lease.is_current('up/app', app) AND lease.is_current('up/own', own))::text;
	RETURN QUERY SELECT 'owner_role_kept', l.owner::regrole::text FROM lease.leases l WHERE l.resource = 'up/app';
	SET LOCAL ROLE lease_upgrade_app;
	RETURN QUERY SELECT 'owner_renews', lease.renew('up/app', app, '10 min')::text;
	SET LOCAL ROLE lease_upgrade_admin;
	BEGIN
		PERFORM lease.renew('up/app', app, '10 min');
		RETURN QUERY SELECT 'other_role_refused', 'renewed';
	EXCEPTION WHEN OTHERS THEN
		RETURN QUERY SELECT 'other_role_refused', 'SQLSTATE ' || SQLSTATE;
	END;
	RESET ROLE;
	UPDATE before b SET expires_at = g.expires_at FROM lease.grants g WHERE g.resource = b.resource AND b.resource = 'up/app';
	RETURN QUERY SELECT 'granted_execute_kept',
		has_function_privilege('lease_upgrade_admin', 'lease.break(text)', 'EXECUTE')::text;
	RETURN QUERY SELECT 'public_still_without_break',
		(NOT has_function_privilege('lease_upgrade_app', 'lease.break(text)', 'EXECUTE'))::text;
	RETURN QUERY SELECT 'public_still_without_table_rights',
		(NOT has_table_privilege('lease_upgrade_app', 'lease.grants', 'SELECT'))::text;
	next := lease.acquire('up/next', '1 min');
	RETURN QUERY SELECT 'tokens_go_on_upward', (next > max_before)::text;
	PERFORM lease.release('up/next', next);
END
$$;

-- the fresh install's schema, with the privilege the walks grant
GRANT EXECUTE ON FUNCTION lease.break(text) TO lease_upgrade_admin;
CREATE TEMP TABLE fresh AS SELECT d AS line FROM public.upgrade_describe() d;
SELECT count(*) > 100 AS fresh_described FROM fresh;
SET client_min_messages = warning;
DROP EXTENSION pg_lease CASCADE;
RESET client_min_messages;

--
-- 0.1.0, then one update at a time
--
CREATE EXTENSION pg_lease VERSION '0.1.0';
SELECT extversion FROM pg_extension WHERE extname = 'pg_lease';
GRANT EXECUTE ON FUNCTION lease.break(text) TO lease_upgrade_admin;
SET ROLE lease_upgrade_app;
SELECT lease.acquire('up/app', '10 min', holder => 'app-1') AS app \gset
RESET ROLE;
SELECT lease.acquire('up/own', '10 min', holder => 'owner-1', session_bound => false) AS own \gset
SELECT lease.release('up/released', lease.acquire('up/released', '10 min')) AS released;
CREATE TEMP TABLE before AS
SELECT resource, token, holder, owner::regrole::text AS owner, expires_at, released FROM lease.grants;
SELECT max(token) AS max_before FROM before \gset
SELECT * FROM public.upgrade_checks(:app, :own, :max_before);

ALTER EXTENSION pg_lease UPDATE TO '0.2.0';
SELECT extversion FROM pg_extension WHERE extname = 'pg_lease';
SELECT * FROM public.upgrade_checks(:app, :own, :max_before);
-- 0.2.0: owner is a regrole; lease.stats() has a wakeups column
SELECT format_type(atttypid, NULL) AS owner_type FROM pg_attribute
 WHERE attrelid = 'lease.grants'::regclass AND attname = 'owner';
SELECT proargnames FROM pg_proc WHERE oid = 'lease.stats()'::regprocedure;

ALTER EXTENSION pg_lease UPDATE TO '0.3.0';
SELECT extversion FROM pg_extension WHERE extname = 'pg_lease';
SELECT * FROM public.upgrade_checks(:app, :own, :max_before);
SELECT count(*) AS grants_with_a_value FROM lease.grants WHERE value IS NOT NULL;
-- 0.3.0: elections
SELECT lease.acquire('up/election', '10 min', '0', 'c1', false, 'v1') AS term \gset
SELECT term = :term AS leader_term, value FROM lease.leader('up/election');
SELECT value FROM lease.leases WHERE resource = 'up/election';
SELECT lease.proclaim('up/election', :term, 'v2') AS proclaimed;
SELECT value FROM lease.observe('up/election', :term, 'v1', '1 s');

ALTER EXTENSION pg_lease UPDATE TO '0.4.0';
SELECT extversion FROM pg_extension WHERE extname = 'pg_lease';
SELECT * FROM public.upgrade_checks(:app, :own, :max_before);
-- 0.4.0: every grant made before is an exclusive lock, each resource has its row
SELECT mode, permits, count(*) FROM lease.grants GROUP BY mode, permits;
SELECT count(*) = (SELECT count(DISTINCT resource) FROM lease.grants) AS resource_rows
  FROM lease.resources;
SELECT term = :term AS election_kept, value FROM lease.leader('up/election');
-- held exclusively since 0.1.0: a reader waits; readers and permits of free resources are granted
SELECT lease.acquire_shared('up/own', '1 min', holder => 'reader') IS NULL AS reader_kept_out;
SELECT lease.acquire_shared('up/read', '1 min', holder => 'reader') > :max_before AS reader_granted;
SELECT lease.acquire_permit('up/permit', '1 min', 2, holder => 'p1') IS NOT NULL AS permit_granted;
SELECT lease.fence('up/own', :own, true) = :own AS fenced;

ALTER EXTENSION pg_lease UPDATE TO '0.5.0';
SELECT extversion FROM pg_extension WHERE extname = 'pg_lease';
SELECT * FROM public.upgrade_checks(:app, :own, :max_before);
-- 0.5.0: renew and release naming the holder, of grants made since 0.1.0 too;
-- EXECUTE to PUBLIC as the forms without it
SELECT lease.renew('up/own', :own, '10 min', 'app-1') AS other_holder_renews,
	   lease.renew('up/own', :own, '10 min', 'owner-1') AS holder_renews;
UPDATE before b SET expires_at = g.expires_at FROM lease.grants g WHERE g.resource = b.resource AND b.resource = 'up/own';
SELECT lease.release('up/read', (SELECT token FROM lease.grants WHERE resource = 'up/read'), 'reader')
	AS reader_released_by_holder;
SELECT has_function_privilege('lease_upgrade_app', 'lease.release(text, int8, text)', 'EXECUTE') AND
	   has_function_privilege('lease_upgrade_app', 'lease.renew(text, int8, interval, text)', 'EXECUTE')
	   AS public_executes_holder_forms;

-- the current version, and the schema of a fresh install
SELECT extversion = (SELECT default_version FROM pg_available_extensions WHERE name = 'pg_lease') AS current
  FROM pg_extension WHERE extname = 'pg_lease';
SELECT count(*) AS differences FROM
  ((TABLE fresh EXCEPT ALL SELECT * FROM public.upgrade_describe())
   UNION ALL (SELECT * FROM public.upgrade_describe() EXCEPT ALL TABLE fresh)) d;

--
-- 0.1.0 straight to the current version: one ALTER EXTENSION runs the chain
--
SET client_min_messages = warning;
DROP EXTENSION pg_lease CASCADE;
RESET client_min_messages;
CREATE EXTENSION pg_lease VERSION '0.1.0';
GRANT EXECUTE ON FUNCTION lease.break(text) TO lease_upgrade_admin;
SET ROLE lease_upgrade_app;
SELECT lease.acquire('up/app', '10 min', holder => 'app-1') AS app \gset
RESET ROLE;
SELECT lease.acquire('up/own', '10 min', holder => 'owner-1', session_bound => false) AS own \gset
TRUNCATE before;
INSERT INTO before
SELECT resource, token, holder, owner::regrole::text, expires_at, released FROM lease.grants;
SELECT max(token) AS max_before FROM before \gset
ALTER EXTENSION pg_lease UPDATE;
SELECT extversion = (SELECT default_version FROM pg_available_extensions WHERE name = 'pg_lease') AS current
  FROM pg_extension WHERE extname = 'pg_lease';
SELECT * FROM public.upgrade_checks(:app, :own, :max_before);
SELECT mode, permits, value, count(*) FROM lease.grants GROUP BY mode, permits, value;
SELECT count(*) AS differences FROM
  ((TABLE fresh EXCEPT ALL SELECT * FROM public.upgrade_describe())
   UNION ALL (SELECT * FROM public.upgrade_describe() EXCEPT ALL TABLE fresh)) d;

-- as found: the current version installed, no role or function of this test left
SET client_min_messages = warning;
DROP EXTENSION pg_lease CASCADE;
RESET client_min_messages;
CREATE EXTENSION pg_lease;
DROP FUNCTION public.upgrade_checks(int8, int8, int8);
DROP FUNCTION public.upgrade_describe();
DROP ROLE lease_upgrade_app;
DROP ROLE lease_upgrade_admin;
