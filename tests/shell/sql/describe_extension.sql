-- describe_extension.sql -- every object of the pg_lease extension, as text:
-- what a fresh install and an upgraded one must agree on (tests/shell/upgrade.sh).
-- Object identities are printed by name, never by OID.
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
ORDER BY 1;
