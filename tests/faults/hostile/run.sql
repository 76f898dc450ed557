/*
 * tests/faults/hostile/run.sql -- hostile.run(): play the storm's calls and judge each
 *
 * CALL hostile.run(batch, first, last, commit_every) as a storm role plays the
 * cases first..last of hostile.cases, committing every commit_every calls.
 * For each call it
 *
 * 1. evaluates every argument expression alone, as its parameter's type:
 *    one that fails there is bad input PostgreSQL itself refuses, and the
 *    call must fail with that same SQLSTATE (an input-syntax one);
 * 2. decides from the values what docs/sql.md allows: a 22004/22023 (or
 *    42501 for break/gc without EXECUTE) if an argument is invalid; else,
 *    from the resource's row as it was just before the call (read with a
 *    superuser's eyes, hostile.peek), the result the spec gives -- with
 *    both outcomes allowed for a grant expiring within a few seconds;
 * 3. runs the call in a subtransaction, reads the row again, and checks the
 *    result and the row: ctid, xmin and every column unchanged unless the
 *    call was valid and had to change it, and then changed as it must; a new
 *    token above every token seen before.
 *
 * Each call gets a row in hostile.results; verdict is NULL when the call
 * behaved per the spec, else says what was wrong.
 */

-- input_states -- SQLSTATEs that PostgreSQL raises for bad input literals
CREATE FUNCTION hostile.input_states() RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
	SELECT '{22P02,22007,22008,22015,54000,22021,22003}'::text[]
$$;

/*
 * eval_arg -- one argument alone, as the type of its parameter
 *
 * state is the SQLSTATE it failed with, or NULL; for intervals, the month
 * count, day count and time part (microseconds), as the extension sees them.
 */
CREATE FUNCTION hostile.eval_arg(p_expr text, p_param text,
								 OUT state text, OUT isnull bool, OUT val text,
								 OUT months numeric, OUT days numeric, OUT time_us numeric)
LANGUAGE plpgsql AS $$
DECLARE
	typ text := CASE p_param
		WHEN 'resource' THEN 'text' WHEN 'holder' THEN 'text'
		WHEN 'ttl' THEN 'interval' WHEN 'wait' THEN 'interval' WHEN 'retain' THEN 'interval'
		WHEN 'token' THEN 'bigint' WHEN 'session_bound' THEN 'boolean'
		WHEN 'pid' THEN 'integer' WHEN 'started' THEN 'timestamptz' END;
BEGIN
	IF typ = 'interval' THEN
		EXECUTE format('SELECT x IS NULL, x::text, extract(year FROM x) * 12 + extract(month FROM x),'
					   ' extract(day FROM x), extract(hour FROM x) * 3600000000'
					   ' + extract(minute FROM x) * 60000000 + extract(microseconds FROM x)'
					   ' FROM (SELECT (%s)::interval AS x) s', p_expr)
			INTO isnull, val, months, days, time_us;
	ELSE
		EXECUTE format('SELECT x IS NULL, x::text FROM (SELECT (%s)::%s AS x) s', p_expr, typ)
			INTO isnull, val;
	END IF;
EXCEPTION WHEN OTHERS THEN
	state := SQLSTATE;
END $$;

/*
 * interval_usecs -- the interval as the extension reads it: NULL if it has a
 * month part or overflows int64 microseconds (both 22023)
 */
CREATE FUNCTION hostile.interval_usecs(months numeric, days numeric, time_us numeric) RETURNS numeric
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN months <> 0 THEN NULL
				WHEN days * 86400000000 NOT BETWEEN -9223372036854775808 AND 9223372036854775807 THEN NULL
				WHEN days * 86400000000 + time_us NOT BETWEEN -9223372036854775808 AND 9223372036854775807 THEN NULL
				ELSE days * 86400000000 + time_us END
$$;

-- usecs -- microseconds as an interval
CREATE FUNCTION hostile.usecs(n numeric) RETURNS interval
LANGUAGE sql IMMUTABLE AS $$ SELECT (n::text || ' microseconds')::interval $$;

-- shorten -- a value for the report: at most n characters, control characters shown as ?
CREATE FUNCTION hostile.shorten(v text, n int DEFAULT 60) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN v IS NULL THEN 'NULL'
				ELSE regexp_replace(left(v, n), '[\x01-\x1f\x7f]', '?', 'g') ||
					 CASE WHEN length(v) > n THEN format('...(%s chars)', length(v)) ELSE '' END END
$$;

CREATE PROCEDURE hostile.run(p_batch int, p_from int, p_to int, p_commit_every int)
LANGUAGE plpgsql AS $$
DECLARE
	margin constant interval := '3 s';	-- a grant this close to expiry may go either way
	me oid := (SELECT oid FROM pg_roles WHERE rolname = current_user);
	me_name text := current_user;
	is_admin bool := has_function_privilege('lease.break(text)', 'EXECUTE');
	max_ttl_us numeric := (SELECT setting::numeric * 1000000 FROM pg_settings WHERE name = 'lease.max_ttl');
	iso text;
	default_holder text;
	max_seen bigint;
	prev_grants bigint := -1;
	c hostile.cases;
	ev record;
	-- per call: the arguments
	parse_states text[];
	bad text[];					-- the SQLSTATEs invalid arguments allow
	argtxt text;
	has_res bool; res_v text; res_null bool;
	ttl_us numeric; ttl_null bool;
	wait_us numeric; wait_null bool; wait_passed bool;
	ret_us numeric; ret_null bool;
	holder_v text; holder_null bool; eff_holder text;
	tok_v bigint; tok_null bool;
	sb_v bool; sb_null bool;
	anynull bool;
	-- per call: what happened
	pre hostile.row_state;
	post hostile.row_state;
	t0 timestamptz; t1 timestamptz;
	state text; msg text; res text;
	rollback_after bool;
	cb record; ca record;
	t_later timestamptz; t_older timestamptz;
	verdict text;
	pre_free bool; pre_held bool; unchanged bool; match bool; same bool; mine bool;
	newtok bigint;
	nums bigint[];
	n_done int := 0;
	i int;
BEGIN
	-- this backend's default holder label, and where the token sequence is
	newtok := lease.try_acquire(format('hostile/default/%s/%s', p_batch, pg_backend_pid()), '1 min');
	default_holder := (hostile.peek(format('hostile/default/%s/%s', p_batch, pg_backend_pid()))).holder;
	PERFORM lease.release(format('hostile/default/%s/%s', p_batch, pg_backend_pid()), newtok);
	max_seen := greatest(newtok, hostile.seq_last());
	IF default_holder IS NULL THEN
		RAISE EXCEPTION 'could not learn the default holder label of this backend';
	END IF;
	COMMIT;

	FOR i IN p_from..p_to LOOP
		SELECT * INTO c FROM hostile.cases WHERE id = i;
		iso := current_setting('transaction_isolation');

		-- 1. each argument alone
		parse_states := '{}';
		argtxt := '';
		has_res := false; res_v := NULL; res_null := false;
		ttl_us := NULL; ttl_null := false;
		wait_us := 0; wait_null := false; wait_passed := false;
		ret_us := 3600000000; ret_null := false;
		holder_v := NULL; holder_null := true;
		tok_v := NULL; tok_null := false;
		sb_v := false; sb_null := false;
		anynull := false;
		FOR j IN 1..cardinality(c.params) LOOP
			ev := hostile.eval_arg(c.exprs[j], c.params[j]);
			argtxt := argtxt || CASE WHEN j > 1 THEN ', ' ELSE '' END || c.params[j] || '=' ||
					  CASE WHEN ev.state IS NOT NULL THEN '!' || ev.state ELSE hostile.shorten(ev.val) END;
			IF ev.state IS NOT NULL THEN
				parse_states := parse_states || ev.state;
				CONTINUE;
			END IF;
			anynull := anynull OR ev.isnull;
			CASE c.params[j]
			WHEN 'resource' THEN has_res := true; res_v := ev.val; res_null := ev.isnull;
			WHEN 'ttl' THEN ttl_null := ev.isnull;
				ttl_us := hostile.interval_usecs(ev.months, ev.days, ev.time_us);
			WHEN 'wait' THEN wait_null := ev.isnull; wait_passed := true;
				wait_us := hostile.interval_usecs(ev.months, ev.days, ev.time_us);
			WHEN 'retain' THEN ret_null := ev.isnull;
				ret_us := hostile.interval_usecs(ev.months, ev.days, ev.time_us);
			WHEN 'holder' THEN holder_v := ev.val; holder_null := ev.isnull;
			WHEN 'token' THEN tok_v := ev.val::bigint; tok_null := ev.isnull;
			WHEN 'session_bound' THEN sb_v := ev.val::bool; sb_null := ev.isnull;
			ELSE NULL;
			END CASE;
		END LOOP;
		eff_holder := CASE WHEN holder_null THEN default_holder ELSE holder_v END;

		-- 2. what invalid arguments allow
		bad := '{}';
		IF c.fn IN ('break', 'gc') AND NOT is_admin THEN
			bad := '{42501}';
		ELSIF c.fn IN ('acquire', 'try_acquire', 'renew', 'release', 'fence', 'is_current', 'break', 'gc') THEN
			IF has_res THEN
				IF res_null THEN bad := bad || '22004'::text;
				ELSIF octet_length(res_v) NOT BETWEEN 1 AND 256 THEN bad := bad || '22023'::text; END IF;
			END IF;
			IF c.fn IN ('acquire', 'try_acquire', 'renew') THEN
				IF ttl_null THEN bad := bad || '22004'::text;
				ELSIF ttl_us IS NULL OR ttl_us <= 0 OR ttl_us > max_ttl_us THEN bad := bad || '22023'::text; END IF;
			END IF;
			IF c.fn = 'acquire' THEN
				IF wait_null THEN bad := bad || '22004'::text;
				ELSIF wait_us IS NULL OR wait_us < 0 THEN bad := bad || '22023'::text; END IF;
			END IF;
			IF c.fn = 'gc' THEN
				IF ret_null THEN bad := bad || '22004'::text;
				ELSIF ret_us IS NULL OR ret_us < 0 THEN bad := bad || '22023'::text; END IF;
			END IF;
			IF c.fn IN ('acquire', 'try_acquire') THEN
				IF NOT holder_null AND octet_length(holder_v) NOT BETWEEN 1 AND 256 THEN
					bad := bad || '22023'::text;
				END IF;
				IF sb_null THEN bad := bad || '22004'::text; END IF;
			END IF;
			IF c.fn IN ('renew', 'release', 'fence', 'is_current') THEN
				IF tok_null THEN bad := bad || '22004'::text;
				ELSIF tok_v <= 0 THEN bad := bad || '22023'::text; END IF;
			END IF;
		END IF;

		-- 3. the call, with the row before and after
		pre := hostile.peek(res_v);
		rollback_after := is_admin AND c.fn = 'break' AND cardinality(parse_states) = 0
			AND res_v IN (SELECT resource FROM hostile.bystanders);
		IF c.fn = 'gc' AND is_admin AND cardinality(parse_states) = 0 AND cardinality(bad) = 0 THEN
			t_later := clock_timestamp() + interval '10 s';
			BEGIN
				t_older := clock_timestamp() - hostile.usecs(ret_us);
			EXCEPTION WHEN OTHERS THEN
				t_older := '-infinity';
			END;
			cb := hostile.table_counts(t_later, t_older);
		END IF;
		state := 'ok'; msg := NULL; res := NULL;
		t0 := clock_timestamp();
		BEGIN
			EXECUTE c.call INTO res;
			t1 := clock_timestamp();
			post := hostile.peek(res_v);
			IF rollback_after THEN
				-- breaking a bystander is valid: check it, then undo it
				RAISE EXCEPTION USING ERRCODE = 'ZX999';
			END IF;
		EXCEPTION WHEN OTHERS THEN
			IF SQLSTATE <> 'ZX999' THEN
				state := SQLSTATE;
				msg := SQLERRM;
				t1 := clock_timestamp();
				post := hostile.peek(res_v);
			END IF;
		END;

		-- 4. the verdict
		verdict := NULL;
		unchanged := post.row_text IS NOT DISTINCT FROM pre.row_text;
		pre_free := NOT pre.found OR pre.expires_at <= t0 OR NOT pre.alive;
		pre_held := pre.found AND pre.alive AND pre.expires_at > t0 + margin
			+ CASE WHEN c.fn = 'acquire' AND wait_us > 0 THEN hostile.usecs(least(wait_us, 86400000000)) ELSE '0' END;
		match := pre.found AND pre.token = tok_v;
		mine := pre.found AND pre.owner = me;

		IF cardinality(parse_states) > 0 THEN
			IF NOT parse_states <@ hostile.input_states() THEN
				verdict := format('an argument alone fails with %s, not an input error', parse_states);
			ELSIF state <> ALL (parse_states) AND NOT (bad = '{42501}' AND state = '42501') THEN
				-- (an argument that is not a constant is evaluated after the
				-- EXECUTE check of break and gc: 42501 may come first)
				verdict := format('expected an input error %s', parse_states);
			END IF;
		ELSIF cardinality(bad) > 0 THEN
			IF state <> ALL (bad) THEN
				verdict := format('invalid argument: expected SQLSTATE %s', bad);
			END IF;
		ELSIF c.fn IN ('acquire', 'try_acquire') THEN
			same := mine AND pre.holder = eff_holder;
			IF c.fn = 'acquire' AND wait_us > 0 AND iso IN ('repeatable read', 'serializable') THEN
				IF state <> '0A000' THEN verdict := 'a waiting acquire under ' || iso || ' must fail with 0A000'; END IF;
			ELSIF state = 'LS002' THEN
				IF NOT (c.fn = 'acquire' AND wait_us > 0) THEN
					verdict := 'LS002 without a wait';
				ELSIF NOT hostile.holds_other(me, eff_holder, res_v) THEN
					verdict := 'LS002 but the holder holds no other lease';
				ELSIF same AND NOT pre_free THEN
					verdict := 'LS002 on a re-acquire of a lease the holder holds (it would not wait)';
				END IF;
			ELSIF state <> 'ok' THEN
				verdict := 'unexpected SQLSTATE';
			ELSIF res IS NULL THEN
				IF pre_free THEN
					verdict := 'not granted although the resource was free';
				ELSIF same AND pre.expires_at > t0 + margin THEN
					verdict := 'the holder''s re-acquire got NULL instead of its token';
				END IF;
			ELSE
				newtok := res::bigint;
				IF pre.found AND newtok = pre.token THEN
					IF NOT same OR pre.expires_at <= t0 OR NOT pre.alive THEN
						verdict := 'returned the token of a grant that is not the caller''s current one';
					END IF;
				ELSE
					IF newtok <= max_seen THEN
						verdict := format('new token %s is not above %s, the highest seen', newtok, max_seen);
					ELSIF pre_held THEN
						verdict := CASE WHEN same THEN 'the holder''s re-acquire got a new token'
										ELSE 'granted a resource another holder held' END;
					END IF;
					max_seen := greatest(max_seen, newtok);
				END IF;
				IF verdict IS NULL THEN
					IF NOT (post.found AND post.token = newtok AND post.owner = me AND post.holder = eff_holder
							AND NOT post.released
							AND post.expires_at BETWEEN t0 + hostile.usecs(ttl_us) AND t1 + hostile.usecs(ttl_us)) THEN
						verdict := 'the row after the grant is not the grant: ' || coalesce(post.row_text, 'no row');
					ELSIF newtok <> pre.token OR NOT pre.found THEN
						IF post.session_bound <> sb_v OR post.granted_at NOT BETWEEN t0 AND t1 THEN
							verdict := 'new grant row wrong (session_bound or granted_at): ' || post.row_text;
						END IF;
					END IF;
				END IF;
				INSERT INTO hostile.issued (resource, token, role) VALUES (res_v, newtok, me);
			END IF;
			IF res IS NULL AND NOT unchanged THEN
				verdict := coalesce(verdict || '; ', '') || 'the row changed: ' || coalesce(post.row_text, 'deleted');
			END IF;
		ELSIF c.fn IN ('renew', 'release', 'fence') THEN
			IF match AND NOT mine THEN
				IF state <> '42501' THEN verdict := 'another role''s grant: expected 42501'; END IF;
			ELSIF state = 'LS001' AND c.fn = 'fence' THEN
				IF match AND pre_held THEN verdict := 'LS001 for the current grant'; END IF;
			ELSIF state <> 'ok' THEN
				verdict := 'unexpected SQLSTATE';
			ELSIF c.fn = 'fence' THEN
				IF res IS DISTINCT FROM tok_v::text THEN
					verdict := 'fence returned ' || coalesce(res, 'NULL');
				ELSIF NOT match OR pre_free THEN
					verdict := 'fence passed a token that is not the current grant';
				END IF;
			ELSIF res = 'true' THEN
				IF NOT match OR pre_free THEN
					verdict := c.fn || ' true for a grant that is not current';
				ELSIF c.fn = 'renew' AND NOT (post.token = tok_v AND NOT post.released
						AND post.expires_at BETWEEN t0 + hostile.usecs(ttl_us) AND t1 + hostile.usecs(ttl_us)
						AND post.renewed_at BETWEEN t0 AND t1) THEN
					verdict := 'renewed row wrong: ' || coalesce(post.row_text, 'no row');
				ELSIF c.fn = 'release' AND NOT (post.token = tok_v AND post.released
						AND post.expires_at BETWEEN t0 AND t1) THEN
					verdict := 'released row wrong: ' || coalesce(post.row_text, 'no row');
				END IF;
			ELSIF res = 'false' THEN
				IF match AND pre_held THEN verdict := c.fn || ' false for the caller''s current grant'; END IF;
			ELSE
				verdict := 'returned ' || coalesce(res, 'NULL');
			END IF;
			IF (state <> 'ok' OR res IS DISTINCT FROM 'true' OR c.fn = 'fence') AND NOT unchanged THEN
				verdict := coalesce(verdict || '; ', '') || 'the row changed: ' || coalesce(post.row_text, 'deleted');
			END IF;
		ELSIF c.fn = 'is_current' THEN
			IF state <> 'ok' THEN
				verdict := 'unexpected SQLSTATE';
			ELSIF res = 'true' AND (NOT match OR pre_free) THEN
				verdict := 'true for a grant that is not current';
			ELSIF res = 'false' AND match AND pre_held THEN
				verdict := 'false for the current grant';
			ELSIF res IS NULL OR res NOT IN ('true', 'false') THEN
				verdict := 'returned ' || coalesce(res, 'NULL');
			ELSIF NOT unchanged THEN
				verdict := 'the row changed';
			END IF;
		ELSIF c.fn = 'break' THEN
			IF state <> 'ok' THEN
				verdict := 'unexpected SQLSTATE';
			ELSIF res IS NULL THEN
				IF pre_held THEN verdict := 'break returned NULL for a current grant';
				ELSIF NOT unchanged THEN verdict := 'break of nothing changed the row'; END IF;
			ELSIF NOT (pre.found AND res = pre.token::text AND NOT pre_free) THEN
				verdict := 'break returned a token that was not current';
			ELSIF NOT (post.token = pre.token AND post.released AND post.expires_at BETWEEN t0 AND t1) THEN
				verdict := 'broken row wrong: ' || coalesce(post.row_text, 'no row');
			END IF;
		ELSIF c.fn = 'gc' THEN
			IF state <> 'ok' THEN
				verdict := 'unexpected SQLSTATE';
			ELSE
				ca := hostile.table_counts(t_later, t_older);
				IF res IS NULL OR res::bigint < 0 OR res::bigint <> cb.total - ca.total THEN
					verdict := format('gc returned %s, %s rows went', coalesce(res, 'NULL'), cb.total - ca.total);
				ELSIF ca.later <> cb.later THEN
					verdict := 'gc deleted a row that is not free';
				ELSIF ca.older <> 0 THEN
					verdict := format('gc left %s rows free for longer than retain', ca.older);
				END IF;
			END IF;
		ELSIF c.fn = 'stats' THEN
			IF state <> 'ok' THEN
				verdict := 'unexpected SQLSTATE';
			ELSE
				nums := string_to_array(btrim(res, '()'), ',')::bigint[];
				IF cardinality(nums) <> 9 OR EXISTS (SELECT 1 FROM unnest(nums) x WHERE x IS NULL OR x < 0) THEN
					verdict := 'stats: ' || res;
				ELSIF nums[1] < prev_grants THEN
					verdict := format('grants counter went back from %s', prev_grants);
				END IF;
				prev_grants := nums[1];
			END IF;
		ELSIF c.fn = 'view_resource' THEN
			IF state <> 'ok' THEN
				verdict := 'unexpected SQLSTATE';
			ELSIF split_part(res, '/', 1)::int > 1 THEN
				verdict := 'more than one current grant of one resource';
			ELSIF pre_held AND res <> ('1/' || pre.token) THEN
				verdict := format('view shows %s for the current grant %s', res, pre.token);
			ELSIF pre_free AND res <> '0/' THEN
				verdict := 'view shows a grant that is not current';
			END IF;
		ELSIF c.fn = 'view_all' THEN
			IF state <> 'ok' OR split_part(res, '/', 1) <> split_part(res, '/', 2) THEN
				verdict := 'view lists expired grants: ' || coalesce(res, msg);
			END IF;
		ELSIF c.fn = 'waiters' THEN
			IF state <> 'ok' OR res IS DISTINCT FROM (CASE WHEN anynull THEN NULL ELSE '0' END) THEN
				verdict := 'expected 0 waiters (NULL for NULL)';
			END IF;
		ELSIF c.fn IN ('view_holder', 'session_alive') THEN
			IF state <> 'ok' THEN
				verdict := 'unexpected SQLSTATE';
			ELSIF c.fn = 'session_alive' AND (res IS NULL) <> anynull THEN
				verdict := 'returned ' || coalesce(res, 'NULL');
			END IF;
		END IF;

		INSERT INTO hostile.results (id, batch, role, isolation, fn, call, args, outcome, result, verdict)
		VALUES (i, p_batch, me_name, iso, c.fn, hostile.shorten(c.call, 400), argtxt, state,
				hostile.shorten(coalesce(res, msg)), verdict);

		n_done := n_done + 1;
		IF n_done % p_commit_every = 0 THEN
			COMMIT;
		END IF;
	END LOOP;
END $$;
