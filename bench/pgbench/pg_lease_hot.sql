-- pg_lease on one hot resource (issue 35's reproduction): wait up to 2 s,
-- hold 200 us, release; each statement its own (autocommit) transaction.
-- A timed-out acquire (NULL) releases nothing.
\set h random(1, 1000000000)
SELECT coalesce(lease.acquire('hot', '30 s', '2 s', 'h' || :h), 0) AS tok \gset
SELECT pg_sleep(0.0002);
SELECT CASE WHEN :tok > 0 THEN lease.release('hot', :tok::bigint) END;
