/*-------------------------------------------------------------------------
 *
 * lease_acquire.c
 *		The acquire algorithm: the wait loop with the queue around the tries.
 *
 * This file owns how lease.acquire() and lease.try_acquire() get a grant.
 * A try (lease_try.c) reads or changes the resource's grants with the
 * statements of lease_spi.c; the decision is always the table's.  A waiter loops: try,
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
 * Before it waits it checks that the holder holds no other lease, and it
 * notes what it granted for that check (lease_held.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/int.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "pg_lease.h"

/*
 * libpq/libpq.h declares it, but pulls in libpq-be.h and with it the GSSAPI
 * headers, which a build without Kerberos development files lacks.
 */
extern bool pq_check_connection(void);

/*
 * The shortest lock wait of a try, whatever its wait (docs/sql.md "Waiting").
 * Another acquire that granted holds the resource's row until its commit,
 * which flushes the WAL: a zero-wait try must outwait that short lock, or it
 * is refused with permits free (10 ms was often too short on a busy disk).
 */
#define LEASE_LOCK_GRACE_MS 100

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
 * acquire_sleep -- sleep until wake_at, or until woken
 *
 * Preloaded, a release wakes the head.  Not preloaded nobody does: the head
 * polls, sooner while the grant in the way (ending at busy_until; the last
 * one seen in *last_busy_until) is new.
 */
static void
acquire_sleep(TimestampTz wake_at, TimestampTz busy_until, TimestampTz *last_busy_until,
			  int *poll_step_ms)
{
	if (lease_queue_exists())
	{
		lease_wait_until(wake_at);
		return;
	}
	if (busy_until != *last_busy_until)
		*poll_step_ms = 1;
	*last_busy_until = busy_until;
	lease_lockq_sleep(wake_at, poll_step_ms);
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
			result = lease_try_rows(caller, req, may_take, token, &busy_until);
		else
			result = lease_try_grant(caller, req, may_take, token, &busy_until);
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
		acquire_sleep(Min(deadline, busy_until), busy_until, &last_busy_until, &poll_step_ms);
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
		lease_held_check_no_wait(&caller, req);

	granted = acquire_loop(&caller, req, deadline, token);

	if (granted)
		acquire_check_client();

	if (granted)
	{
		/* a new term, or a re-acquire's value: observers look again at commit */
		lease_xact_observers_at_commit(req->res);
		lease_held_remember(req, &caller, *token);
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
