--
-- election: a campaign is lease.acquire with a value; lease.leader reads the
-- current grant, lease.proclaim sets its value, lease.observe waits in the
-- server for a change.  Facts are printed relative, never as values; uses
-- public.sqlstate() from basic.sql.
--

-- campaign: the value is stored with the grant; the token is the term
SELECT lease.acquire('el/a', '10 s', '0', 'c1', false, 'host-1:80') AS t1 \gset
SELECT value = 'host-1:80' AS leader_value, term = :t1 AS leader_term,
       since <= clock_timestamp() AS since_past, expires_at > clock_timestamp() AS expires_future
  FROM lease.leader('el/a');
SELECT value = 'host-1:80' AS leases_shows_value FROM lease.leases WHERE resource = 'el/a';
SELECT since = granted_at AS since_is_granted_at
  FROM lease.leader('el/a'), lease.grants WHERE resource = 'el/a';

-- another candidate does not get it; its value is not stored
SELECT lease.acquire('el/a', '10 s', '0', 'c2', false, 'host-2:80') IS NULL AS contender_refused;
SELECT value = 'host-1:80' AS value_kept FROM lease.leader('el/a');

-- the same candidate again: same term, its new value replaces the old one
SELECT lease.acquire('el/a', '10 s', '0', 'c1', false, 'host-1:81') = :t1 AS recampaign_same_term;
SELECT value = 'host-1:81' AS recampaign_replaces_value FROM lease.leader('el/a');
-- a plain re-acquire by the same holder keeps the value
SELECT lease.acquire('el/a', '10 s', holder => 'c1') = :t1 AS plain_reacquire_same_term;
SELECT value = 'host-1:81' AS plain_reacquire_keeps_value FROM lease.leader('el/a');

-- a plain acquire leaves value NULL; every old call resolves to the old function
SELECT lease.acquire('el/plain', '10 s') > 0 AS plain_granted;
SELECT lease.acquire('el/plain2', '10 s', '0') > 0 AS plain_wait_granted;
SELECT lease.acquire('el/plain3', '10 s', '0', 'h') > 0 AS plain_holder_granted;
SELECT lease.acquire('el/plain4', '10 s', '0', 'h', false) > 0 AS plain_session_granted;
SELECT lease.acquire('el/plain5', '10 s', session_bound => false) > 0 AS plain_named_granted;
SELECT count(*) AS plain_values_null FROM lease.grants
 WHERE resource LIKE 'el/plain%' AND value IS NULL;
SELECT value IS NULL AS leader_plain_value_null, term > 0 AS leader_plain_term FROM lease.leader('el/plain');
SELECT count(*) AS acquire_overloads FROM pg_proc
 WHERE proname = 'acquire' AND pronamespace = 'lease'::regnamespace;

-- proclaim by the current term sets the value
SELECT lease.proclaim('el/a', :t1, 'host-1:82') AS proclaimed;
SELECT value = 'host-1:82' AS proclaim_sets_value, term = :t1 AS proclaim_keeps_term FROM lease.leader('el/a');
SELECT lease.proclaim('el/a', :t1, NULL) AS proclaimed_null;
SELECT value IS NULL AS proclaim_null_clears, term = :t1 AS term_kept FROM lease.leader('el/a');

-- a stale term is refused and changes nothing
SELECT lease.release('el/a', :t1) AS resigned;
SELECT value IS NULL AND term IS NULL AND since IS NULL AND expires_at IS NULL AS no_leader_all_null
  FROM lease.leader('el/a');
SELECT count(*) AS no_leader_one_row FROM lease.leader('el/a');
SELECT lease.acquire('el/a', '10 s', '0', 'c2', false, 'host-2:80') AS t2 \gset
SELECT :t2 > :t1 AS new_term_higher;
SELECT lease.proclaim('el/a', :t1, 'stale') = false AS stale_proclaim_false;
SELECT value = 'host-2:80' AS stale_proclaim_changes_nothing, term = :t2 AS term_is_new FROM lease.leader('el/a');
SELECT public.sqlstate($$SELECT lease.fence('el/a', $$ || :t1 || $$)$$) AS stale_fence_refused;
SELECT lease.fence('el/a', :t2) = :t2 AS current_fence_admitted;
SELECT lease.proclaim('el/never', 1, 'x') = false AS proclaim_unknown_false;

-- value limits: 1024 bytes, counted in bytes (UTF-8), NULL = none, '' a value
SELECT lease.acquire('el/max', '10 s', '0', NULL, false, repeat('v', 1024)) > 0 AS max_value_ok;
SELECT public.sqlstate($$SELECT lease.acquire('el/long', '10 s', '0', NULL, false, repeat('v', 1025))$$)
       AS value_too_long;
SELECT lease.acquire('el/utf8', '10 s', '0', NULL, false, repeat('é', 512)) AS tu \gset
SELECT octet_length(value) AS utf8_value_bytes FROM lease.leader('el/utf8');
SELECT public.sqlstate($$SELECT lease.proclaim('el/utf8', $$ || :tu || $$, repeat('€', 342))$$)
       AS utf8_value_too_long;
SELECT lease.proclaim('el/utf8', :tu, 'ünïcødé ✓') AS utf8_proclaimed;
SELECT value = 'ünïcødé ✓' AS utf8_value_kept FROM lease.leader('el/utf8');
SELECT lease.proclaim('el/utf8', :tu, '') AS empty_value_ok;
SELECT value = '' AS empty_value_is_not_null FROM lease.leader('el/utf8');
SELECT public.sqlstate($$SELECT lease.proclaim('el/utf8', 0, 'x')$$) AS proclaim_bad_token;
SELECT public.sqlstate($$SELECT lease.proclaim(NULL, 1, 'x')$$) AS proclaim_null_resource;
SELECT public.sqlstate($$SELECT * FROM lease.leader('')$$) AS leader_empty_election;
SELECT public.sqlstate($$SELECT * FROM lease.leader(repeat('e', 257))$$) AS leader_long_election;

-- observe returns at once when the state differs from what the caller saw
SELECT clock_timestamp() AS o0 \gset
SELECT value = 'host-2:80' AS observe_value, term = :t2 AS observe_term
  FROM lease.observe('el/a', 0, NULL, '10 s');
SELECT clock_timestamp() - :'o0' < '2 s' AS observe_saw_none_returns_at_once;
SELECT clock_timestamp() AS o0 \gset
SELECT term = :t2 AS observe_other_value FROM lease.observe('el/a', :t2, 'host-2:79', '10 s');
SELECT clock_timestamp() - :'o0' < '2 s' AS observe_other_value_at_once;
SELECT clock_timestamp() AS o0 \gset
SELECT term = :t2 AS observe_older_term FROM lease.observe('el/a', :t1, 'host-2:80', '10 s');
SELECT clock_timestamp() - :'o0' < '2 s' AS observe_older_term_at_once;

-- observe times out returning the same state
SELECT clock_timestamp() AS o0 \gset
SELECT value = 'host-2:80' AS unchanged_value, term = :t2 AS unchanged_term
  FROM lease.observe('el/a', :t2, 'host-2:80', '0.3 s');
SELECT clock_timestamp() - :'o0' >= '0.3 s' AS observe_waited_its_wait;
SELECT term IS NULL AS still_no_leader FROM lease.observe('el/none', NULL, NULL, '0.1 s');
SELECT term IS NULL AS wait_zero_reads_once FROM lease.observe('el/none', 0, NULL, '0');

-- a leader expiring with nobody taking over: observe reports no leader
SELECT lease.acquire('el/exp', '0.5 s', '0', NULL, false, 'soon gone') AS te \gset
SELECT clock_timestamp() AS o0 \gset
SELECT value IS NULL AND term IS NULL AS expiry_reported_no_leader
  FROM lease.observe('el/exp', :te, 'soon gone', '10 s');
SELECT clock_timestamp() - :'o0' < '2 s' AS expiry_reported_promptly;
SELECT count(*) AS expired_not_listed FROM lease.leases WHERE resource = 'el/exp';

-- observe's arguments: as acquire's wait (22023), a negative term, NULLs
SELECT public.sqlstate($$SELECT * FROM lease.observe('el/a', 0, NULL, '-1 s')$$) AS observe_negative_wait;
SELECT public.sqlstate($$SELECT * FROM lease.observe('el/a', 0, NULL, '1 mon')$$) AS observe_month_wait;
SELECT public.sqlstate($$SELECT * FROM lease.observe('el/a', 0, NULL, '106751991 days 10 hours')$$) AS observe_huge_wait;
SELECT public.sqlstate($$SELECT * FROM lease.observe('el/a', 0, NULL, NULL)$$) AS observe_null_wait;
SELECT public.sqlstate($$SELECT * FROM lease.observe('el/a', -1, NULL, '0')$$) AS observe_negative_term;
SELECT public.sqlstate($$SELECT * FROM lease.observe(NULL, 0, NULL, '0')$$) AS observe_null_election;
-- statement_timeout ends a long observe
SET statement_timeout = '200ms';
SELECT * FROM lease.observe('el/a', :t2, 'host-2:80', '1 hour');
RESET statement_timeout;
-- it cannot wait in a REPEATABLE READ transaction
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT public.sqlstate($$SELECT * FROM lease.observe('el/a', 0, NULL, '1 s')$$) AS observe_repeatable_read;
ROLLBACK;

-- privileges: everyone may read and observe (as lease.leases), acquire as before
SELECT has_function_privilege('public', 'lease.leader(text)', 'EXECUTE') AS public_leader,
       has_function_privilege('public', 'lease.observe(text, int8, text, interval)', 'EXECUTE') AS public_observe,
       has_function_privilege('public', 'lease.proclaim(text, int8, text)', 'EXECUTE') AS public_proclaim,
       has_function_privilege('public', 'lease.acquire(text, interval, interval, text, bool, text)', 'EXECUTE')
       AS public_campaign;

SELECT lease.release('el/a', :t2) AS cleanup;
