-- The same hand-off with a session advisory lock (no token, no TTL, nothing
-- durable): what a lock on one hot resource costs at least.
SELECT pg_advisory_lock(42);
SELECT pg_sleep(0.0002);
SELECT pg_advisory_unlock(42);
