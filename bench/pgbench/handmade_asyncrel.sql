-- handmade.sql, but the release commits asynchronously, as pg_lease's does
-- (pg_lease sets synchronous_commit = off for release-only transactions; docs/guarantees.md
-- "Limits": releases are not flushed).  set_config(..., true) is transaction-local and
-- read at commit; the FROM subquery keeps the release one autocommit statement.
\set r random(1, :nres)
WITH ins AS (
  INSERT INTO handmade_lease AS l
  VALUES ('bench/' || :r, nextval('handmade_seq'), 'me', clock_timestamp() + interval '30 s')
  ON CONFLICT (resource) DO UPDATE
    SET token = excluded.token, holder = excluded.holder, expires_at = excluded.expires_at
    WHERE l.expires_at < clock_timestamp()
  RETURNING token)
SELECT coalesce((SELECT token FROM ins), 9223372036854775807) AS token \gset
UPDATE handmade_lease SET expires_at = clock_timestamp()
  FROM (SELECT set_config('synchronous_commit', 'off', true)) AS async
  WHERE resource = 'bench/' || :r AND token = :token;
