--
-- basic: grant, contention, release, expiry takeover, renew, idempotent
-- re-acquire, gc.  Facts are printed relative (t2 > t1), never as values.
--
-- sqlstate(q): the SQLSTATE and message q fails with (digits masked), or 'ok'
CREATE FUNCTION public.sqlstate(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE q;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || regexp_replace(SQLERRM, '[0-9]+', 'N', 'g');
END $$;

-- grant: a free resource is granted, with a positive token
SELECT lease.acquire('basic/a', '10 s', holder => 'h1') AS t1 \gset
SELECT :t1 > 0 AS grant_token_positive;
SELECT holder, owner, remaining > '9 s' AS full_ttl_left
  FROM lease.leases WHERE resource = 'basic/a';

-- contention: another holder gets NULL, and nothing changes
SELECT lease.acquire('basic/a', '10 s', holder => 'h2') IS NULL AS contended_gets_null;
SELECT lease.try_acquire('basic/a', '10 s', holder => 'h2') IS NULL AS try_contended_gets_null;
SELECT token = :t1 AS holder_unchanged FROM lease.grants WHERE resource = 'basic/a';

-- idempotent re-acquire: the same holder gets the same token, later expiry
SELECT expires_at AS e1 FROM lease.grants WHERE resource = 'basic/a' \gset
SELECT lease.acquire('basic/a', '20 s', holder => 'h1') = :t1 AS reacquire_same_token;
SELECT expires_at > :'e1' AS reacquire_extends FROM lease.grants WHERE resource = 'basic/a';

-- release, then a re-grant with a higher token
SELECT lease.release('basic/a', :t1) AS released;
SELECT NOT lease.is_current('basic/a', :t1) AS released_not_current;
SELECT count(*) AS released_not_listed FROM lease.leases WHERE resource = 'basic/a';
SELECT lease.acquire('basic/a', '10 s', holder => 'h2') AS t2 \gset
SELECT :t2 > :t1 AS regrant_token_higher;

-- release of a stale token is false and changes nothing
CREATE TEMP TABLE snap AS SELECT ctid::text AS tid, xmin::text AS x, * FROM lease.grants;
SELECT lease.release('basic/a', :t1) = false AS stale_release_false;
SELECT lease.renew('basic/a', :t1, '10 s') = false AS stale_renew_false;
SELECT NOT EXISTS (SELECT ctid::text, xmin::text, * FROM lease.grants
				   EXCEPT SELECT * FROM snap) AS stale_calls_changed_nothing;

-- renew extends the current grant
SELECT expires_at AS e2 FROM lease.grants WHERE resource = 'basic/a' \gset
SELECT lease.renew('basic/a', :t2, '30 s') AS renewed;
SELECT expires_at > :'e2' AS renew_extends, remaining > '29 s' AS renew_sets_ttl
  FROM lease.leases WHERE resource = 'basic/a';

-- expiry: an expired grant is taken over with a higher token
SELECT lease.acquire('basic/b', '200 ms', holder => 'h1') AS b1 \gset
SELECT pg_sleep(0.3);
SELECT NOT lease.is_current('basic/b', :b1) AS expired_not_current;
SELECT lease.renew('basic/b', :b1, '10 s') = false AS renew_after_expiry_false;
SELECT lease.acquire('basic/b', '10 s', holder => 'h2') AS b2 \gset
SELECT :b2 > :b1 AS takeover_token_higher;
SELECT lease.renew('basic/b', :b1, '10 s') = false AS renew_after_takeover_false;
SELECT lease.release('basic/b', :b1) = false AS release_after_takeover_false;
SELECT lease.is_current('basic/b', :b2) AS new_holder_current;

-- renew and release naming the holder (0.5.0): only the grant that holder
-- took, compared in the same statement; another holder's is false and keeps
-- its expiry; a re-acquire by the same holder keeps its token and still matches
SELECT lease.renew('basic/b', :b2, '1 min', 'h1') = false AS renew_other_holder_false;
SELECT lease.release('basic/b', :b2, 'h1') = false AS release_other_holder_false;
SELECT lease.is_current('basic/b', :b2) AND remaining < '11 s' AS other_holder_changed_nothing
  FROM lease.leases WHERE resource = 'basic/b';
SELECT lease.renew('basic/b', :b2, '1 min', 'h2') AS renew_own_holder;
SELECT remaining > '59 s' AS own_holder_renewed FROM lease.leases WHERE resource = 'basic/b';
SELECT lease.renew('basic/b', :b1, '1 min', 'h1') = false AS renew_holder_stale_token_false;
SELECT lease.acquire('basic/h', '10 s', holder => 'hh') AS h1 \gset
SELECT lease.acquire('basic/h', '10 s', holder => 'hh') = :h1 AS reacquire_same_token;
SELECT lease.release('basic/h', :h1, 'hh') AS release_own_holder;
SELECT lease.release('basic/h', :h1, 'hh') = false AS release_holder_again_false;
SELECT lease.renew('basic/h', :h1, '10 s', 'hh') = false AS renew_holder_after_release_false;

-- break ends the current grant; the next grant is higher
SELECT lease.break('basic/b') = :b2 AS break_returns_token;
SELECT lease.break('basic/b') IS NULL AS break_of_free_is_null;
SELECT NOT lease.is_current('basic/b', :b2) AS broken_not_current;
SELECT lease.acquire('basic/b', '10 s', holder => 'h3') AS b3 \gset
SELECT :b3 > :b2 AS after_break_token_higher;

-- gc removes rows free for longer than retain; the next token is still higher
SELECT lease.release('basic/b', :b3) AS released_b;
SELECT lease.gc('1 hour') AS gc_keeps_recent;
SELECT pg_sleep(0.05);
SELECT lease.gc('10 ms') >= 1 AS gc_deleted;
SELECT count(*) AS b_row_gone FROM lease.grants WHERE resource = 'basic/b';
SELECT count(*) AS held_row_kept FROM lease.grants WHERE resource = 'basic/a';
SELECT lease.acquire('basic/b', '10 s', holder => 'h1') > :b3 AS after_gc_token_higher;
-- a retain reaching before the first representable instant deletes nothing
SELECT lease.gc('10000000 days') AS gc_huge_retain, lease.gc('106751991 days') AS gc_max_retain;

-- limits: 256-byte resource and holder are accepted
SELECT lease.acquire(repeat('r', 256), '1 s', holder => repeat('h', 256)) > 0 AS max_lengths_ok;
