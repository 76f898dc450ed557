/*
 * tests/faults/hostile/generate.sql -- hostile.generate(seed, n): the storm's calls
 *
 * Two parts, n calls in all:
 *
 * - the sweep (the same for every seed): each function of the API with each
 *   expression of each of its parameters' pools, the other arguments valid;
 *   then every bystander attacked with its own token and holder label;
 * - the random part: setseed(seed) then random() picks a function, a
 *   notation (positional, named in a shuffled order, or mixed) and each
 *   argument from hostile.pool, about half of them valid so that calls get
 *   past validation; renew/release/fence/is_current often take a (resource,
 *   token) pair the storm was granted earlier (hostile.live_*), or a
 *   bystander's token.
 *
 * A valid wait longer than a few milliseconds could stall the storm on a
 * held resource for as long as it lasts, so such calls get a resource name
 * no one holds (the drawn name with a unique suffix): they still reach
 * every check, and the grant.
 */
CREATE FUNCTION hostile.pick(p_kinds text[]) RETURNS text
LANGUAGE sql VOLATILE AS $$
	SELECT expr FROM hostile.pool WHERE kind = ANY (p_kinds)
	 ORDER BY n OFFSET floor(random() * (SELECT count(*) FROM hostile.pool WHERE kind = ANY (p_kinds)))
	 LIMIT 1
$$;

-- chance -- true with probability p
CREATE FUNCTION hostile.chance(p float8) RETURNS bool
LANGUAGE sql VOLATILE AS $$ SELECT random() < p $$;

-- signature -- a function's parameters in order, and how many are required
CREATE FUNCTION hostile.signature(fn text, OUT sig text[], OUT nreq int)
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE fn
			WHEN 'acquire' THEN '{resource,ttl,wait,holder,session_bound}'
			WHEN 'try_acquire' THEN '{resource,ttl,holder,session_bound}'
			WHEN 'renew' THEN '{resource,token,ttl}'
			WHEN 'release' THEN '{resource,token}' WHEN 'fence' THEN '{resource,token}'
			WHEN 'is_current' THEN '{resource,token}'
			WHEN 'break' THEN '{resource}' WHEN 'view_resource' THEN '{resource}' WHEN 'waiters' THEN '{resource}'
			WHEN 'view_holder' THEN '{holder}' WHEN 'gc' THEN '{retain}'
			WHEN 'session_alive' THEN '{pid,started}'
			ELSE '{}' END::text[],
		   CASE fn
			WHEN 'acquire' THEN 2 WHEN 'try_acquire' THEN 2 WHEN 'renew' THEN 3
			WHEN 'release' THEN 2 WHEN 'fence' THEN 2 WHEN 'is_current' THEN 2
			WHEN 'break' THEN 1 WHEN 'view_resource' THEN 1 WHEN 'waiters' THEN 1
			WHEN 'view_holder' THEN 1 WHEN 'session_alive' THEN 2
			ELSE 0 END
$$;

/*
 * emit -- store one call of fn with its parameters' expressions (exprs, in
 * signature order) in the given notation.  positional passes the first k
 * parameters (at least the required ones); named and mixed pass the
 * required ones and those with keep[j], the named ones shuffled by keys.
 */
CREATE FUNCTION hostile.emit(p_id int, fn text, exprs text[], notation text, k int,
							 keep bool[], keys float8[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	s record := hostile.signature(fn);
	params text[] := '{}';
	items text[] := '{}';
	ord float8[] := '{}';
	args text;
	call text;
BEGIN
	IF fn = 'acquire' AND exprs[3] IN (SELECT expr FROM hostile.pool WHERE kind = 'wait_big') THEN
		exprs[1] := format('(%s) || %L', exprs[1], '#w' || p_id);
	END IF;
	IF notation = 'positional' THEN
		FOR j IN 1..k LOOP
			params := params || s.sig[j];
			items := items || exprs[j];
		END LOOP;
	ELSE
		FOR j IN 1..coalesce(cardinality(s.sig), 0) LOOP
			CONTINUE WHEN j > s.nreq AND NOT keep[j];
			params := params || s.sig[j];
			items := items || CASE WHEN notation = 'mixed' AND j <= s.nreq THEN exprs[j]
								   ELSE format('%s => %s', s.sig[j], exprs[j]) END;
			-- named arguments in any order (when mixed, the positional ones stay first)
			ord := ord || CASE WHEN notation = 'mixed' AND j <= s.nreq THEN j - 1000 ELSE keys[j] END;
		END LOOP;
		SELECT coalesce(array_agg(u.p ORDER BY u.o), '{}'), coalesce(array_agg(u.a ORDER BY u.o), '{}')
		  INTO params, items
		  FROM unnest(params, items, ord) u(p, a, o);
	END IF;
	args := coalesce(array_to_string(items, ', '), '');
	call := CASE fn
		WHEN 'view_resource' THEN format('SELECT count(*) || ''/'' || coalesce(max(token)::text, '''') FROM lease.leases WHERE resource = (%s)', args)
		WHEN 'view_holder' THEN format('SELECT count(*)::text FROM lease.leases WHERE holder = (%s)', args)
		WHEN 'view_all' THEN 'SELECT count(*) || ''/'' || count(*) FILTER (WHERE remaining > ''-1 s'' AND expires_at > clock_timestamp() - ''1 s''::interval) FROM lease.leases'
		WHEN 'stats' THEN 'SELECT row(s.*)::text FROM lease.stats() s'
		WHEN 'waiters' THEN format('SELECT lease.waiters(%s)::text', args)
		WHEN 'session_alive' THEN format('SELECT lease.session_alive(%s)::text', args)
		ELSE format('SELECT lease.%s(%s)::text', fn, args)
		END;
	-- the expressions of the parameters passed, in params' order
	INSERT INTO hostile.cases (id, fn, params, exprs, call)
	VALUES (p_id, fn, params,
			ARRAY(SELECT exprs[array_position(s.sig, u.p)] FROM unnest(params) WITH ORDINALITY u(p, o) ORDER BY o),
			call);
END $$;

-- pool_kinds -- the pools a parameter's expressions come from
CREATE FUNCTION hostile.pool_kinds(param text) RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE param
		WHEN 'resource' THEN '{resource_shared,resource,resource_bystander}'
		WHEN 'ttl' THEN '{ttl_valid,ttl}'
		WHEN 'wait' THEN '{wait_small,wait_big,wait}'
		WHEN 'holder' THEN '{holder_plain,holder}'
		WHEN 'session_bound' THEN '{bool}'
		WHEN 'token' THEN '{token,token_bystander}'
		WHEN 'retain' THEN '{retain}'
		WHEN 'pid' THEN '{pid}'
		WHEN 'started' THEN '{ts}' END::text[]
$$;

-- baseline -- a valid expression for a parameter of fn (the sweep's other arguments)
CREATE FUNCTION hostile.baseline(fn text, param text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE param
		WHEN 'resource' THEN CASE WHEN fn IN ('renew', 'release', 'fence', 'is_current')
								  THEN 'hostile.live_resource(0)' ELSE $e$'r/2'$e$ END
		WHEN 'token' THEN 'hostile.live_token(0)'
		WHEN 'ttl' THEN $e$'1 min'$e$
		WHEN 'wait' THEN $e$'0'$e$
		WHEN 'holder' THEN $e$'h2'$e$
		WHEN 'session_bound' THEN 'false'
		WHEN 'retain' THEN $e$'1 hour'$e$
		WHEN 'pid' THEN 'pg_backend_pid()'
		WHEN 'started' THEN 'now()' END
$$;

CREATE FUNCTION hostile.generate(p_seed float8, p_n int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
	-- (break and gc first: the first batch runs as the role that may call them)
	fns constant text[] := '{break,gc,acquire,try_acquire,renew,release,fence,is_current,view_resource,view_holder,waiters,session_alive}';
	r float8;
	fn text;
	s record;
	b record;
	e text;
	exprs text[];
	live int;
	notation text;
	k int;
	keep bool[];
	keys float8[];
	i int := 0;
	p text;
BEGIN
	-- every bystander, with its own token and holder label (hostile_caller's
	-- own are renewed, released or re-acquired by no one: its holder label
	-- and its token in renew or release would be valid calls that change it)
	FOR b IN SELECT * FROM hostile.bystanders ORDER BY n LOOP
		FOREACH fn IN ARRAY '{acquire,try_acquire,renew,release,fence,is_current,break,view_resource}'::text[] LOOP
			CONTINUE WHEN fn IN ('renew', 'release') AND b.role <> 'hostile_bystander';
			CONTINUE WHEN i >= p_n;
			s := hostile.signature(fn);
			exprs := ARRAY(SELECT CASE x WHEN 'resource' THEN b.expr
										 WHEN 'token' THEN format('hostile.bystander_token(%s)', b.n)
										 WHEN 'holder' THEN CASE WHEN b.role = 'hostile_bystander'
																  THEN b.holder_expr ELSE $e$'h2'$e$ END
										 ELSE hostile.baseline(fn, x) END
							 FROM unnest(s.sig) x);
			i := i + 1;
			PERFORM hostile.emit(i, fn, exprs, 'positional', cardinality(s.sig), NULL, NULL);
		END LOOP;
	END LOOP;

	-- the sweep: every pool expression of every parameter, the others valid
	<<sweep>>
	FOREACH fn IN ARRAY fns LOOP
		s := hostile.signature(fn);
		FOR pos IN 1..cardinality(s.sig) LOOP
			FOR e IN SELECT expr FROM hostile.pool WHERE kind = ANY (hostile.pool_kinds(s.sig[pos])) ORDER BY n LOOP
				EXIT sweep WHEN i >= p_n;
				exprs := ARRAY(SELECT hostile.baseline(fn, x) FROM unnest(s.sig) x);
				exprs[pos] := e;
				i := i + 1;
				PERFORM hostile.emit(i, fn, exprs, 'positional', cardinality(s.sig), NULL, NULL);
			END LOOP;
		END LOOP;
	END LOOP;
	-- the random part
	PERFORM setseed(p_seed);
	WHILE i < p_n LOOP
		i := i + 1;
		r := random();
		fn := CASE WHEN r < 0.20 THEN 'acquire' WHEN r < 0.33 THEN 'try_acquire'
				   WHEN r < 0.46 THEN 'renew' WHEN r < 0.56 THEN 'release'
				   WHEN r < 0.66 THEN 'fence' WHEN r < 0.75 THEN 'is_current'
				   WHEN r < 0.81 THEN 'break' WHEN r < 0.84 THEN 'gc'
				   WHEN r < 0.86 THEN 'stats' WHEN r < 0.92 THEN 'view_resource'
				   WHEN r < 0.95 THEN 'view_holder' WHEN r < 0.96 THEN 'view_all'
				   WHEN r < 0.98 THEN 'waiters' ELSE 'session_alive' END;
		s := hostile.signature(fn);
		live := NULL;
		IF fn IN ('renew', 'release', 'fence', 'is_current') AND hostile.chance(0.45) THEN
			live := floor(random() * 8)::int;	-- reuse the live-th most recent grant
		END IF;
		exprs := '{}';
		FOREACH p IN ARRAY s.sig LOOP
			exprs := exprs || CASE p
				WHEN 'resource' THEN
					CASE WHEN live IS NOT NULL THEN format('hostile.live_resource(%s)', live)
						 WHEN hostile.chance(0.40) THEN hostile.pick('{resource_shared}')
						 WHEN hostile.chance(0.15) THEN hostile.pick('{resource_bystander}')
						 ELSE hostile.pick('{resource}') END
				WHEN 'ttl' THEN
					CASE WHEN hostile.chance(0.55) THEN hostile.pick('{ttl_valid}') ELSE hostile.pick('{ttl}') END
				WHEN 'wait' THEN
					CASE WHEN hostile.chance(0.50) THEN hostile.pick('{wait_small}')
						 WHEN hostile.chance(0.40) THEN hostile.pick('{wait_big}')
						 ELSE hostile.pick('{wait}') END
				WHEN 'holder' THEN
					CASE WHEN hostile.chance(0.30) THEN 'NULL'
						 WHEN hostile.chance(0.55) THEN hostile.pick('{holder_plain}')
						 ELSE hostile.pick('{holder}') END
				WHEN 'session_bound' THEN
					CASE WHEN hostile.chance(0.70) THEN 'false' ELSE hostile.pick('{bool}') END
				WHEN 'token' THEN
					CASE WHEN live IS NOT NULL THEN
							format('hostile.live_token(%s)%s', live,
								   CASE WHEN hostile.chance(0.75) THEN ''
										WHEN hostile.chance(0.5) THEN ' - 1' ELSE ' + 1' END)
						 WHEN hostile.chance(0.20) THEN hostile.pick('{token_bystander}')
						 WHEN fn IN ('fence', 'is_current') AND hostile.chance(0.10)
							 THEN hostile.pick('{token_own_bystander}')
						 ELSE hostile.pick('{token}') END
				ELSE hostile.pick(hostile.pool_kinds(p))
				END;
		END LOOP;

		-- notation: which optional parameters are passed, and how
		notation := CASE WHEN fn IN ('view_resource', 'view_holder', 'view_all', 'stats',
									 'waiters', 'session_alive') THEN 'positional'
						 WHEN hostile.chance(0.5) THEN 'positional'
						 WHEN hostile.chance(0.5) THEN 'named' ELSE 'mixed' END;
		k := CASE WHEN fn IN ('view_resource', 'view_holder', 'waiters', 'session_alive') THEN cardinality(s.sig)
				  ELSE s.nreq + floor(random() * (coalesce(cardinality(s.sig), 0) - s.nreq + 1))::int END;
		keep := ARRAY(SELECT random() >= 0.4 FROM unnest(s.sig));
		keys := ARRAY(SELECT random() FROM unnest(s.sig));
		PERFORM hostile.emit(i, fn, exprs, notation, k, keep, keys);
	END LOOP;
	RETURN i;
END $$;
