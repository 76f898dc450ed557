--
-- fence: the current token passes; stale, released and expired tokens fail
-- with LS001 and write nothing.  (The blocking side is in tests/isolation.)
--
CREATE TABLE ledger (resource text, token bigint, note text);

SELECT lease.acquire('fence/a', '10 s', holder => 'w1') AS t1 \gset

-- current token: fence returns it, and the write commits
BEGIN;
SELECT lease.fence('fence/a', :t1) = :t1 AS fence_current_passes;
INSERT INTO ledger VALUES ('fence/a', :t1, 'w1 first');
COMMIT;

-- the fence holds the grant's row FOR SHARE until the transaction ends
BEGIN;
SELECT lease.fence('fence/a', :t1) = :t1 AS fenced_again;
SELECT count(*) AS row_share_locked
  FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
 WHERE c.relname = 'grants' AND l.pid = pg_backend_pid() AND l.mode = 'RowShareLock';
COMMIT;

-- released token
SELECT lease.release('fence/a', :t1) AS released;
SELECT sqlstate(format('SELECT lease.fence(%L, %s)', 'fence/a', :t1)) AS released_token_fence;

-- stale token: a later grant replaced it
SELECT lease.acquire('fence/a', '10 s', holder => 'w2') AS t2 \gset
SELECT sqlstate(format('SELECT lease.fence(%L, %s)', 'fence/a', :t1)) AS stale_token_fence;
SELECT lease.fence('fence/a', :t2) = :t2 AS new_token_fence_passes;

-- expired token
SELECT lease.acquire('fence/b', '200 ms', holder => 'w1') AS b1 \gset
SELECT pg_sleep(0.3);
SELECT sqlstate(format('SELECT lease.fence(%L, %s)', 'fence/b', :b1)) AS expired_token_fence;

-- never-issued token, unknown resource
SELECT sqlstate('SELECT lease.fence(''fence/a'', 9223372036854775807)') AS unknown_token_fence;
SELECT sqlstate('SELECT lease.fence(''fence/none'', 1)') AS unknown_resource_fence;

-- a failed fence aborts the transaction: its write never lands
\set VERBOSITY sqlstate
BEGIN;
INSERT INTO ledger VALUES ('fence/a', :t1, 'stale write');
SELECT lease.fence('fence/a', :t1);
COMMIT;
\set VERBOSITY default
SELECT count(*) AS stale_write_absent FROM ledger WHERE note = 'stale write';

-- the full error text, once
SELECT lease.fence('fence/none', 1);
