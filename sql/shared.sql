--
-- shared: reader-writer leases (lease.acquire_shared) and semaphores
-- (lease.acquire_permit), since 0.4.0.  One row per grant, each with its own
-- token, expiry and fence; tokens increase across modes; a mode or permits
-- that disagree with the resource's grants is LS003 and changes nothing.
-- (The waits are in tests/isolation and tests/shell/shared_queue.sh.)
--

-- readers coexist, each with its own token
SELECT lease.acquire_shared('sh/rw', '1 min', holder => 'r1') AS r1 \gset
SELECT lease.acquire_shared('sh/rw', '1 min', holder => 'r2') AS r2 \gset
SELECT :r2 > :r1 AS reader_tokens_increase;
SELECT holder, mode, permits, token = :r1 AS is_r1 FROM lease.leases
 WHERE resource = 'sh/rw' ORDER BY token;

-- a writer is kept out while readers hold
SELECT lease.acquire('sh/rw', '1 min', holder => 'w') IS NULL AS writer_refused;
SELECT lease.try_acquire('sh/rw', '1 min', holder => 'w') IS NULL AS try_writer_refused;

-- the same reader asking again keeps its token; in another mode: LS003, nothing changed
SELECT lease.acquire_shared('sh/rw', '2 min', holder => 'r1') = :r1 AS reader_reacquire_same_token;
CREATE TEMP TABLE before AS SELECT ctid::text AS tid, xmin::text AS x, * FROM lease.grants;
SELECT sqlstate($$SELECT lease.acquire('sh/rw', '1 min', holder => 'r1')$$) AS reader_asks_exclusive;
SELECT sqlstate($$SELECT lease.acquire_permit('sh/rw', '1 min', 2, holder => 'r9')$$) AS permit_on_readers;
SELECT NOT EXISTS (SELECT ctid::text, xmin::text, * FROM lease.grants EXCEPT SELECT * FROM before)
   AND NOT EXISTS (SELECT * FROM before EXCEPT SELECT ctid::text, xmin::text, * FROM lease.grants)
	   AS ls003_changed_nothing;
DROP TABLE before;

-- fences: any current grant passes the plain form; only a grant held alone the exclusive one
SELECT lease.fence('sh/rw', :r1) = :r1 AS reader_fence_passes;
SELECT lease.fence('sh/rw', :r1, exclusive => false) = :r1 AS reader_fence_not_exclusive_passes;
SELECT sqlstate(format('SELECT lease.fence(%L, %s, exclusive => true)', 'sh/rw', :r1)) AS reader_exclusive_fence;
SELECT sqlstate($$SELECT lease.fence('sh/rw', 1, NULL)$$) AS null_exclusive;

-- renew and release act on exactly one grant
SELECT lease.renew('sh/rw', :r2, '3 min') AS r2_renewed;
SELECT lease.release('sh/rw', :r1) AS r1_released;
SELECT lease.is_current('sh/rw', :r1) AS r1_current, lease.is_current('sh/rw', :r2) AS r2_current;
SELECT lease.acquire('sh/rw', '1 min', holder => 'w') IS NULL AS writer_refused_while_r2_holds;
SELECT lease.release('sh/rw', :r2) AS r2_released;

-- the last reader gone, the writer gets a token above every reader's
SELECT lease.acquire('sh/rw', '1 min', holder => 'w') AS w \gset
SELECT :w > :r2 AS writer_token_above_readers;
SELECT lease.acquire_shared('sh/rw', '1 min', holder => 'r3') IS NULL AS reader_refused_while_writer_holds;
SELECT lease.fence('sh/rw', :w, exclusive => true) = :w AS writer_exclusive_fence_passes;
SELECT mode, permits FROM lease.leases WHERE resource = 'sh/rw';
SELECT lease.release('sh/rw', :w) AS w_released;
SELECT lease.acquire_shared('sh/rw', '1 min', holder => 'r3') > :w AS reader_after_writer_token_higher;

-- a semaphore of 2: two permits, the third refused
SELECT lease.acquire_permit('sh/sem', '1 min', 2, holder => 'p1') AS p1 \gset
SELECT lease.acquire_permit('sh/sem', '1 min', 2, holder => 'p2') AS p2 \gset
SELECT lease.acquire_permit('sh/sem', '1 min', 2, holder => 'p3') IS NULL AS third_permit_refused;
SELECT count(*) AS permits_held, min(permits) AS permits_min, max(permits) AS permits_max
  FROM lease.leases WHERE resource = 'sh/sem';
SELECT lease.acquire_permit('sh/sem', '2 min', 2, holder => 'p1') = :p1 AS permit_reacquire_same_token;

-- every other limit or mode on it: LS003
SELECT sqlstate($$SELECT lease.acquire_permit('sh/sem', '1 min', 3, holder => 'p3')$$) AS other_limit;
SELECT sqlstate($$SELECT lease.acquire('sh/sem', '1 min', holder => 'p3')$$) AS lock_on_semaphore;
SELECT sqlstate($$SELECT lease.acquire_shared('sh/sem', '1 min', holder => 'p3')$$) AS reader_on_semaphore;
SELECT sqlstate($$SELECT lease.acquire_permit('sh/rw', '1 min', 1, holder => 'p3')$$) AS permit_on_reader;

-- permits out of range
SELECT sqlstate($$SELECT lease.acquire_permit('sh/sem', '1 min', 0)$$) AS zero_permits;
SELECT sqlstate($$SELECT lease.acquire_permit('sh/sem', '1 min', 10001)$$) AS too_many_permits;
SELECT sqlstate($$SELECT lease.acquire_permit('sh/sem', '1 min', NULL)$$) AS null_permits;

-- a permit of several is no sole holder; a permit of one is
SELECT lease.fence('sh/sem', :p1) = :p1 AS permit_fence_passes;
SELECT sqlstate(format('SELECT lease.fence(%L, %s, exclusive => true)', 'sh/sem', :p1)) AS permit_of_two_exclusive_fence;
SELECT lease.acquire_permit('sh/one', '1 min', 1, holder => 'solo') AS solo \gset
SELECT lease.fence('sh/one', :solo, exclusive => true) = :solo AS permit_of_one_exclusive_fence_passes;

-- a released permit admits one more, with a higher token
SELECT lease.release('sh/sem', :p1) AS p1_released;
SELECT lease.acquire_permit('sh/sem', '1 min', 2, holder => 'p3') AS p3 \gset
SELECT :p3 > :p2 AS new_permit_token_higher;
SELECT lease.acquire_permit('sh/sem', '1 min', 2, holder => 'p4') IS NULL AS full_again;

-- one permit's expiry frees only that permit
SELECT lease.acquire_permit('sh/exp', '1 min', 2, holder => 'long') AS long \gset
SELECT lease.acquire_permit('sh/exp', '0.3 s', 2, holder => 'short') AS short \gset
SELECT pg_sleep(0.5);
SELECT lease.is_current('sh/exp', :long) AS long_current, lease.is_current('sh/exp', :short) AS short_current;
SELECT lease.acquire_permit('sh/exp', '1 min', 2, holder => 'next') > :short AS expired_permit_taken;
SELECT count(*) AS grants_left FROM lease.grants WHERE resource = 'sh/exp';

-- break ends every grant of the resource, returning the highest token
SELECT lease."break"('sh/sem') = :p3 AS break_returns_highest;
SELECT count(*) AS none_left FROM lease.leases WHERE resource = 'sh/sem';
SELECT lease."break"('sh/sem') IS NULL AS break_again_null;

-- an election's leader is its exclusive grant; readers keep a campaign out
SELECT lease.acquire_shared('sh/el', '1 min', holder => 'reader') AS rd \gset
SELECT lease.acquire('sh/el', '1 min', '0', 'c1', false, 'v1') IS NULL AS campaign_waits_for_readers;
SELECT term IS NULL AS readers_do_not_lead FROM lease.leader('sh/el');
SELECT lease.release('sh/el', :rd) AS reader_gone;
SELECT lease.acquire('sh/el', '1 min', '0', 'c1', false, 'v1') AS term \gset
SELECT term = :term AND value = 'v1' AS campaign_leads FROM lease.leader('sh/el');

-- a session-bound reader
SELECT lease.acquire_shared('sh/sess', '1 min', holder => 's1', session_bound => true) IS NOT NULL AS session_reader;
SELECT session_bound FROM lease.leases WHERE resource = 'sh/sess';

-- a lock whose resource's only grant is a released lock takes it in place,
-- one UPDATE without the resource's lock (the fast path of locks, as before
-- 0.4.0); after a reader's released grant, the row-per-grant path deletes
-- that grant and inserts
SELECT lease.release('sh/fast', lease.acquire('sh/fast', '1 min', holder => 'w1')) AS first_lock_released;
-- (pg_stat_xact_user_tables may still hold counts of earlier transactions
-- not yet flushed: the test reads the change inside one transaction)
BEGIN;
SELECT n_tup_upd AS u0, n_tup_ins AS i0, n_tup_del AS d0 FROM pg_stat_xact_user_tables WHERE relid = 'lease.grants'::regclass \gset
SELECT lease.acquire('sh/fast', '1 min', holder => 'w2') IS NOT NULL AS lock_again;
SELECT n_tup_upd - :u0 AS updated, n_tup_ins - :i0 AS inserted, n_tup_del - :d0 AS deleted FROM pg_stat_xact_user_tables WHERE relid = 'lease.grants'::regclass;
COMMIT;
SELECT count(*) AS one_row FROM lease.grants WHERE resource = 'sh/fast';
SELECT lease.release('sh/fast', token) AS w2_released FROM lease.grants WHERE resource = 'sh/fast';
SELECT lease.release('sh/fast', lease.acquire_shared('sh/fast', '1 min', holder => 'r1')) AS reader_released;
BEGIN;
SELECT n_tup_upd AS u0, n_tup_ins AS i0, n_tup_del AS d0 FROM pg_stat_xact_user_tables WHERE relid = 'lease.grants'::regclass \gset
SELECT lease.acquire('sh/fast', '1 min', holder => 'w3') IS NOT NULL AS lock_after_reader;
SELECT n_tup_upd - :u0 AS updated, n_tup_ins - :i0 AS inserted, n_tup_del - :d0 AS deleted FROM pg_stat_xact_user_tables WHERE relid = 'lease.grants'::regclass;
COMMIT;
-- a reader after a lock taken in place: held, so nothing beside it
SELECT lease.acquire_shared('sh/fast', '1 min', holder => 'r2') IS NULL AS reader_kept_out;
-- a released lock beside a grant that is over (an expiry the clearing of a
-- concurrent acquire did not see yet, planted here) is taken in place too;
-- the grant that is over stays over
SELECT lease.release('sh/fast', token) AS w3_released FROM lease.grants WHERE resource = 'sh/fast';
INSERT INTO lease.grants (resource, token, expires_at, granted_at, renewed_at, owner, holder, mode)
SELECT 'sh/fast', nextval('lease.token_seq'), now() - interval '1 s', now() - interval '2 s', now() - interval '2 s', current_user::regrole, 'r9', 'shared'
RETURNING token AS over_token \gset
BEGIN;
SELECT n_tup_upd AS u0, n_tup_ins AS i0, n_tup_del AS d0 FROM pg_stat_xact_user_tables WHERE relid = 'lease.grants'::regclass \gset
SELECT lease.acquire('sh/fast', '1 min', holder => 'w4') > :over_token AS lock_beside_over;
SELECT n_tup_upd - :u0 AS updated, n_tup_ins - :i0 AS inserted, n_tup_del - :d0 AS deleted FROM pg_stat_xact_user_tables WHERE relid = 'lease.grants'::regclass;
COMMIT;
SELECT holder, mode FROM lease.leases WHERE resource = 'sh/fast';
SELECT lease.is_current('sh/fast', :over_token) AS over_stays_over;
