/*-------------------------------------------------------------------------
 *
 * lease_try.c
 *		One try of an acquire at the table: grant, or say what is in the way.
 *
 * This file owns a single try of lease.acquire() and its kinds: a lock's
 * fast path (a released lock taken in place), the decision under the
 * resource's row lock on a schema of one row per grant (0.4.0 on: locks,
 * readers and permits), and the older single-row try for a database not
 * yet updated.  A try reads or changes the grants with the statements of
 * lease_spi.c; the decision is always the table's.  It never waits but for
 * a row lock, which its caller bounds (lease_acquire.c sets lock_timeout to
 * the deadline); a try that does not grant keeps no lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/timestamp.h"

#include "pg_lease.h"

/* GUC lease.test_pause_after_clear (registered in lease_load.c) */
int			lease_test_pause_after_clear = 0;

/*
 * acquire_session_params -- parameters $at+1, $at+2 (backend_pid, backend_start):
 * this backend when the grant is session-bound, else NULL
 */
static void
acquire_session_params(Datum *values, char *nulls, int at, bool session_bound)
{
	values[at] = Int32GetDatum(MyProcPid);
	values[at + 1] = TimestampTzGetDatum(MyStartTimestamp);
	nulls[at] = nulls[at + 1] = session_bound ? ' ' : 'n';
}

/*
 * acquire_grant_params -- $1..$7 of the statements that make a grant
 *
 * Q_TAKE_RELEASED, Q_INSERT and Q_TAKE_OVER all start with (resource, ttl,
 * owner, holder, backend_pid, backend_start, value); the backend is recorded
 * only for a session-bound grant, the value only for a campaign.
 */
static void
acquire_grant_params(Datum *values, char *nulls, int nparams,
					 const LeaseRequest *req, const LeaseCaller *caller)
{
	values[0] = PointerGetDatum(req->resource);
	values[1] = IntervalPGetDatum(req->ttl);
	values[2] = ObjectIdGetDatum(caller->role);
	values[3] = CStringGetTextDatum(req->holder);
	memset(nulls, ' ', nparams);
	acquire_session_params(values, nulls, 4, req->session_bound);
	values[6] = req->value != NULL ? CStringGetTextDatum(req->value) : (Datum) 0;
	nulls[6] = req->value != NULL ? ' ' : 'n';
}

/*
 * acquire_extend_same_holder -- a holder's re-acquire of its grant `token`:
 * same token, new expiry, and bound to this session if (and only if) this
 * request says so; a campaign's value replaces the grant's.  Returns the
 * rows changed, as lease_exec_change.
 */
static uint64
acquire_extend_same_holder(const LeaseRequest *req, int64 token, bool *locked)
{
	Datum		values[7];
	char		nulls[7];

	values[0] = PointerGetDatum(req->resource);
	values[1] = Int64GetDatum(token);
	values[2] = IntervalPGetDatum(req->ttl);
	memset(nulls, ' ', 7);
	acquire_session_params(values, nulls, 3, req->session_bound);
	values[5] = BoolGetDatum(req->has_value);
	values[6] = req->value != NULL ? CStringGetTextDatum(req->value) : (Datum) 0;
	nulls[6] = req->value != NULL ? ' ' : 'n';
	return lease_exec_change(Q_EXTEND_SAME_HOLDER, values, nulls, NULL, locked);
}

/*
 * acquire_take_released -- a lock's common case: a released lock, taken in
 * place by one UPDATE, without the resource's row lock
 *
 * It meets every other acquire on the row it updates: they delete a
 * released lock before they add a grant (Q_CLEAR_OVER, and a try again for
 * one released after that statement's snapshot), so whichever comes second
 * waits for the other and sees its result.  Not when requests of other
 * permits wait: that mismatch is decided under the resource's lock.
 *
 * Lock order: it runs in a subtransaction of its own, rolled back when it
 * takes nothing.  An UPDATE that waited for a concurrent change of the row
 * and then failed its re-check keeps that row locked; kept into the rows
 * path, the lock would be held while waiting for the resource's row, the
 * reverse of the rows path's order (resource, then grants): a deadlock.
 */
static LeaseTry
acquire_take_released(const LeaseCaller *caller, const LeaseRequest *req, int64 *token,
					  TimestampTz *busy_until)
{
	Datum		values[7];
	char		nulls[7];
	bool		locked;
	int32		queued_permits;

	if (req->shared || req->permits != 0 ||
		(lease_queue_waiting_permits(req->res, &queued_permits) && queued_permits != 0))
		return LEASE_TRY_AGAIN;

	acquire_grant_params(values, nulls, 7, req, caller);
	if (lease_exec_change(Q_TAKE_RELEASED, values, nulls, token, &locked) > 0)
	{
		lease_where_note(req->res, *token); /* its release goes there (lease_where.c) */
		lease_count(LEASE_STAT_GRANTS);
		return LEASE_TRY_GRANTED;
	}
	if (locked)
	{
		*busy_until = DT_NOEND;
		return LEASE_TRY_BUSY;	/* a transaction that has not ended holds the row */
	}
	return LEASE_TRY_AGAIN;		/* nothing to take: decide under the lock */
}

/*
 * lease_try_grant -- one try to grant the resource, on a schema of one row
 * per resource (before 0.4.0)
 *
 * On LEASE_TRY_BUSY, *busy_until is when the current grant expires (now, if
 * the row is locked by a transaction that has not ended).  With may_take
 * false (others are queued first) a free resource counts as busy; only the
 * holder's own re-acquire goes through.
 */
LeaseTry
lease_try_grant(const LeaseCaller *caller, const LeaseRequest *req, bool may_take,
				int64 *token, TimestampTz *busy_until)
{
	LeaseRow	row;
	Datum		values[8];
	char		nulls[8];
	bool		locked;

	/*
	 * The common case first: a released grant, taken in one statement.  When
	 * it changes nothing, the row is missing, held, expired unreleased, or
	 * taken by someone else meanwhile: read it and decide.
	 */
	if (may_take)
	{
		LeaseTry	fast = acquire_take_released(caller, req, token, busy_until);

		if (fast != LEASE_TRY_AGAIN)
			return fast;
	}

	lease_read_row(req->resource, &row);

	if (!may_take && !lease_held_by(&row, caller, req->holder))
		return LEASE_TRY_BUSY;

	if (!row.found)
	{
		acquire_grant_params(values, nulls, 7, req, caller);

		/*
		 * DO NOTHING does not lock a conflicting row: a lost race just
		 * re-reads.  It does wait for an insert of the same resource that has
		 * not ended, which the lock timeout bounds.
		 */
		if (lease_exec_change(Q_INSERT, values, nulls, token, &locked) == 0)
			return locked ? LEASE_TRY_BUSY : LEASE_TRY_AGAIN;
		lease_count(LEASE_STAT_GRANTS);
		return LEASE_TRY_GRANTED;
	}

	if (row.unexpired && !row.session_gone)
	{
		/*
		 * The same holder (and role) asking again: same token, new expiry,
		 * and bound to this session if (and only if) this request says so;
		 * a campaign's value replaces the grant's.
		 */
		if (lease_held_by(&row, caller, req->holder))
		{
			if (acquire_extend_same_holder(req, row.token, &locked) == 0)
				return locked ? LEASE_TRY_BUSY : LEASE_TRY_AGAIN;
			*token = row.token;
			return LEASE_TRY_GRANTED;
		}
		*busy_until = row.expires_at;
		return LEASE_TRY_BUSY;
	}

	/*
	 * The grant seen is over.  Take exactly that grant: if anyone renewed or
	 * took it since, the token or expiry re-check fails and we read again.
	 * If a fencing transaction holds the row, this waits for it to end, or
	 * for the deadline.
	 */
	acquire_grant_params(values, nulls, 8, req, caller);
	values[7] = Int64GetDatum(row.token);

	if (lease_exec_change(Q_TAKE_OVER, values, nulls, token, &locked) == 0)
		return locked ? LEASE_TRY_BUSY : LEASE_TRY_AGAIN;
	lease_count(LEASE_STAT_GRANTS);
	if (!row.released)
		lease_count(LEASE_STAT_TAKEOVERS);
	return LEASE_TRY_GRANTED;
}

/* One try on a schema of one row per grant (lease_try_rows). */
typedef struct RowsTry
{
	const LeaseCaller *caller;
	const LeaseRequest *req;
	bool		may_take;
	int64	   *token;
	TimestampTz *busy_until;
	LeaseTry	result;
	bool		new_grant;		/* granted by a new row, not a re-acquire */
	int			takeovers;		/* grants cleared that had not been released */
} RowsTry;

/*
 * acquire_kind -- a request's or grant's kind, for messages
 */
static const char *
acquire_kind(bool shared, int32 permits)
{
	if (permits > 0)
		return psprintf("a permit of a semaphore of %d", permits);
	if (permits < 0)
		return "a lock or reader-writer lease";	/* a waiter's, mode unknown */
	return shared ? "a shared lease" : "an exclusive lease";
}

/*
 * acquire_mismatch -- raise LS003: the request disagrees with the resource's
 * grants or waiters (how: "held" or "waited for")
 */
static void
acquire_mismatch(const LeaseRequest *req, const char *how, bool shared, int32 permits)
{
	ereport(ERROR,
			(errcode(ERRCODE_LEASE_MODE_MISMATCH),
			 errmsg("lease \"%s\" is %s as %s", req->res, how, acquire_kind(shared, permits)),
			 errdetail("The request is for %s.", acquire_kind(req->shared, req->permits)),
			 errhint("Every holder and waiter of a resource names the same permits.")));
}

/* What the current grants of a resource, read under its lock, add up to. */
typedef struct RowsSeen
{
	int			current;		/* other holders' current grants */
	bool		exclusive_held;
	TimestampTz first_end;		/* the first of them to end */
	TimestampTz last_end;		/* the last */
	TimestampTz writer_end;		/* the last exclusive one */
} RowsSeen;

/*
 * acquire_rows_lock -- lock the resource's row (added if missing) and clear
 * its grants that are over, counting the takeovers; false if gc deleted the
 * row meanwhile (try again)
 */
static bool
acquire_rows_lock(RowsTry *t)
{
	Datum		values[1] = {PointerGetDatum(t->req->resource)};
	int			n;

	if (lease_exec(Q_LOCK_RESOURCE, values, NULL) == 0)
	{
		lease_exec(Q_ADD_RESOURCE, values, NULL);
		if (lease_exec(Q_LOCK_RESOURCE, values, NULL) == 0)
			return false;		/* gc deleted it meanwhile: again */
	}

	/* grants over go now (waiting for their fences), so what is read is current */
	n = (int) lease_exec(Q_CLEAR_OVER, values, NULL);
	for (int i = 0; i < n; i++)
	{
		bool		isnull;

		if (!DatumGetBool(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
										1, &isnull)))
			t->takeovers++;
	}

	/* the isolation tests' pause: wait for the key's holder (lock_timeout bounds it) */
	if (lease_test_pause_after_clear != 0)
	{
		Datum		key = Int64GetDatum(lease_test_pause_after_clear);

		(void) DirectFunctionCall1(pg_advisory_lock_int8, key);
		(void) DirectFunctionCall1(pg_advisory_unlock_int8, key);
	}
	return true;
}

/*
 * acquire_rows_reacquire -- the same holder (and role) asking again: its
 * grant extended (acquire_extend_same_holder); in another mode: LS003.
 * Returns whether the change is kept, with t->result set.
 */
static bool
acquire_rows_reacquire(RowsTry *t, const LeaseRow *g)
{
	const LeaseRequest *req = t->req;
	bool		locked;

	if (g->shared != req->shared || g->permits != req->permits)
		ereport(ERROR,
				(errcode(ERRCODE_LEASE_MODE_MISMATCH),
				 errmsg("holder \"%s\" holds lease \"%s\" as %s",
						req->holder, req->res, acquire_kind(g->shared, g->permits)),
				 errdetail("The request is for %s.", acquire_kind(req->shared, req->permits)),
				 errhint("Release the grant, then acquire it the other way.")));
	if (acquire_extend_same_holder(req, g->token, &locked) == 0)
	{
		t->result = locked ? LEASE_TRY_BUSY : LEASE_TRY_AGAIN;
		return false;
	}
	*t->token = g->token;
	t->result = LEASE_TRY_GRANTED;
	return true;
}

/*
 * acquire_rows_scan -- add up the resource's current grants into *seen
 *
 * Returns true when the try ends here, *kept saying whether its changes
 * stay: the holder's own re-acquire, or a released lock to clear first.
 * A grant of other permits than the request's raises LS003.
 */
static bool
acquire_rows_scan(RowsTry *t, RowsSeen *seen, bool *kept)
{
	const LeaseRequest *req = t->req;
	LeaseRow   *rows;
	int			n = lease_read_grants(req->resource, &rows);

	for (int i = 0; i < n; i++)
	{
		LeaseRow   *g = &rows[i];

		if (!g->unexpired || g->session_gone)
		{
			/*
			 * Ended since the clearing, so not cleared: not in the way, but a
			 * released lock left here is what a lock's fast path may take
			 * without the resource's lock, unable to see a grant made here
			 * before it commits.  Clear it first: try again.
			 */
			if (g->released && !g->shared && g->permits == 0)
			{
				*kept = false;	/* t->result is LEASE_TRY_AGAIN */
				return true;
			}
			continue;
		}
		if (lease_held_by(g, t->caller, req->holder))
		{
			*kept = acquire_rows_reacquire(t, g);
			return true;
		}
		if (g->permits != req->permits)
			acquire_mismatch(req, "held", g->shared, g->permits);
		seen->current++;
		if (!g->shared)
		{
			seen->exclusive_held = true;
			seen->writer_end = Max(seen->writer_end, g->expires_at);
		}
		seen->first_end = Min(seen->first_end, g->expires_at);
		seen->last_end = Max(seen->last_end, g->expires_at);
	}
	return false;
}

/*
 * acquire_rows_admit -- may the request be granted beside the grants seen?
 *
 * Sets *t->busy_until to when the grants in its way end.  Nobody holding
 * the resource, a request of other permits than the queued ones is LS003.
 */
static bool
acquire_rows_admit(RowsTry *t, const RowsSeen *seen)
{
	const LeaseRequest *req = t->req;
	int32		queued_permits;

	/* nobody holds it: the queued requests name the permits */
	if (seen->current == 0 && lease_queue_waiting_permits(req->res, &queued_permits) &&
		queued_permits != req->permits)
		acquire_mismatch(req, "waited for", false, queued_permits > 0 ? queued_permits : -1);

	if (req->permits > 0)
	{
		*t->busy_until = seen->first_end;
		return seen->current < req->permits;
	}
	if (req->shared)
	{
		*t->busy_until = seen->writer_end;
		return !seen->exclusive_held;
	}
	*t->busy_until = seen->last_end;
	return seen->current == 0;
}

/*
 * acquire_rows_decide -- lock the resource, clear what is over, grant or not
 *
 * Runs in lease_in_subxact: returns true (keep the changes) only when it
 * granted.  The resource's row lock makes the grants read here the ones
 * that stay until this subtransaction ends, so the decision holds.
 */
static bool
acquire_rows_decide(void *arg)
{
	RowsTry    *t = arg;
	const LeaseRequest *req = t->req;
	RowsSeen	seen = {0, false, DT_NOEND, DT_NOBEGIN, DT_NOBEGIN};
	Datum		values[9];
	char		nulls[9];
	bool		kept;
	bool		admitted;

	t->result = LEASE_TRY_AGAIN;
	if (!acquire_rows_lock(t))
		return false;
	if (acquire_rows_scan(t, &seen, &kept))
		return kept;

	admitted = acquire_rows_admit(t, &seen);
	if (!admitted || !t->may_take)
	{
		if (admitted)
			*t->busy_until = DT_NOEND;	/* others are queued first: until woken */
		t->result = LEASE_TRY_BUSY;
		return false;
	}

	acquire_grant_params(values, nulls, 9, req, t->caller);
	values[7] = CStringGetTextDatum(req->shared ? "shared" : "exclusive");
	values[8] = Int32GetDatum(req->permits);
	if (lease_exec(Q_INSERT, values, nulls) == 0)
		elog(ERROR, "pg_lease: a new grant was not inserted");
	*t->token = lease_result_int64(1);
	t->result = LEASE_TRY_GRANTED;
	t->new_grant = true;
	return true;
}

/*
 * acquire_behind_queue -- others are queued first: may this request go on?
 *
 * Only the holder's own re-acquire goes on (it never waits behind the
 * queue); a request of other permits than the current grants, or than the
 * queue when nobody holds the resource, is refused (LS003) at once; any
 * other waits its turn.  It reads the grants and locks nothing: a releaser
 * asking again right after its release would otherwise lock the resource
 * and delete its own released lock (to roll it back) while the woken head
 * tries to take that very row.
 */
static bool
acquire_behind_queue(const LeaseCaller *caller, const LeaseRequest *req)
{
	LeaseRow   *rows;
	int			n = lease_read_grants(req->resource, &rows);
	int			current = 0;
	int32		queued_permits;

	for (int i = 0; i < n; i++)
	{
		LeaseRow   *g = &rows[i];

		if (!g->unexpired || g->session_gone)
			continue;
		if (lease_held_by(g, caller, req->holder))
			return true;
		if (g->permits != req->permits)
			acquire_mismatch(req, "held", g->shared, g->permits);
		current++;
	}
	if (current == 0 && lease_queue_waiting_permits(req->res, &queued_permits) &&
		queued_permits != req->permits)
		acquire_mismatch(req, "waited for", false, queued_permits > 0 ? queued_permits : -1);
	return false;
}

/*
 * lease_try_rows -- one try to grant, on a schema of one row per grant
 * (0.4.0 on)
 *
 * As lease_try_grant: on LEASE_TRY_BUSY, *busy_until is when a grant in
 * the way ends (now, if the resource is locked by a transaction that has not
 * ended; DT_NOEND if only the queue is in the way).
 */
LeaseTry
lease_try_rows(const LeaseCaller *caller, const LeaseRequest *req, bool may_take,
			   int64 *token, TimestampTz *busy_until)
{
	RowsTry		t = {caller, req, may_take, token, busy_until, LEASE_TRY_AGAIN, false, 0};
	bool		locked;

	if (may_take)
	{
		LeaseTry	fast = acquire_take_released(caller, req, token, busy_until);

		if (fast != LEASE_TRY_AGAIN)
			return fast;
	}
	else if (!acquire_behind_queue(caller, req))
	{
		*busy_until = DT_NOEND; /* until the queue lets it try */
		return LEASE_TRY_BUSY;
	}

	if (!lease_in_subxact(acquire_rows_decide, &t, &locked))
	{
		if (locked)
		{
			*busy_until = DT_NOEND;
			return LEASE_TRY_BUSY;
		}
		return t.result;
	}
	if (t.new_grant)
		lease_count(LEASE_STAT_GRANTS);
	for (int i = 0; i < t.takeovers; i++)
		lease_count(LEASE_STAT_TAKEOVERS);
	return t.result;
}
