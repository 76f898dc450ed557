/*
 * tests/faults/hostile/setup.sql -- schema "hostile" for hostile_input.sh
 *
 * Run once by a superuser in the storm's database, after CREATE EXTENSION
 * pg_lease and before the bystander leases are taken.  It creates:
 *
 * - the roles' tables: hostile.cases (the generated calls), hostile.results
 *   (one row per call tried: outcome and verdict), hostile.issued (tokens the
 *   storm was granted, for calls that reuse a live (resource, token) pair),
 *   hostile.bystanders (leases no storm call may change);
 * - the oracle's eyes: SECURITY DEFINER readers of lease.grants and of the
 *   token sequence (the storm roles have no right on either);
 * - hostile.pool: the argument expressions the generator draws from.
 *
 * The generator is generate.sql, the runner run.sql.
 */
SET client_min_messages = warning;

-- the storm's roles: two ordinary callers (one may break and gc) and the
-- holder of most bystander leases
CREATE ROLE hostile_caller LOGIN;
CREATE ROLE hostile_admin LOGIN;
CREATE ROLE hostile_bystander;
GRANT EXECUTE ON FUNCTION lease.break(text) TO hostile_admin;
GRANT EXECUTE ON FUNCTION lease.gc(interval) TO hostile_admin;

CREATE SCHEMA hostile;
GRANT USAGE ON SCHEMA hostile TO PUBLIC;

CREATE TABLE hostile.cases (
	id			int PRIMARY KEY,
	fn			text NOT NULL,		-- acquire, try_acquire, ..., view_resource, waiters, ...
	params		text[] NOT NULL,	-- the parameters supplied, by name
	exprs		text[] NOT NULL,	-- their SQL expressions
	call		text NOT NULL		-- the statement run (returns one text column)
);

CREATE TABLE hostile.results (
	id			int PRIMARY KEY,
	batch		int NOT NULL,
	role		text NOT NULL,
	isolation	text NOT NULL,
	fn			text NOT NULL,
	call		text NOT NULL,		-- truncated
	args		text NOT NULL,		-- evaluated arguments, truncated
	outcome		text NOT NULL,		-- 'ok' or the SQLSTATE
	result		text,				-- the value returned (truncated), or the message
	verdict		text				-- NULL when the call behaved per the spec
);

CREATE TABLE hostile.issued (
	n			bigserial PRIMARY KEY,
	resource	text NOT NULL,
	token		bigint NOT NULL,
	role		oid NOT NULL
);

CREATE TABLE hostile.bystanders (
	n			int PRIMARY KEY,
	expr		text NOT NULL,		-- the resource as an SQL expression
	resource	text NOT NULL,
	role		text NOT NULL,		-- who holds it
	holder_expr	text NOT NULL,
	token		bigint
);

-- the bystanders' rows before the storm, byte for byte (ctid and xmin included)
CREATE TABLE hostile.bystander_rows (tid text, x text, row_text text);

-- per resource, the highest token seen so far (tokens only move forward)
CREATE TABLE hostile.token_marks (resource text PRIMARY KEY, token bigint NOT NULL);

CREATE TABLE hostile.pool (
	n			serial PRIMARY KEY,
	kind		text NOT NULL,
	expr		text NOT NULL
);

GRANT SELECT, INSERT ON hostile.results, hostile.issued TO PUBLIC;
GRANT USAGE ON SEQUENCE hostile.issued_n_seq TO PUBLIC;
GRANT SELECT ON hostile.cases, hostile.bystanders TO PUBLIC;

/*
 * What the oracle knows of one resource's row.  row_text is ctid, xmin and
 * every column: equal before and after a call means the call changed nothing.
 */
CREATE TYPE hostile.row_state AS (
	found		bool,
	token		bigint,
	owner		oid,
	holder		text,
	expires_at	timestamptz,
	granted_at	timestamptz,
	renewed_at	timestamptz,
	released	bool,
	session_bound bool,
	alive		bool,				-- false: a session-bound grant whose backend is gone
	row_text	text
);

-- peek -- the row of a resource, read with the superuser's rights
CREATE FUNCTION hostile.peek(p_resource text) RETURNS hostile.row_state
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	st hostile.row_state;
BEGIN
	-- the backend list is cached per transaction: see exits that happened since
	PERFORM pg_stat_clear_snapshot();
	SELECT true, g.token, g.owner, g.holder, g.expires_at, g.granted_at, g.renewed_at,
		   g.released, g.backend_pid IS NOT NULL,
		   g.backend_pid IS NULL OR EXISTS (SELECT 1 FROM pg_stat_activity a
											 WHERE a.pid = g.backend_pid
											   AND a.backend_start = g.backend_start),
		   concat_ws(' | ', g.ctid::text, g.xmin::text, g::text)
	  INTO st
	  FROM lease.grants g
	 WHERE g.resource = p_resource;
	st.found := coalesce(st.found, false);
	RETURN st;
END $$;

-- seq_last -- the token sequence's last value
CREATE FUNCTION hostile.seq_last() RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
	SELECT last_value FROM lease.token_seq
$$;

-- holds_other -- does (role, holder) hold a current grant of another resource?
CREATE FUNCTION hostile.holds_other(p_role oid, p_holder text, p_resource text) RETURNS bool
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	PERFORM pg_stat_clear_snapshot();
	RETURN EXISTS (SELECT 1 FROM lease.grants g
					WHERE g.owner = p_role AND g.holder = p_holder
					  AND g.resource <> p_resource
					  AND g.expires_at > clock_timestamp()
					  AND (g.backend_pid IS NULL
						   OR EXISTS (SELECT 1 FROM pg_stat_activity a
									   WHERE a.pid = g.backend_pid AND a.backend_start = g.backend_start)));
END $$;

-- table_counts -- rows in all; rows expiring after t1; rows expired before t2
CREATE FUNCTION hostile.table_counts(t1 timestamptz, t2 timestamptz,
									 OUT total bigint, OUT later bigint, OUT older bigint)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
	SELECT count(*), count(*) FILTER (WHERE expires_at > t1),
		   count(*) FILTER (WHERE expires_at < t2)
	  FROM lease.grants
$$;

-- bystander_token -- the token of bystander lease n (NULL if none)
CREATE FUNCTION hostile.bystander_token(p_n int) RETURNS bigint
LANGUAGE sql STABLE AS $$
	SELECT token FROM hostile.bystanders WHERE n = p_n
$$;

-- live_resource / live_token -- the k-th most recent grant the storm got
CREATE FUNCTION hostile.live_resource(k int) RETURNS text
LANGUAGE sql STABLE AS $$
	SELECT resource FROM hostile.issued ORDER BY n DESC OFFSET k LIMIT 1
$$;
CREATE FUNCTION hostile.live_token(k int) RETURNS bigint
LANGUAGE sql STABLE AS $$
	SELECT token FROM hostile.issued ORDER BY n DESC OFFSET k LIMIT 1
$$;

/*
 * Argument pools.  Each expression is SQL, evaluated as the parameter's
 * type.  Kinds: resource_shared (names many calls fight over), resource
 * (hostile names), ttl_valid, ttl, wait_small (waits that cannot stall the
 * storm on a held resource), wait_big (valid waits that could: used only on
 * fresh resources), wait (invalid), holder_plain, holder, bool, token, pid,
 * ts, retain.
 */
INSERT INTO hostile.pool (kind, expr)
SELECT 'resource_shared', format('%L', 'r/' || i) FROM generate_series(1, 10) i;

INSERT INTO hostile.pool (kind, expr) VALUES
	-- NULL, empty, blanks, byte-length edges (the limit is 256 bytes)
	('resource', 'NULL'), ('resource', 'NULL::text'), ('resource', $e$''$e$),
	('resource', $e$' '$e$), ('resource', $e$'r/1 '$e$), ('resource', $e$'R/1'$e$),
	('resource', $e$repeat('x', 255)$e$), ('resource', $e$repeat('x', 256)$e$),
	('resource', $e$repeat('x', 257)$e$), ('resource', $e$repeat('é', 128)$e$),
	('resource', $e$repeat('é', 129)$e$), ('resource', $e$repeat('x', 254) || 'é'$e$),
	('resource', $e$repeat('x', 255) || 'é'$e$), ('resource', $e$repeat('€', 85)$e$),
	('resource', $e$repeat('€', 86)$e$), ('resource', $e$repeat('🔒', 64)$e$),
	('resource', $e$repeat('🔒', 65)$e$), ('resource', $e$repeat('x', 10240)$e$),
	('resource', $e$repeat('x', 1048576)$e$), ('resource', $e$repeat('é', 524288)$e$),
	('resource', format('%L', repeat('y', 10240))),
	-- non-ASCII: multibyte, emoji, combining marks, bidi and invisible characters
	('resource', $e$'é'$e$), ('resource', $e$'e' || U&'\0301'$e$), ('resource', $e$U&'\00E9'$e$),
	('resource', $e$'🔒🗝️'$e$), ('resource', $e$'👩‍👩‍👧'$e$), ('resource', $e$U&'\+01F600'$e$),
	('resource', $e$U&'\202Eevil/txt.exe'$e$), ('resource', $e$U&'\FEFFbom'$e$),
	('resource', $e$U&'\200B'$e$), ('resource', $e$'日本語/リソース'$e$), ('resource', $e$'Ω≈ç√∫'$e$),
	('resource', $e$'a' || repeat(U&'\0301', 100)$e$), ('resource', $e$'a' || repeat(U&'\0301', 128)$e$),
	('resource', $e$U&'\FFFF'$e$), ('resource', $e$U&'\+10FFFF'$e$),
	-- control characters
	('resource', $e$'r/1' || chr(10)$e$), ('resource', $e$E'tab\there'$e$), ('resource', $e$E'\r\n'$e$),
	('resource', $e$chr(127)$e$), ('resource', $e$E'\x01\x02\x1f'$e$), ('resource', $e$E'\e[31mred'$e$),
	-- NUL and broken encodings: PostgreSQL text cannot hold them, input must fail
	('resource', $e$chr(0)$e$), ('resource', $e$E'a\000b'$e$), ('resource', $e$E'\x00'$e$),
	('resource', $e$convert_from('\x00'::bytea, 'UTF8')$e$), ('resource', $e$convert_from('\x610062'::bytea, 'UTF8')$e$),
	('resource', $e$E'\xff'$e$), ('resource', $e$E'\xc0\x80'$e$), ('resource', $e$convert_from('\xc3'::bytea, 'UTF8')$e$),
	('resource', $e$convert_from('\xeda080'::bytea, 'UTF8')$e$),
	-- quote, backslash and injection soups
	('resource', $e$''''$e$), ('resource', $e$''''''''$e$), ('resource', $e$'\'$e$),
	('resource', $e$E'\\\\'$e$), ('resource', $e$E'\\'';--'$e$), ('resource', $e$'''); DROP TABLE lease.grants; --'$e$),
	('resource', $e$'$$'$e$), ('resource', $e$$q$'"$$\$q$$e$), ('resource', $e$'%s%n%x%d'$e$),
	('resource', $e$'\x00'$e$), ('resource', $e$'"'$e$), ('resource', $e$'*'$e$), ('resource', $e$'%'$e$),
	('resource', $e$'_'$e$), ('resource', $e$'${PATH}$(id)`id`'$e$), ('resource', $e$'r/%'$e$),
	('resource', $e$repeat('''\', 128)$e$), ('resource', $e$repeat('''\', 129)$e$),
	-- other types that coerce to text
	('resource', $e$'r/1'::char(6)$e$), ('resource', $e$'r/1'::varchar(2)$e$), ('resource', $e$'r/1'::name$e$),
	('resource', $e$repeat('n', 300)::name$e$), ('resource', $e$'r/' || 1$e$), ('resource', $e$1::text$e$),
	-- names a user might take for the extension's own
	('resource', $e$'pid 1 started 2000-01-01 00:00:00+00'$e$), ('resource', $e$'lease.grants'$e$);

INSERT INTO hostile.pool (kind, expr)
SELECT 'resource', format('chr(%s)', k) FROM generate_series(1, 31) k
UNION ALL
SELECT 'resource', format('%L', 'ctl/' || chr(k) || '/end') FROM generate_series(1, 31) k;

-- the expressions that would carry a NUL byte (text cannot): each must fail at input
CREATE TABLE hostile.nul_exprs (expr text PRIMARY KEY);
INSERT INTO hostile.nul_exprs VALUES
	($e$chr(0)$e$), ($e$E'a\000b'$e$), ($e$E'\x00'$e$), ($e$convert_from('\x00'::bytea, 'UTF8')$e$),
	($e$convert_from('\x610062'::bytea, 'UTF8')$e$), ($e$('1 s' || chr(0))::interval$e$), ($e$E'h\000'$e$);
GRANT SELECT ON hostile.nul_exprs TO PUBLIC;

INSERT INTO hostile.pool (kind, expr) VALUES
	('ttl_valid', $e$'1 s'$e$), ('ttl_valid', $e$'10 min'$e$), ('ttl_valid', $e$'1 hour'$e$),
	('ttl_valid', $e$'1 day'$e$), ('ttl_valid', $e$'24 hours'$e$), ('ttl_valid', $e$'86400 s'$e$),
	('ttl_valid', $e$'1 microsecond'$e$), ('ttl_valid', $e$'0.000001 s'$e$), ('ttl_valid', $e$'1 ms'$e$),
	('ttl_valid', $e$'1 day -86399 seconds'$e$), ('ttl_valid', $e$'-1 day +86401 seconds'$e$),
	('ttl_valid', $e$'1 day -86399.999999 s'$e$), ('ttl_valid', $e$'PT1M'$e$), ('ttl_valid', $e$'@ 5 mins'$e$),
	('ttl_valid', $e$'00:00:30'$e$), ('ttl_valid', $e$'30'$e$), ('ttl_valid', $e$'1 s'::interval$e$),
	('ttl_valid', $e$interval '2 s'$e$), ('ttl_valid', $e$make_interval(secs => 3)$e$),
	('ttl_valid', $e$'23:59:59.999999'$e$), ('ttl_valid', $e$'1 week -6 days'$e$),
	('ttl', 'NULL'), ('ttl', 'NULL::interval'), ('ttl', $e$'0'$e$), ('ttl', $e$'-0 s'$e$),
	('ttl', $e$'-1 s'$e$), ('ttl', $e$'-1 microsecond'$e$), ('ttl', $e$'0.0000001 s'$e$),
	('ttl', $e$'0.0000005 s'$e$), ('ttl', $e$'1 mon'$e$), ('ttl', $e$'1 year'$e$),
	('ttl', $e$'1 mon -30 days'$e$), ('ttl', $e$'-1 mon 31 days'$e$), ('ttl', $e$'1 day 1 s'$e$),
	('ttl', $e$'86400.000001 s'$e$), ('ttl', $e$'1 day -86400 s'$e$), ('ttl', $e$'2 days'$e$),
	('ttl', $e$'106751992 days'$e$), ('ttl', $e$'106751991 days'$e$),
	('ttl', $e$'2147483647 days 2562047788 hours'$e$), ('ttl', $e$'-2147483648 days -2562047788 hours'$e$),
	('ttl', $e$'2147483647 days -2562047788 hours'$e$), ('ttl', $e$'-2147483648 days 2562047788 hours'$e$),
	('ttl', $e$'178000000 years'$e$), ('ttl', $e$'-178000000 years'$e$), ('ttl', $e$'1 decade'$e$),
	('ttl', $e$'P1M'$e$), ('ttl', $e$'@ 1 day ago'$e$),
	('ttl', $e$'infinity'$e$), ('ttl', $e$'-infinity'$e$), ('ttl', $e$'nonsense'$e$), ('ttl', $e$''$e$),
	('ttl', $e$'1e-9 s'$e$), ('ttl', $e$'9999999999 days'$e$), ('ttl', $e$'1 fortnight'$e$),
	('ttl', $e$interval '1 day' * 1e10$e$), ('ttl', $e$('1 s' || chr(0))::interval$e$), ('ttl', $e$E'1\x01s'$e$),
	('ttl', $e$'1 s'''$e$), ('ttl', $e$'１ s'$e$);

INSERT INTO hostile.pool (kind, expr) VALUES
	('wait_small', $e$'0'$e$), ('wait_small', $e$'0 s'$e$), ('wait_small', $e$'-0'$e$),
	('wait_small', $e$'1 microsecond'$e$), ('wait_small', $e$'1 ms'$e$), ('wait_small', $e$'20 ms'$e$),
	('wait_small', $e$'1 day -86399.99 s'$e$), ('wait_small', $e$'0.0000001 s'$e$),
	('wait_big', $e$'1 s'$e$), ('wait_big', $e$'1 hour'$e$), ('wait_big', $e$'1000000 days'$e$),
	('wait_big', $e$'106751991 days'$e$), ('wait_big', $e$'2147483647 days'$e$),
	('wait_big', $e$'2147483647 days 2562047787 hours'$e$), ('wait_big', $e$'1 day -1 s'$e$),
	('wait', 'NULL'), ('wait', $e$'-1 s'$e$), ('wait', $e$'-1 microsecond'$e$), ('wait', $e$'1 mon'$e$),
	('wait', $e$'-1 mon'$e$), ('wait', $e$'1 year -365 days'$e$), ('wait', $e$'-2147483648 days'$e$),
	('wait', $e$'2147483647 days 2562047788 hours'$e$), ('wait', $e$'-2147483648 days -2562047788 hours'$e$),
	('wait', $e$'1 day -86401 s'$e$), ('wait', $e$'infinity'$e$), ('wait', $e$'soon'$e$),
	('wait', $e$'178000000 years'$e$);

INSERT INTO hostile.pool (kind, expr) VALUES
	('retain', 'NULL'), ('retain', $e$'0'$e$), ('retain', $e$'1 hour'$e$), ('retain', $e$'1 microsecond'$e$),
	('retain', $e$'1 day'$e$), ('retain', $e$'1000 days'$e$), ('retain', $e$'1000000 days'$e$),
	('retain', $e$'10000000 days'$e$), ('retain', $e$'106751991 days'$e$), ('retain', $e$'2147483647 days'$e$),
	('retain', $e$'2147483647 days 2562047788 hours'$e$), ('retain', $e$'-1 s'$e$), ('retain', $e$'-0'$e$),
	('retain', $e$'1 mon'$e$), ('retain', $e$'1 year'$e$), ('retain', $e$'-1 day +86401 seconds'$e$),
	('retain', $e$'1 day -86401 seconds'$e$), ('retain', $e$'infinity'$e$), ('retain', $e$'-infinity'$e$),
	('retain', $e$'178000000 years'$e$), ('retain', $e$'x'$e$);

INSERT INTO hostile.pool (kind, expr)
SELECT 'holder_plain', format('%L', 'h' || i) FROM generate_series(1, 5) i;
INSERT INTO hostile.pool (kind, expr) VALUES
	('holder', 'NULL'), ('holder', $e$''$e$), ('holder', $e$' '$e$), ('holder', $e$repeat('h', 256)$e$),
	('holder', $e$repeat('h', 257)$e$), ('holder', $e$repeat('ĥ', 128)$e$), ('holder', $e$repeat('ĥ', 129)$e$),
	('holder', $e$repeat('h', 1048576)$e$), ('holder', $e$'🔒'$e$), ('holder', $e$'h' || U&'\0301'$e$),
	('holder', $e$E'h\x01\x1f'$e$), ('holder', $e$chr(0)$e$), ('holder', $e$E'h\000'$e$),
	('holder', $e$E'\xfe'$e$), ('holder', $e$''''''$e$), ('holder', $e$E'\\'$e$),
	('holder', $e$'pid 1 started 2000-01-01 00:00:00+00'$e$), ('holder', $e$'bystander-1'$e$),
	('holder', $e$'H1'$e$), ('holder', $e$'h1 '$e$), ('holder', $e$'%s'$e$);

INSERT INTO hostile.pool (kind, expr) VALUES
	('bool', 'false'), ('bool', 'true'), ('bool', 'NULL'), ('bool', 'NULL::boolean'),
	('bool', $e$'t'$e$), ('bool', $e$'yes'$e$), ('bool', $e$'on'$e$), ('bool', $e$'0'$e$),
	('bool', $e$'maybe'$e$), ('bool', $e$''$e$), ('bool', '1::boolean');

INSERT INTO hostile.pool (kind, expr) VALUES
	('token', '0'), ('token', '-1'), ('token', '1'), ('token', '2'), ('token', '9223372036854775807'),
	('token', '-9223372036854775808'), ('token', 'NULL'), ('token', 'NULL::bigint'),
	('token', $e$'9223372036854775808'$e$), ('token', $e$'-9223372036854775809'$e$),
	('token', $e$'abc'$e$), ('token', $e$' 42 '$e$), ('token', $e$'1e3'$e$), ('token', $e$''$e$),
	('token', '2147483648'), ('token', $e$'0x10'$e$), ('token', '(-9223372036854775807 - 1)'),
	('token', $e$'+7'$e$), ('token', '3::smallint');

INSERT INTO hostile.pool (kind, expr) VALUES
	('pid', '0'), ('pid', '-1'), ('pid', '1'), ('pid', '2147483647'), ('pid', '(-2147483647 - 1)'),
	('pid', 'pg_backend_pid()'), ('pid', $e$'2147483648'$e$), ('pid', 'NULL'), ('pid', $e$'x'$e$),
	('ts', 'now()'), ('ts', $e$'infinity'$e$), ('ts', $e$'-infinity'$e$), ('ts', 'NULL'),
	('ts', $e$'epoch'$e$), ('ts', $e$'4714-11-24 00:00:00+00 BC'$e$), ('ts', $e$'294276-12-31 23:59:59+00'$e$),
	('ts', $e$'294277-01-01'$e$), ('ts', $e$'garbage'$e$),
	('ts', '(SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid())');

/*
 * Bystanders: leases no storm call may change.  Most are held by another
 * role (the storm gets their tokens and holder labels, and must still be
 * refused); two are held by hostile_caller itself under a holder label the
 * storm never uses, so only a renew or release with their token (which the
 * storm never passes to those) could change them.  Some sit on names the
 * storm fights over (r/7, r/8), some on hostile names.
 */
INSERT INTO hostile.bystanders (n, expr, resource, role, holder_expr) VALUES
	(1, $e$'bystander/plain'$e$, '', 'hostile_bystander', $e$'bystander-1'$e$),
	(2, $e$'r/7'$e$, '', 'hostile_bystander', $e$'h1'$e$),
	(3, $e$repeat('b', 256)$e$, '', 'hostile_bystander', $e$repeat('h', 256)$e$),
	(4, $e$'bystander/' || chr(1) || chr(31)$e$, '', 'hostile_bystander', 'NULL'),
	(5, $e$'bystander/é🔒' || U&'\0301'$e$, '', 'hostile_bystander', $e$'h2'$e$),
	(6, $e$E'bystander/\'"\\'$e$, '', 'hostile_bystander', $e$'bystander-quote'$e$),
	(7, $e$'own/bystander'$e$, '', 'hostile_caller', $e$'caller-bystander'$e$),
	(8, $e$'r/8'$e$, '', 'hostile_caller', $e$'caller-bystander'$e$);

-- Start tokens far above the small numbers of the token pool ('+7', 3::smallint,
-- ...), so that only hostile.bystander_token() can name a bystander's token:
-- a valid renew of hostile_caller's own bystanders must stay impossible.
SELECT setval('lease.token_seq', 100000);

DO $$
DECLARE
	b record;
	r text;
	t bigint;
BEGIN
	FOR b IN SELECT * FROM hostile.bystanders ORDER BY n LOOP
		EXECUTE format('SELECT (%s)::text', b.expr) INTO r;
		EXECUTE format('SET ROLE %I', b.role);
		EXECUTE format('SELECT lease.acquire(%s, %L, holder => %s)', b.expr, '1 day', b.holder_expr) INTO t;
		RESET ROLE;
		IF t IS NULL THEN
			RAISE EXCEPTION 'bystander % not granted', b.n;
		END IF;
		UPDATE hostile.bystanders SET resource = r, token = t WHERE n = b.n;
	END LOOP;
END $$;

-- the bystanders' resources and tokens join the pools
INSERT INTO hostile.pool (kind, expr)
SELECT 'resource_bystander', expr FROM hostile.bystanders ORDER BY n;
INSERT INTO hostile.pool (kind, expr)
SELECT CASE WHEN role = 'hostile_bystander' THEN 'token_bystander' ELSE 'token_own_bystander' END,
	   format('hostile.bystander_token(%s)', n)
  FROM hostile.bystanders ORDER BY n;
INSERT INTO hostile.pool (kind, expr)
SELECT 'holder', holder_expr FROM hostile.bystanders WHERE role = 'hostile_bystander' ORDER BY n;

INSERT INTO hostile.bystander_rows
SELECT ctid::text, xmin::text, g::text
  FROM lease.grants g WHERE resource IN (SELECT resource FROM hostile.bystanders);
