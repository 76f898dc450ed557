-- Session advisory locks: lock+unlock pair, each statement its own transaction.
-- (No token, no TTL, nothing persisted: a lower bound for any lock service.)
\set r random(1, :nres)
SELECT pg_advisory_lock(:r);
SELECT pg_advisory_unlock(:r);
