/*
 * tests/faults/privilege_audit.sql -- the attacker's shadow objects
 *
 * Run by privilege_audit.sh as the ordinary role audit_mallory, which owns
 * schema mallory_tricks and may create schemas (so also "PG_CATALOG", a
 * name that looks like the system schema's).  Each object mimics a name the
 * extension's queries use -- the clock, the sequence, equality and
 * comparison operators, count(*), the view's helpers -- and lies: a clock in
 * the far future, nextval always 1, '=' always true.  With these first in
 * search_path, the lease functions and the view must behave exactly as
 * without them.  (Session-local copies in pg_temp come from the script.)
 */
SET search_path = mallory_tricks, pg_catalog;

-- the clock: the far future makes every grant look expired
CREATE FUNCTION mallory_tricks.clock_timestamp() RETURNS timestamptz
	LANGUAGE sql AS $$ SELECT '2999-01-01 00:00:00+00'::timestamptz $$;
CREATE FUNCTION mallory_tricks.now() RETURNS timestamptz
	LANGUAGE sql AS $$ SELECT '2999-01-01 00:00:00+00'::timestamptz $$;
CREATE FUNCTION mallory_tricks.statement_timestamp() RETURNS timestamptz
	LANGUAGE sql AS $$ SELECT '2999-01-01 00:00:00+00'::timestamptz $$;

-- the sequence: a token of 1 would be below every token issued
CREATE FUNCTION mallory_tricks.nextval(regclass) RETURNS bigint
	LANGUAGE sql AS $$ SELECT 1::bigint $$;
CREATE FUNCTION mallory_tricks.nextval(text) RETURNS bigint
	LANGUAGE sql AS $$ SELECT 1::bigint $$;
CREATE SEQUENCE mallory_tricks.token_seq;

-- the view's helpers, by their unqualified names
CREATE FUNCTION mallory_tricks.session_alive(integer, timestamptz) RETURNS boolean
	LANGUAGE sql AS $$ SELECT true $$;
CREATE FUNCTION mallory_tricks.waiters(text) RETURNS integer
	LANGUAGE sql AS $$ SELECT 99 $$;
CREATE FUNCTION mallory_tricks.pg_backend_pid() RETURNS integer
	LANGUAGE sql AS $$ SELECT 1 $$;

-- a table where the extension keeps its own
CREATE TABLE mallory_tricks.grants (resource text, token bigint, expires_at timestamptz,
									 owner oid, holder text, released boolean);
INSERT INTO mallory_tricks.grants VALUES ('victim/a', 1, 'infinity', 0, 'mallory', false);

-- operators: equal always, ordered always
CREATE FUNCTION mallory_tricks.always(text, text) RETURNS boolean
	LANGUAGE sql AS $$ SELECT true $$;
CREATE FUNCTION mallory_tricks.always(bigint, bigint) RETURNS boolean
	LANGUAGE sql AS $$ SELECT true $$;
CREATE FUNCTION mallory_tricks.always(oid, oid) RETURNS boolean
	LANGUAGE sql AS $$ SELECT true $$;
CREATE FUNCTION mallory_tricks.always(timestamptz, timestamptz) RETURNS boolean
	LANGUAGE sql AS $$ SELECT true $$;
CREATE FUNCTION mallory_tricks.never(timestamptz, timestamptz) RETURNS boolean
	LANGUAGE sql AS $$ SELECT false $$;
CREATE FUNCTION mallory_tricks.far(timestamptz, interval) RETURNS timestamptz
	LANGUAGE sql AS $$ SELECT '2999-01-01 00:00:00+00'::timestamptz $$;
CREATE FUNCTION mallory_tricks.long_ago(timestamptz, timestamptz) RETURNS interval
	LANGUAGE sql AS $$ SELECT '1000 years'::interval $$;
CREATE OPERATOR mallory_tricks.= (LEFTARG = text, RIGHTARG = text, FUNCTION = mallory_tricks.always);
CREATE OPERATOR mallory_tricks.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = mallory_tricks.always);
CREATE OPERATOR mallory_tricks.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = mallory_tricks.always);
CREATE OPERATOR mallory_tricks.<= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = mallory_tricks.always);
CREATE OPERATOR mallory_tricks.< (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = mallory_tricks.always);
CREATE OPERATOR mallory_tricks.> (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = mallory_tricks.never);
CREATE OPERATOR mallory_tricks.+ (LEFTARG = timestamptz, RIGHTARG = interval, FUNCTION = mallory_tricks.far);
CREATE OPERATOR mallory_tricks.- (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = mallory_tricks.long_ago);

-- count(*) that starts at 42
CREATE AGGREGATE mallory_tricks.count(*) (SFUNC = pg_catalog.int8inc, STYPE = int8, INITCOND = '42');

-- names that look qualified, in a schema that looks like the system's
CREATE FUNCTION mallory_tricks."pg_catalog.clock_timestamp"() RETURNS timestamptz
	LANGUAGE sql AS $$ SELECT '2999-01-01 00:00:00+00'::timestamptz $$;
CREATE SCHEMA "PG_CATALOG";
CREATE FUNCTION "PG_CATALOG".clock_timestamp() RETURNS timestamptz
	LANGUAGE sql AS $$ SELECT '1970-01-01 00:00:00+00'::timestamptz $$;
CREATE FUNCTION "PG_CATALOG".nextval(regclass) RETURNS bigint
	LANGUAGE sql AS $$ SELECT 1::bigint $$;
CREATE OPERATOR "PG_CATALOG".= (LEFTARG = text, RIGHTARG = text, FUNCTION = mallory_tricks.always);
