-- pg_lease: one acquire+release pair, each statement its own (autocommit) transaction.
-- A NULL token (resource held by another client) becomes int8 max, which release
-- accepts and answers false; \gset would otherwise store an empty string.
\set r random(1, :nres)
SELECT coalesce(lease.acquire('bench/' || :r, '30 s'), 9223372036854775807) AS t \gset
SELECT lease.release('bench/' || :r, :t);
