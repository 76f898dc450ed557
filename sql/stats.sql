--
-- stats: the counters of lease.stats() (shared memory: needs preload; the
-- alternative output stats_1.out is the 55000 error without it).  They count
-- every database's calls, and other tests may run on the cluster meanwhile:
-- each counter must have gone up by at least what this test did (they never
-- go down), not by exactly that.
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

SELECT s.grants - s0.grants >= 3 AS grants,
	   s.contended - s0.contended >= 2 AS contended,
	   s.timeouts - s0.timeouts >= 1 AS timeouts,
	   s.takeovers - s0.takeovers >= 1 AS takeovers,
	   s.renewals - s0.renewals >= 1 AS renewals,
	   s.failed_renewals - s0.failed_renewals >= 1 AS failed_renewals,
	   s.releases - s0.releases >= 1 AS releases,
	   s.fence_rejections - s0.fence_rejections >= 1 AS fence_rejections
  FROM lease.stats() s, s0;
