--
-- stats: the counters of lease.stats() (shared memory: needs preload; the
-- alternative output stats_1.out is the 55000 error without it).
--
CREATE TEMP TABLE s0 AS SELECT * FROM lease.stats();

SELECT lease.acquire('stats/a', '1 min', holder => 'x') AS a \gset
SELECT lease.acquire('stats/a', '1 min', holder => 'y') IS NULL AS contended;
SELECT lease.acquire('stats/a', '1 min', '50 ms', 'y') IS NULL AS timed_out;
SELECT lease.renew('stats/a', :a, '1 min') AS renewed;
SELECT lease.release('stats/a', :a) AS released;
SELECT lease.renew('stats/a', :a, '1 min') = false AS failed_renewal;
SELECT sqlstate(format('SELECT lease.fence(%L, %s)', 'stats/a', :a)) AS fence_rejected;
SELECT lease.acquire('stats/b', '50 ms') IS NOT NULL AS short_grant;
SELECT pg_sleep(0.1);
SELECT lease.acquire('stats/b', '1 min', holder => 'z') IS NOT NULL AS takeover;

SELECT s.grants - s0.grants AS grants,
	   s.contended - s0.contended AS contended,
	   s.timeouts - s0.timeouts AS timeouts,
	   s.takeovers - s0.takeovers AS takeovers,
	   s.renewals - s0.renewals AS renewals,
	   s.failed_renewals - s0.failed_renewals AS failed_renewals,
	   s.releases - s0.releases AS releases,
	   s.fence_rejections - s0.fence_rejections AS fence_rejections
  FROM lease.stats() s, s0;
