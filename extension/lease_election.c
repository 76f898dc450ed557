/*-------------------------------------------------------------------------
 *
 * lease_election.c
 *		lease.leader and lease.observe: an election's current leader, read
 *		once or awaited in the server until it changes.
 *
 * An election is a resource; its leader is the resource's current grant
 * (unexpired, session alive: what lease.leases shows), its term the grant's
 * token, its value the grant's value, since the grant's granted_at.
 *
 * lease.observe sleeps in the server, in one statement (so it works through
 * a transaction-mode pooler, where LISTEN does not).  With the library
 * preloaded the backend registers as an observer of the resource
 * (lease_wait.c) before each read, so a change committed after the read sets
 * its latch; one committed before it is seen by the read.  An expiry with
 * nobody taking over is no event: the observer sleeps until the grant's
 * expires_at and reads again.  Every sleep is also bounded by a safety net
 * (OBSERVE_SAFETY_NET_MS preloaded: for a leader whose backend crashed
 * without announcing its exit, or a grant made in a prepared transaction),
 * and without preload by lease.poll_interval: then observe is a bounded poll.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/int.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "pg_lease.h"

/* The longest sleep of a preloaded observer between two reads. */
#define OBSERVE_SAFETY_NET_MS 1000

/*
 * lease_election_read -- the election's current grant, as the table says now
 *
 * Runs its own lease_begin/lease_end; the value is copied into the memory
 * context current at the call.
 */
void
lease_election_read(text *resource, LeaseLeader *leader)
{
	MemoryContext outer = CurrentMemoryContext;
	LeaseCaller caller;
	Datum		values[1] = {PointerGetDatum(resource)};
	bool		isnull;

	memset(leader, 0, sizeof(*leader));
	lease_begin(&caller);
	if (lease_exec(Q_LEADER, values, NULL) > 0)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		Datum		value = SPI_getbinval(tup, desc, 1, &isnull);

		leader->found = true;
		if (!isnull)
		{
			MemoryContext spi = MemoryContextSwitchTo(outer);

			leader->value = TextDatumGetCString(value);
			MemoryContextSwitchTo(spi);
		}
		leader->term = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
		leader->since = DatumGetTimestampTz(SPI_getbinval(tup, desc, 3, &isnull));
		leader->expires_at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 4, &isnull));
	}
	lease_end(&caller);
}

/*
 * election_differs -- is the leader read other than (after_term, after_value)?
 *
 * after_term 0 means the caller saw no leader.
 */
static bool
election_differs(const LeaseLeader *leader, int64 after_term, const char *after_value)
{
	if (!leader->found)
		return after_term != 0;
	if (leader->term != after_term)
		return true;
	if ((leader->value == NULL) != (after_value == NULL))
		return true;
	return leader->value != NULL && strcmp(leader->value, after_value) != 0;
}

/*
 * election_sleep -- sleep until wake_at, a latch event, or the safety net
 */
static void
election_sleep(TimestampTz wake_at, bool registered)
{
	TimestampTz now = GetCurrentTimestamp();
	int64		cap_ms = registered ? OBSERVE_SAFETY_NET_MS : lease_poll_interval_ms;
	long		sleep_ms;

	if (wake_at <= now)
		return;
	/* round up, so a sleep never ends just before the instant it waits for */
	sleep_ms = (long) Min((wake_at - now + 999) / 1000, cap_ms);
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 sleep_ms, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
}

/*
 * election_observe_loop -- read until the leader differs or the deadline passes
 *
 * Each read's memory is freed before the next one; the last read is copied
 * into the caller's context.
 */
static void
election_observe_loop(const LeaseRequest *req, int64 after_term, const char *after_value,
					  TimestampTz deadline, bool registered, LeaseLeader *leader)
{
	MemoryContext outer = CurrentMemoryContext;
	MemoryContext loop = AllocSetContextCreate(CurrentMemoryContext, "pg_lease observe",
											   ALLOCSET_SMALL_SIZES);

	for (;;)
	{
		TimestampTz wake_at = deadline;

		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(loop);
		MemoryContextSwitchTo(loop);
		lease_election_read(req->resource, leader);
		MemoryContextSwitchTo(outer);
		if (election_differs(leader, after_term, after_value) ||
			GetCurrentTimestamp() >= deadline)
			break;
		/* an expiry with nobody taking over has no waker: wake at it */
		if (leader->found && leader->expires_at < wake_at)
			wake_at = leader->expires_at;
		election_sleep(wake_at, registered);
	}
	if (leader->value != NULL)
		leader->value = pstrdup(leader->value);
	MemoryContextDelete(loop);
}

/*
 * lease_election_observe -- wait at most req->wait_usecs until the election
 * differs from (after_term, after_value); *leader is its state then
 *
 * Cancel and statement_timeout end the wait (CHECK_FOR_INTERRUPTS).
 */
void
lease_election_observe(const LeaseRequest *req, int64 after_term,
					   const char *after_value, LeaseLeader *leader)
{
	TimestampTz deadline;
	bool		registered = lease_queue_enabled();

	if (req->wait_usecs > 0 && IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("lease.observe cannot wait in a REPEATABLE READ or SERIALIZABLE transaction"),
				 errdetail("The transaction's snapshot would never see the election change."),
				 errhint("Observe in a READ COMMITTED transaction, or pass wait => '0'.")));

	if (pg_add_s64_overflow(GetCurrentTimestamp(), req->wait_usecs, &deadline))
		deadline = DT_NOEND;

	if (registered)
		lease_observe_join(req->res);
	PG_TRY();
	{
		election_observe_loop(req, after_term, after_value, deadline, registered, leader);
	}
	PG_CATCH();
	{
		lease_observe_leave();
		PG_RE_THROW();
	}
	PG_END_TRY();
	lease_observe_leave();
}
