--
-- bad_input: every invalid argument fails with its documented SQLSTATE and
-- leaves lease.grants byte-for-byte as it was (same tuples, same ctid/xmin)
-- and the token sequence where it was.
--
SELECT lease.acquire('bad/held', '1 min', holder => 'keeper') AS t \gset

CREATE TEMP TABLE before AS SELECT ctid::text AS tid, xmin::text AS x, * FROM lease.grants;
SELECT last_value AS seq_before FROM lease.token_seq \gset

CREATE TEMP TABLE cases (n serial, call text);
INSERT INTO cases (call) VALUES
	-- resource
	($$lease.acquire(NULL, '10 s')$$),
	($$lease.acquire('', '10 s')$$),
	($$lease.acquire(repeat('x', 257), '10 s')$$),
	($$lease.acquire(repeat('é', 129), '10 s')$$),
	($$lease.try_acquire(NULL, '10 s')$$),
	($$lease.renew(NULL, 1, '10 s')$$),
	($$lease.release('', 1)$$),
	($$lease.fence(repeat('x', 300), 1)$$),
	($$lease.is_current(NULL, 1)$$),
	($$lease.break(NULL)$$),
	($$lease.break('')$$),
	-- ttl
	($$lease.acquire('bad/held', NULL)$$),
	($$lease.acquire('bad/new', '0 s')$$),
	($$lease.acquire('bad/new', '-1 s')$$),
	($$lease.acquire('bad/new', '1 day -24 hours -1 microsecond')$$),
	($$lease.acquire('bad/new', '1 mon')$$),
	($$lease.acquire('bad/new', '1 year')$$),
	($$lease.acquire('bad/new', '1 day 1 second')$$),
	($$lease.acquire('bad/new', '178000000 years')$$),
	($$lease.acquire('bad/new', '106751992 days')$$),
	($$lease.acquire('bad/new', 'infinity')$$),
	($$lease.try_acquire('bad/new', '-5 min')$$),
	($$lease.renew('bad/held', TOKEN, '0 s')$$),
	($$lease.renew('bad/held', TOKEN, '1 mon')$$),
	($$lease.renew('bad/held', TOKEN, NULL)$$),
	($$lease.renew('bad/held', TOKEN, '2 days')$$),
	-- wait
	($$lease.acquire('bad/new', '10 s', NULL)$$),
	($$lease.acquire('bad/new', '10 s', '-1 s')$$),
	($$lease.acquire('bad/new', '10 s', '1 mon')$$),
	-- holder
	($$lease.acquire('bad/new', '10 s', '0', '')$$),
	($$lease.acquire('bad/new', '10 s', '0', repeat('h', 257))$$),
	($$lease.try_acquire('bad/new', '10 s', '')$$),
	-- session_bound
	($$lease.acquire('bad/new', '10 s', '0', NULL, NULL)$$),
	($$lease.try_acquire('bad/new', '10 s', NULL, NULL)$$),
	-- token
	($$lease.renew('bad/held', 0, '10 s')$$),
	($$lease.renew('bad/held', -1, '10 s')$$),
	($$lease.renew('bad/held', NULL, '10 s')$$),
	($$lease.release('bad/held', 0)$$),
	($$lease.release('bad/held', -9223372036854775808)$$),
	($$lease.fence('bad/held', 0)$$),
	($$lease.fence('bad/held', NULL)$$),
	($$lease.is_current('bad/held', -1)$$),
	-- gc
	($$lease.gc(NULL)$$),
	($$lease.gc('-1 s')$$),
	($$lease.gc('1 mon')$$),
	-- valid calls that must change nothing
	($$lease.release('bad/held', 9223372036854775807)$$),
	($$lease.renew('bad/held', 9223372036854775807, '10 s')$$),
	($$lease.is_current('bad/held', TOKEN)$$),
	-- the holder of renew and release (0.5.0): it names a grant, so no NULL
	($$lease.renew(NULL, 1, '10 s', 'keeper')$$),
	($$lease.renew('bad/held', TOKEN, '10 s', NULL)$$),
	($$lease.renew('bad/held', TOKEN, '10 s', '')$$),
	($$lease.renew('bad/held', TOKEN, '0 s', 'keeper')$$),
	($$lease.release('bad/held', TOKEN, NULL)$$),
	($$lease.release('bad/held', TOKEN, repeat('h', 257))$$),
	($$lease.release('bad/held', 0, 'keeper')$$),
	-- valid calls of another holder: false, nothing changed
	($$lease.renew('bad/held', TOKEN, '10 s', 'someone')$$),
	($$lease.release('bad/held', TOKEN, 'someone')$$);

SELECT n, call, sqlstate('SELECT ' || replace(call, 'TOKEN', :'t')) AS result FROM cases ORDER BY n;

SELECT NOT EXISTS (SELECT ctid::text, xmin::text, * FROM lease.grants EXCEPT SELECT * FROM before)
   AND NOT EXISTS (SELECT * FROM before EXCEPT SELECT ctid::text, xmin::text, * FROM lease.grants)
	   AS table_unchanged;
SELECT last_value = :seq_before AS no_token_drawn FROM lease.token_seq;
SELECT lease.is_current('bad/held', :t) AS holder_still_current;

-- the full error texts, once each kind
SELECT lease.acquire('', '10 s');
SELECT lease.acquire('bad/new', '2 days');
SELECT lease.acquire('bad/new', '1 mon');
SELECT lease.acquire(NULL, '10 s');

-- the settings are named as the SQL schema is (lease.*), and the prefix is
-- reserved: a misspelt setting is an error, not a silently ignored placeholder
SHOW lease.max_ttl;
SHOW lease.poll_interval;
SET lease.max_tll = '1h';

-- a missing lease table is reported without recommending DROP EXTENSION +
-- CREATE EXTENSION, which would restart tokens at 1
BEGIN;
ALTER TABLE lease.grants RENAME TO grants_moved;
SELECT lease.try_acquire('bad/no-table', '10 s');
ROLLBACK;
SELECT count(*) AS grants_table_back FROM lease.grants WHERE resource = 'bad/held';
