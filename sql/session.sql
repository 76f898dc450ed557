--
-- session: a session-bound grant also ends when the acquiring backend exits.
-- Works without preload too (the exit is noticed lazily, by PID and start
-- time).  A second backend comes from dblink.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS dblink;
RESET client_min_messages;
SELECT format('dbname=%s host=%s port=%s', current_database(),
			  split_part(current_setting('unix_socket_directories'), ',', 1),
			  current_setting('port')) AS connstr \gset

SELECT dblink_connect('other', :'connstr');
SELECT token AS s1, pid AS other_pid FROM dblink('other',
	$$SELECT lease.acquire('sess/a', '1 min', session_bound => true), pg_backend_pid()$$)
	AS t(token bigint, pid int) \gset
SELECT holder LIKE 'pid %' AS default_holder_names_backend, session_bound
  FROM lease.leases WHERE resource = 'sess/a';

-- while the backend lives, the grant holds
SELECT lease.try_acquire('sess/a', '1 min') IS NULL AS held_while_backend_lives;

-- the backend exits: the grant is over at once, long before its TTL
SELECT dblink_disconnect('other');
CREATE FUNCTION pg_temp.wait_backend_gone(p int) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..500 LOOP
		PERFORM pg_stat_clear_snapshot();
		IF NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = p) THEN
			RETURN true;
		END IF;
		PERFORM pg_sleep(0.01);
	END LOOP;
	RETURN false;
END $$;
SELECT pg_temp.wait_backend_gone(:other_pid) AS backend_gone;
SELECT NOT lease.is_current('sess/a', :s1) AS not_current_after_exit;
SELECT count(*) AS not_listed_after_exit FROM lease.leases WHERE resource = 'sess/a';
SELECT lease.acquire('sess/a', '1 min', wait => '5 s') AS s2 \gset
SELECT :s2 > :s1 AS takeover_after_exit_higher;

-- renew/release/fence of a grant whose session ended: not current
SELECT lease.renew('sess/a', :s1, '1 min') = false AS renew_after_exit_false;
SELECT sqlstate(format('SELECT lease.fence(%L, %s)', 'sess/a', :s1)) AS fence_after_exit;

-- the same holder asking again from another connection is a re-acquire, not
-- a nested wait, even while it holds another lease here
SELECT dblink_connect('svc', :'connstr');
SELECT token AS n1 FROM dblink('svc', $$SELECT lease.acquire('sess/n1', '1 min', holder => 'svc')$$)
	AS t(token bigint) \gset
SELECT lease.acquire('sess/n2', '1 min', holder => 'svc') IS NOT NULL AS holds_n2_here;
SELECT lease.acquire('sess/n1', '1 min', wait => '1 s', holder => 'svc') = :n1 AS reacquire_from_other_connection;
SELECT dblink_disconnect('svc');

-- this backend's own session-bound grant is current, and renewable
SELECT lease.release('sess/a', :s2) AS released;
SELECT lease.acquire('sess/a', '1 min', session_bound => true) AS s3 \gset
SELECT lease.is_current('sess/a', :s3) AS own_session_grant_current;
SELECT lease.renew('sess/a', :s3, '2 min') AS own_session_grant_renewed;
SELECT lease.release('sess/a', :s3) AS own_session_grant_released;

-- a re-acquire by the same holder states the grant's terms again: a retry
-- with session_bound => true from a new connection keeps the token and binds
-- the grant to the new connection, so the old connection's exit does not end it
SELECT dblink_connect('old', :'connstr');
SELECT token AS r1, pid AS old_pid FROM dblink('old',
	$$SELECT lease.acquire('sess/r', '1 min', holder => 'svc-r', session_bound => true), pg_backend_pid()$$)
	AS t(token bigint, pid int) \gset
SELECT lease.acquire('sess/r', '1 min', holder => 'svc-r', session_bound => true) = :r1 AS retry_keeps_token;
SELECT dblink_disconnect('old');
SELECT pg_temp.wait_backend_gone(:old_pid) AS old_backend_gone;
SELECT lease.is_current('sess/r', :r1) AS current_after_old_connection_exits;
SELECT lease.try_acquire('sess/r', '1 min') IS NULL AS others_still_refused;
-- without session_bound the re-acquire unbinds it; with it, binds it again
SELECT lease.acquire('sess/r', '1 min', holder => 'svc-r') = :r1 AS unbind_keeps_token;
SELECT session_bound AS bound_after_unbind FROM lease.leases WHERE resource = 'sess/r';
SELECT lease.acquire('sess/r', '1 min', holder => 'svc-r', session_bound => true) = :r1 AS bind_keeps_token;
SELECT session_bound AS bound_after_bind FROM lease.leases WHERE resource = 'sess/r';
SELECT lease.release('sess/r', :r1) AS released_r;
