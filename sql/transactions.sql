--
-- transactions: grants and releases take effect at commit and vanish on
-- rollback; REPEATABLE READ and SERIALIZABLE have defined behaviour.
--

-- acquire then ROLLBACK leaves no grant, and its token is never reused
BEGIN;
SELECT lease.acquire('tx/a', '10 s') AS rolled_back \gset
SELECT lease.is_current('tx/a', :rolled_back) AS current_inside;
ROLLBACK;
SELECT count(*) AS no_grant_after_rollback FROM lease.leases WHERE resource = 'tx/a';
SELECT lease.acquire('tx/a', '10 s') > :rolled_back AS token_after_rollback_higher;

-- release then ROLLBACK keeps the grant
SELECT lease.acquire('tx/b', '10 s') AS tb \gset
BEGIN;
SELECT lease.release('tx/b', :tb) AS released_inside;
ROLLBACK;
SELECT lease.is_current('tx/b', :tb) AS held_after_release_rollback;

-- renew then ROLLBACK keeps the old expiry
SELECT expires_at AS eb FROM lease.grants WHERE resource = 'tx/b' \gset
BEGIN;
SELECT lease.renew('tx/b', :tb, '1 min') AS renewed_inside;
ROLLBACK;
SELECT expires_at = :'eb' AS expiry_after_renew_rollback FROM lease.grants WHERE resource = 'tx/b';

-- a grant and a write in one transaction commit together
CREATE TABLE work (token bigint);
BEGIN;
SELECT lease.acquire('tx/c', '10 s') AS tc \gset
INSERT INTO work SELECT lease.fence('tx/c', :tc);
COMMIT;
SELECT count(*) AS fenced_write_committed FROM work WHERE token = :tc;

-- REPEATABLE READ / SERIALIZABLE: a wait is refused with 0A000 and a hint
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT sqlstate('SELECT lease.acquire(''tx/d'', ''10 s'', wait => ''1 s'')') AS rr_wait;
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT sqlstate('SELECT lease.acquire(''tx/d'', ''10 s'', wait => ''1 s'')') AS serializable_wait;
ROLLBACK;

-- ... and everything without a wait works as in READ COMMITTED
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT lease.acquire('tx/d', '10 s', holder => 'rr') AS td \gset
SELECT lease.acquire('tx/d', '10 s', holder => 'other') IS NULL AS rr_contended_null;
SELECT lease.renew('tx/d', :td, '20 s') AS rr_renew;
SELECT lease.fence('tx/d', :td) = :td AS rr_fence;
COMMIT;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT lease.release('tx/d', :td) AS serializable_release;
SELECT lease.acquire('tx/d', '10 s', holder => 'other') > :td AS serializable_regrant_higher;
COMMIT;

-- many grants in one transaction: an acquire's decision keeps no entry in
-- the server's lock table (max_locks_per_transaction), only row locks
BEGIN;
SELECT count(lease.acquire('tx/many/' || i, '1 min')) AS granted_in_one_transaction
  FROM pg_catalog.generate_series(1, 20000) i;
ROLLBACK;
