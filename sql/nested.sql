--
-- nested: a holder that holds an unexpired lease may not wait for another
-- (LS002), so lease waits cannot deadlock.
--
SELECT lease.acquire('nest/a', '1 min') AS a \gset

-- waiting for another resource while holding one is refused
SELECT sqlstate('SELECT lease.acquire(''nest/b'', ''1 min'', wait => ''1 s'')') AS wait_while_holding;
SELECT count(*) AS nothing_granted FROM lease.grants WHERE resource = 'nest/b';

-- ... also with the same explicit holder label
SELECT lease.acquire('nest/x', '1 min', holder => 'job-7') AS x \gset
SELECT sqlstate('SELECT lease.acquire(''nest/y'', ''1 min'', ''1 s'', ''job-7'')') AS labelled_wait_while_holding;
SELECT lease.release('nest/x', :x) AS released_x;

-- a try without a wait cannot deadlock, so it is allowed
SELECT lease.acquire('nest/b', '1 min') AS b \gset
SELECT :b > 0 AS try_while_holding_allowed;

-- asking again for a resource it holds is an idempotent re-acquire, not a wait
SELECT lease.acquire('nest/a', '1 min', wait => '1 s') = :a AS reacquire_held_with_wait;

-- once released, waiting is allowed again
SELECT lease.release('nest/a', :a) AS released_a;
SELECT lease.release('nest/b', :b) AS released_b;
SELECT lease.acquire('nest/c', '1 min', wait => '1 s') > :b AS wait_after_release;

-- an expired grant does not count as held
SELECT lease.acquire('nest/d', '100 ms') AS d \gset
SELECT lease.release('nest/c', lease.acquire('nest/c', '1 min')) AS released_c;
SELECT pg_sleep(0.2);
SELECT lease.acquire('nest/e', '1 min', wait => '1 s') > :d AS wait_after_expiry;

-- the full error text, once
SELECT lease.acquire('nest/g', '1 min', holder => 'job-9') IS NOT NULL AS granted_g;
SELECT lease.acquire('nest/f', '1 min', wait => '1 s', holder => 'job-9');

-- the check is exact: grants that were rolled back do not push a held one
-- out of sight (the backend once kept only its 64 most recent grants)
SELECT lease.acquire('nest/kept', '1 min', holder => 'job-h') IS NOT NULL AS granted_kept;
DO $$
BEGIN
	FOR i IN 1..80 LOOP
		BEGIN
			PERFORM lease.acquire('nest/rolled-back/' || i, '1 min', holder => 'job-h');
			RAISE EXCEPTION 'roll back';
		EXCEPTION WHEN raise_exception THEN
			NULL;
		END;
	END LOOP;
END $$;
SELECT count(*) AS rolled_back_grants_left FROM lease.grants WHERE resource LIKE 'nest/rolled-back/%';
SELECT sqlstate('SELECT lease.acquire(''nest/after-rollbacks'', ''1 min'', wait => ''1 s'', holder => ''job-h'')')
	AS wait_while_holding_after_80_rollbacks;
SELECT count(*) AS nothing_granted_after_rollbacks FROM lease.grants WHERE resource = 'nest/after-rollbacks';

-- ... nor do grants that expired meanwhile
SELECT count(lease.acquire('nest/expired/' || i, '1 ms', holder => 'job-h')) AS expired_grants
  FROM generate_series(1, 80) i;
SELECT pg_sleep(0.01);
SELECT sqlstate('SELECT lease.acquire(''nest/after-expiries'', ''1 min'', wait => ''1 s'', holder => ''job-h'')')
	AS wait_while_holding_after_80_expiries;

-- a holder label is per role: another role using the same label holds
-- nothing and may wait
SET client_min_messages = warning;
DROP ROLE IF EXISTS lease_nest_other;
RESET client_min_messages;
CREATE ROLE lease_nest_other;
SET ROLE lease_nest_other;
SELECT lease.acquire('nest/other-role', '1 min', wait => '1 s', holder => 'job-h') IS NOT NULL
	AS other_role_same_label_may_wait;
SELECT lease.release('nest/other-role', token) AS released_other_role
  FROM lease.leases WHERE resource = 'nest/other-role';
RESET ROLE;
DROP ROLE lease_nest_other;
