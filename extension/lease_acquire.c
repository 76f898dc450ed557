/*-------------------------------------------------------------------------
 *
 * lease_acquire.c
 *		The acquire algorithm: one try at the table, the wait loop with the
 *		queue, and the no-hold-and-wait check with the grant hints it uses.
 *
 * This file owns how lease.acquire() and lease.try_acquire() get a grant.
 * A try reads or changes the resource's row with the statements of
 * lease_spi.c; the decision is always the table's.  A waiter loops: try,
 * join the resource's queue (lease_wait.c), sleep until a wake-up, the
 * grant's expiry, the deadline or one poll interval, try again.  Only the
 * queue head tries; a newcomer may take a free resource only when nobody is
 * queued for it.
 *
 * wait bounds every acquire.  A try that meets a row locked by a transaction
 * that has not ended (a grant not yet committed, open or prepared; a fence
 * on an expired grant) waits for that lock only until the deadline, and at
 * least LEASE_LOCK_GRACE_MS: lock_timeout is set to it for the statements of
 * the try (the caller's own lock_timeout does not apply: wait is the
 * timeout), and a statement ended by it counts as "busy".  So an acquire
 * returns within max(wait, grace) plus its statements' own time, and never
 * takes over a grant whose fencing transaction is still open.
 *
 * It also keeps every grant this backend made, for the check that a holder
 * never waits while holding another lease (which makes lease waits
 * deadlock-free).  The set is exact: a grant leaves it when released here,
 * or when the table says it is no longer current, never because others came
 * after it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/int.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "pg_lease.h"

/*
 * libpq/libpq.h declares it, but pulls in libpq-be.h and with it the GSSAPI
 * headers, which a build without Kerberos development files lacks.
 */
extern bool pq_check_connection(void);

/* GUC lease.test_pause_after_clear (registered in lease_load.c) */
int			lease_test_pause_after_clear = 0;

/*
 * The shortest lock wait of a try, whatever its wait (docs/sql.md "Waiting").
 * Another acquire that granted holds the resource's row until its commit,
 * which flushes the WAL: a zero-wait try must outwait that short lock, or it
 * is refused with permits free (10 ms was often too short on a busy disk).
 */
#define LEASE_LOCK_GRACE_MS 100

typedef enum LeaseTry
{
	LEASE_TRY_GRANTED,
	LEASE_TRY_BUSY,				/* someone else holds it: wait or give up */
	LEASE_TRY_AGAIN				/* the row changed under us: read it again */
} LeaseTry;

/*
 * Grants this backend made, for the nested-wait check (no hold-and-wait),
 * keyed by resource: the last grant of each.  An entry counts only once the
 * table confirms it is current; one found not current is dropped.
 */
typedef struct HeldGrant
{
	char		resource[LEASE_MAX_RESOURCE_BYTES + 1];	/* hash key */
	char		holder[LEASE_MAX_HOLDER_BYTES + 1];
	Oid			role;
	int64		token;
} HeldGrant;

static HTAB *held_grants = NULL;

/* Verify every entry (dropping the stale ones) once the set grows past this. */
#define LEASE_HELD_PRUNE_MIN 1024
static long held_prune_at = LEASE_HELD_PRUNE_MIN;

/*
 * acquire_row_held_by -- is the row a current grant of this holder and role?
 *
 * Such a holder asking again is an idempotent re-acquire, never a wait.
 */
static bool
acquire_row_held_by(const LeaseRow *row, const LeaseCaller *caller, const char *holder)
{
	return row->found && row->unexpired && !row->session_gone &&
		row->owner == caller->role && strcmp(row->holder, holder) == 0;
}

/*
 * acquire_holds -- has this holder and role a current grant of the resource?
 */
static bool
acquire_holds(const LeaseCaller *caller, const LeaseRequest *req)
{
	LeaseRow   *rows;
	int			n = lease_read_grants(req->resource, &rows);

	for (int i = 0; i < n; i++)
		if (acquire_row_held_by(&rows[i], caller, req->holder))
			return true;
	return false;
}

/*
 * acquire_grant_is_current -- does the table say the held grant is current?
 */
static bool
acquire_grant_is_current(const HeldGrant *g)
{
	Datum		values[2];

	values[0] = CStringGetTextDatum(g->resource);
	values[1] = Int64GetDatum(g->token);
	return lease_exec(Q_IS_CURRENT, values, NULL) > 0;
}

/*
 * acquire_prune_held -- drop every grant the table no longer has as current
 *
 * Keeps the set as large as the grants this backend still holds, however
 * many it made.  Needs SPI (called between lease_begin and lease_end).
 */
static void
acquire_prune_held(void)
{
	HASH_SEQ_STATUS scan;
	HeldGrant  *g;

	hash_seq_init(&scan, held_grants);
	while ((g = hash_seq_search(&scan)) != NULL)
		if (!acquire_grant_is_current(g))
			(void) hash_search(held_grants, g->resource, HASH_REMOVE, NULL);
	held_prune_at = Max(LEASE_HELD_PRUNE_MIN, 2 * hash_get_num_entries(held_grants));
}

/*
 * acquire_remember_grant -- note a grant for the nested-wait check
 */
static void
acquire_remember_grant(const LeaseRequest *req, const LeaseCaller *caller, int64 token)
{
	HeldGrant  *g;

	if (held_grants == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(((HeldGrant *) NULL)->resource);
		ctl.entrysize = sizeof(HeldGrant);
		held_grants = hash_create("pg_lease grants of this backend", 64, &ctl,
								  HASH_ELEM | HASH_STRINGS);
	}
	else if (hash_get_num_entries(held_grants) >= held_prune_at)
		acquire_prune_held();

	g = hash_search(held_grants, req->res, HASH_ENTER, NULL);
	strlcpy(g->holder, req->holder, sizeof(g->holder));
	g->role = caller->role;
	g->token = token;
}

/*
 * lease_acquire_forget_grant -- this backend released the grant
 */
void
lease_acquire_forget_grant(const char *res, int64 token)
{
	HeldGrant  *g;

	if (held_grants == NULL)
		return;
	g = hash_search(held_grants, res, HASH_FIND, NULL);
	if (g != NULL && g->token == token)
		(void) hash_search(held_grants, res, HASH_REMOVE, NULL);
}

/*
 * acquire_check_no_hold_and_wait -- refuse to wait while holding another lease
 *
 * A holder that waits while holding could deadlock with one that does the
 * reverse; refusing the wait makes lease waits deadlock-free.  The holder is
 * the label (the default label names this backend) and the role: another
 * role's grants under the same label are not this holder's.
 */
static void
acquire_check_no_hold_and_wait(const LeaseCaller *caller, const LeaseRequest *req)
{
	HASH_SEQ_STATUS scan;
	HeldGrant  *g;
	char		other[LEASE_MAX_RESOURCE_BYTES + 1];

	if (held_grants == NULL)
		return;

	other[0] = '\0';
	hash_seq_init(&scan, held_grants);
	while ((g = hash_seq_search(&scan)) != NULL)
	{
		if (g->role != caller->role || strcmp(g->holder, req->holder) != 0 ||
			strcmp(g->resource, req->res) == 0)
			continue;
		if (!acquire_grant_is_current(g))
		{
			/* released elsewhere, expired, broken or rolled back */
			(void) hash_search(held_grants, g->resource, HASH_REMOVE, NULL);
			continue;
		}
		strlcpy(other, g->resource, sizeof(other));
		hash_seq_term(&scan);
		break;
	}
	if (other[0] == '\0')
		return;

	/*
	 * Asking again for a resource it holds is a re-acquire: it never waits.
	 * The grant may come from another connection of the same holder, so ask
	 * the table before refusing.
	 */
	if (!acquire_holds(caller, req))
		ereport(ERROR,
				(errcode(ERRCODE_LEASE_NESTED_WAIT),
				 errmsg("cannot wait for lease \"%s\" while holding lease \"%s\"",
						req->res, other),
				 errdetail("Holder \"%s\" holds \"%s\"; waiting while holding could deadlock.",
						   req->holder, other),
				 errhint("Release \"%s\" first, or call with wait => '0'.", other)));
}

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
 * acquire_try_grant -- one try to grant the resource
 *
 * On LEASE_TRY_BUSY, *busy_until is when the current grant expires (now, if
 * the row is locked by a transaction that has not ended).  With may_take
 * false (others are queued first) a free resource counts as busy; only the
 * holder's own re-acquire goes through.
 */
static LeaseTry
acquire_try_grant(const LeaseCaller *caller, const LeaseRequest *req, bool may_take,
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

	if (!may_take && !acquire_row_held_by(&row, caller, req->holder))
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
		if (acquire_row_held_by(&row, caller, req->holder))
		{
			values[0] = PointerGetDatum(req->resource);
			values[1] = Int64GetDatum(row.token);
			values[2] = IntervalPGetDatum(req->ttl);
			memset(nulls, ' ', 7);
			acquire_session_params(values, nulls, 3, req->session_bound);
			values[5] = BoolGetDatum(req->has_value);
			values[6] = req->value != NULL ? CStringGetTextDatum(req->value) : (Datum) 0;
			nulls[6] = req->value != NULL ? ' ' : 'n';
			if (lease_exec_change(Q_EXTEND_SAME_HOLDER, values, nulls, NULL, &locked) == 0)
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

/* One try on a schema of one row per grant (acquire_try_rows). */
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
	Datum		values[9];
	char		nulls[9];
	LeaseRow   *rows;
	int			n;
	int			current = 0;
	bool		exclusive_held = false;
	TimestampTz first_end = DT_NOEND;
	TimestampTz last_end = DT_NOBEGIN;
	TimestampTz writer_end = DT_NOBEGIN;
	bool		admitted;
	int32		queued_permits;

	t->result = LEASE_TRY_AGAIN;

	values[0] = PointerGetDatum(req->resource);
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

	n = lease_read_grants(req->resource, &rows);
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
				return false;	/* t->result is LEASE_TRY_AGAIN */
			continue;
		}

		/*
		 * The same holder (and role) asking again: same token, new expiry,
		 * and bound to this session if (and only if) this request says so;
		 * a campaign's value replaces the grant's.  In another mode: LS003.
		 */
		if (acquire_row_held_by(g, t->caller, req->holder))
		{
			bool		locked;

			if (g->shared != req->shared || g->permits != req->permits)
				ereport(ERROR,
						(errcode(ERRCODE_LEASE_MODE_MISMATCH),
						 errmsg("holder \"%s\" holds lease \"%s\" as %s",
								req->holder, req->res, acquire_kind(g->shared, g->permits)),
						 errdetail("The request is for %s.", acquire_kind(req->shared, req->permits)),
						 errhint("Release the grant, then acquire it the other way.")));
			values[1] = Int64GetDatum(g->token);
			values[2] = IntervalPGetDatum(req->ttl);
			memset(nulls, ' ', 7);
			acquire_session_params(values, nulls, 3, req->session_bound);
			values[5] = BoolGetDatum(req->has_value);
			values[6] = req->value != NULL ? CStringGetTextDatum(req->value) : (Datum) 0;
			nulls[6] = req->value != NULL ? ' ' : 'n';
			if (lease_exec_change(Q_EXTEND_SAME_HOLDER, values, nulls, NULL, &locked) == 0)
			{
				t->result = locked ? LEASE_TRY_BUSY : LEASE_TRY_AGAIN;
				return false;
			}
			*t->token = g->token;
			t->result = LEASE_TRY_GRANTED;
			return true;
		}
		if (g->permits != req->permits)
			acquire_mismatch(req, "held", g->shared, g->permits);
		current++;
		if (!g->shared)
		{
			exclusive_held = true;
			writer_end = Max(writer_end, g->expires_at);
		}
		first_end = Min(first_end, g->expires_at);
		last_end = Max(last_end, g->expires_at);
	}

	/* nobody holds it: the queued requests name the permits */
	if (current == 0 && lease_queue_waiting_permits(req->res, &queued_permits) &&
		queued_permits != req->permits)
		acquire_mismatch(req, "waited for", false, queued_permits > 0 ? queued_permits : -1);

	if (req->permits > 0)
	{
		admitted = current < req->permits;
		*t->busy_until = first_end;
	}
	else if (req->shared)
	{
		admitted = !exclusive_held;
		*t->busy_until = writer_end;
	}
	else
	{
		admitted = current == 0;
		*t->busy_until = last_end;
	}
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
		if (acquire_row_held_by(g, caller, req->holder))
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
 * acquire_try_rows -- one try to grant, on a schema of one row per grant
 *
 * As acquire_try_grant: on LEASE_TRY_BUSY, *busy_until is when a grant in
 * the way ends (now, if the resource is locked by a transaction that has not
 * ended; DT_NOEND if only the queue is in the way).
 */
static LeaseTry
acquire_try_rows(const LeaseCaller *caller, const LeaseRequest *req, bool may_take,
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

/*
 * acquire_bound_lock_waits -- lock waits of the next try end at the deadline
 *
 * Sets the lock timeout to the time left, rounded up to a millisecond, and
 * at least LEASE_LOCK_GRACE_MS; no timeout when the wait has no end.  It
 * writes LockTimeout, the variable behind lock_timeout, directly rather than
 * through the GUC machinery: acquire_loop saves it first and puts it back
 * however the acquire ends, and a GUC nest level would cost a pass over
 * every setting of the server at each acquire (AtEOXact_GUC: about a tenth
 * of an acquire's time on a hot resource).  Nothing reads the setting
 * meanwhile but the lock manager, when a lock wait starts.
 */
static void
acquire_bound_lock_waits(TimestampTz deadline)
{
	int			timeout_ms = 0;

	if (deadline != DT_NOEND)
	{
		int64		left_ms = (deadline - GetCurrentTimestamp() + 999) / 1000;

		timeout_ms = (int) Min(Max(left_ms, LEASE_LOCK_GRACE_MS), INT_MAX);
	}
	LockTimeout = timeout_ms;
}

/*
 * The wait queue of the resource: in shared memory when pg_lease is
 * preloaded (lease_wait.c), in the lock manager otherwise (lease_lockqueue.c).
 * Both say who may try (the head, or anyone when nobody waits), take a
 * waiter in at the tail, and let it go however the acquire ends.
 */
static bool
acquire_may_take(const char *res)
{
	return lease_queue_exists() ? lease_queue_may_take(res) : lease_lockq_may_take(res);
}

static void
acquire_leave_queue(bool wake_next)
{
	if (lease_queue_exists())
		lease_queue_leave(wake_next);
	else
		lease_lockq_leave();
}

/*
 * acquire_join_queue -- take a waiter in at the tail; returns whether it is
 * queued.  Preloaded, a backend without a slot is not (it polls).  Not
 * preloaded, at_once takes the queue's lock only if it is free; otherwise
 * the wait for it ends with the backend the head or past its deadline.
 */
static bool
acquire_join_queue(const LeaseRequest *req, bool at_once)
{
	if (lease_queue_exists())
	{
		if (!lease_queue_enabled())
			return false;
		lease_queue_join(req->res, req->permits);
		return true;
	}
	if (at_once)
		return lease_lockq_join_if_free(req->res);
	lease_lockq_join(req->res);
	return true;
}

/*
 * acquire_try_until -- try until granted or the deadline passes; queue and sleep
 *
 * Returns whether the resource was granted, with its token in *token.  The
 * caller leaves the queue afterwards, on error too.
 */
static bool
acquire_try_until(const LeaseCaller *caller, const LeaseRequest *req,
				  TimestampTz deadline, int64 *token)
{
	bool		queued = false;
	bool		tried = false;
	bool		contended = false;
	TimestampTz last_busy_until = DT_NOBEGIN;
	int			poll_step_ms = 1;

	/*
	 * A request that may wait queues before its first try, so that its turn
	 * is its arrival: a first try made outside the queue could wait for a
	 * row lock (another acquire deciding, an open grant) while a later
	 * request queued, became the head and was granted first.  Not
	 * preloaded, it takes the queue's lock now if it is free (it is then
	 * the head); else it joins after one try (below), which lets the
	 * holder's own re-acquire through without waiting behind the queue.
	 */
	if (req->wait_usecs > 0)
		queued = acquire_join_queue(req, true);

	for (;;)
	{
		TimestampTz busy_until = DT_NOEND;
		bool		may_take = acquire_may_take(req->res);
		LeaseTry	result;

		CHECK_FOR_INTERRUPTS();

		acquire_bound_lock_waits(deadline);

		/*
		 * A queued waiter that is not the head has nothing to try, but for
		 * its first look: the grants may be its own (a re-acquire), or of
		 * other permits (LS003).
		 */
		if (queued && !may_take && tried)
			result = LEASE_TRY_BUSY;
		else if (lease_schema_has_rows())
			result = acquire_try_rows(caller, req, may_take, token, &busy_until);
		else
			result = acquire_try_grant(caller, req, may_take, token, &busy_until);
		tried = true;
		if (result == LEASE_TRY_GRANTED)
			return true;
		if (result == LEASE_TRY_AGAIN)
			continue;

		if (!contended)
		{
			contended = true;
			lease_count(LEASE_STAT_CONTENDED);
		}
		if (GetCurrentTimestamp() >= deadline)
		{
			if (req->wait_usecs > 0)
				lease_count(LEASE_STAT_TIMEOUTS);
			return false;
		}
		if (!queued && acquire_join_queue(req, false))
		{
			/*
			 * (A backend that may not wait never gets here.)  Queued now, so a
			 * release that commits from here on wakes us (preloaded), or the
			 * head's place came (not preloaded).  One committed between our
			 * try and the join did not see us: try once more.
			 */
			queued = true;
			continue;
		}
		if (lease_queue_exists())
			lease_wait_until(Min(deadline, busy_until));
		else
		{
			/* nobody wakes the head: poll, sooner while the grant in the way is new */
			if (busy_until != last_busy_until)
				poll_step_ms = 1;
			last_busy_until = busy_until;
			lease_lockq_sleep(Min(deadline, busy_until), &poll_step_ms);
		}
	}
}

/*
 * acquire_loop -- acquire_try_until, and out of the queue however it ends
 *
 * A head granted an exclusive lease does not wake the next waiter: nothing
 * is free for it until that grant ends, which wakes it.
 */
static bool
acquire_loop(const LeaseCaller *caller, const LeaseRequest *req,
			 TimestampTz deadline, int64 *token)
{
	bool		granted = false;
	int			caller_lock_timeout = LockTimeout;	/* see acquire_bound_lock_waits */

	PG_TRY();
	{
		granted = acquire_try_until(caller, req, deadline, token);
	}
	PG_CATCH();
	{
		/* cancel, statement_timeout, any error: never block the next waiter */
		LockTimeout = caller_lock_timeout;
		acquire_leave_queue(true);
		PG_RE_THROW();
	}
	PG_END_TRY();
	LockTimeout = caller_lock_timeout;
	acquire_leave_queue(!(granted && !req->shared && req->permits == 0));
	return granted;
}

/*
 * acquire_check_client -- undo a grant whose client has hung up
 *
 * A client that gave up on its acquire (its own deadline passed while this
 * backend was stopped, swapped out or cut off) closes its connection; a grant
 * made after that would stay with a holder nobody knows until its TTL.  So
 * a grant is refused when the client's socket is already closed: the error
 * rolls it back (in a transaction block the client's exit would abort it
 * anyway).  What remains is the instant between this check and the commit.
 */
static void
acquire_check_client(void)
{
	if (MyProcPort == NULL || whereToSendOutput != DestRemote)
		return;
	if (!WaitEventSetCanReportClosed())
		return;
	if (!pq_check_connection())
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("client closed the connection before the grant was returned"),
				 errdetail("The grant was undone: no client would know it is held.")));
}

/*
 * lease_acquire_grant -- acquire or try_acquire: grant req->res, waiting up
 * to req->wait_usecs
 *
 * Returns whether the resource was granted, with its token in *token.
 */
bool
lease_acquire_grant(const LeaseRequest *req, int64 *token)
{
	LeaseCaller caller;
	TimestampTz deadline;
	bool		granted;

	*token = 0;

	if (req->wait_usecs > 0 && IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("lease.acquire cannot wait in a REPEATABLE READ or SERIALIZABLE transaction"),
				 errdetail("The transaction's snapshot would never see the lease being released."),
				 errhint("Acquire in a READ COMMITTED transaction, or pass wait => '0' and retry.")));

	if (pg_add_s64_overflow(GetCurrentTimestamp(), req->wait_usecs, &deadline))
		deadline = DT_NOEND;

	lease_begin(&caller);
	if ((req->shared || req->permits > 0) && !lease_schema_has_rows())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("shared and counted leases need pg_lease 0.4.0 in this database"),
				 errhint("Run ALTER EXTENSION pg_lease UPDATE.")));

	/*
	 * The wait argument is the timeout, row-lock waits included: each try
	 * sets the lock timeout to the time left (acquire_bound_lock_waits);
	 * the caller's setting is back when acquire_loop returns.
	 */
	if (req->wait_usecs > 0)
		acquire_check_no_hold_and_wait(&caller, req);

	granted = acquire_loop(&caller, req, deadline, token);

	if (granted)
		acquire_check_client();

	if (granted)
	{
		/* a new term, or a re-acquire's value: observers look again at commit */
		lease_xact_observers_at_commit(req->res);
		acquire_remember_grant(req, &caller, *token);
		if (req->session_bound)
			lease_session_note_grant(req->res);
		else
			lease_session_forget_grant(req->res);	/* a re-acquire unbinds */
	}

	lease_end(&caller);

	/*
	 * A grant must survive a crash before anyone is told of it: otherwise
	 * recovery could hand its token out again.  Flush even when the session
	 * has synchronous_commit = off.
	 */
	if (granted)
		ForceSyncCommit();

	return granted;
}
