-- Hand-written lease table: upsert-acquire + expire-release pair, each its own transaction.
-- The CTE makes the acquire always return exactly one row (\gset needs one): when
-- the resource is held by someone else the upsert returns nothing and the token
-- becomes int8 max, which matches no row on release.
\set r random(1, :nres)
WITH ins AS (
  INSERT INTO handmade_lease AS l
  VALUES ('bench/' || :r, nextval('handmade_seq'), 'me', clock_timestamp() + interval '30 s')
  ON CONFLICT (resource) DO UPDATE
    SET token = excluded.token, holder = excluded.holder, expires_at = excluded.expires_at
    WHERE l.expires_at < clock_timestamp()
  RETURNING token)
SELECT coalesce((SELECT token FROM ins), 9223372036854775807) AS token \gset
UPDATE handmade_lease SET expires_at = clock_timestamp() WHERE resource = 'bench/' || :r AND token = :token;
