/*-------------------------------------------------------------------------
 *
 * lease_wake.c
 *		Waking the wait queue's heads and an election's observers: now, at
 *		COMMIT PREPARED, and when a backend holding session-bound grants exits.
 *
 * This file owns the wake-ups lease_xact.c and lease_session.c ask for, the
 * wake sets of prepared transactions (one PreparedWakes entry each, until
 * COMMIT or ROLLBACK PREPARED), and the exit marks lease.session_alive()
 * reads.  The queue and its slots are lease_wait.c's (lease_queue.h); the
 * protocol is in its banner.  Every waiter's latch set here is counted
 * (lease.stats() column wakeups), an observer's is not.
 *
 * Locking notes: every function here takes lease_wait_queue->lock, or is
 * called with it held (said so), and sets latches under it (SetLatch does
 * not block); it never raises an error or sleeps while holding it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/memutils.h"

#include "pg_lease.h"
#include "lease_queue.h"

/*
 * queue_wake_observers -- set the latch of every observer of a resource
 *
 * Caller holds the lock.
 */
static void
queue_wake_observers(Oid dbid, const char *resource)
{
	for (int i = 0; i < lease_wait_queue->nslots; i++)
	{
		WaitSlot   *s = &lease_wait_queue->slots[i];

		if (s->observing && s->dbid == dbid && strcmp(s->resource, resource) == 0)
			SetLatch(&GetPGProcByNumber(s->pgprocno)->procLatch);
	}
}

/*
 * queue_wake_observers_database -- every observer of a database
 *
 * Caller holds the lock.
 */
static void
queue_wake_observers_database(Oid dbid)
{
	for (int i = 0; i < lease_wait_queue->nslots; i++)
		if (lease_wait_queue->slots[i].observing && lease_wait_queue->slots[i].dbid == dbid)
			SetLatch(&GetPGProcByNumber(lease_wait_queue->slots[i].pgprocno)->procLatch);
}

/*
 * lease_queue_wake_observers -- wake the observers of a set's resources, now
 */
void
lease_queue_wake_observers(const LeaseWakeSet *set)
{
	if (lease_wait_queue == NULL)
		return;

	LWLockAcquire(lease_wait_queue->lock, LW_SHARED);
	if (set->all)
		queue_wake_observers_database(MyDatabaseId);
	else
	{
		for (int i = 0; i < set->n; i++)
			queue_wake_observers(MyDatabaseId, set->resources[i]);
	}
	LWLockRelease(lease_wait_queue->lock);
}

/*
 * lease_wake_set_add -- add a resource to a wake set
 *
 * When the set is full, set->all is set instead: the caller then wakes every
 * backend queued in this database, which costs some spurious wake-ups and
 * loses nothing.
 */
void
lease_wake_set_add(LeaseWakeSet *set, const char *resource)
{
	for (int i = 0; i < set->n; i++)
		if (strcmp(set->resources[i], resource) == 0)
			return;
	if (set->n == LEASE_MAX_WAKE_SET)
		set->all = true;
	else
		set->resources[set->n++] = MemoryContextStrdup(TopMemoryContext, resource);
}

/*
 * queue_wake_database -- set the latch of every backend queued in a database
 *
 * Caller holds the lock.
 */
static void
queue_wake_database(Oid dbid)
{
	for (int i = 0; i < lease_wait_queue->nslots; i++)
		if (lease_wait_queue->slots[i].in_use && lease_wait_queue->slots[i].dbid == dbid)
			lease_queue_wake_slot(&lease_wait_queue->slots[i]);
}

/*
 * queue_wake_set -- wake the heads of a wake set's resources in this database
 *
 * Caller holds the lock.
 */
static void
queue_wake_set(const LeaseWakeSet *set)
{
	if (set->all)
		queue_wake_database(MyDatabaseId);	/* each re-checks whether it is a head */
	else
	{
		for (int i = 0; i < set->n; i++)
			lease_queue_wake_head(MyDatabaseId, set->resources[i]);
	}
}

/*
 * lease_queue_wake -- wake the heads of the resources in a set, now
 */
void
lease_queue_wake(const LeaseWakeSet *set)
{
	if (lease_wait_queue == NULL)
		return;

	LWLockAcquire(lease_wait_queue->lock, LW_SHARED);
	queue_wake_set(set);
	LWLockRelease(lease_wait_queue->lock);
}

/*
 * lease_queue_announce_exit -- this backend exits: mark it so, wake the heads
 * of the resources given (those of its session-bound grants)
 *
 * The mark lets lease.session_alive() answer false at once, so the waiters
 * woken here need not wait for this backend's status entry to disappear.
 */
void
lease_queue_announce_exit(const char *const *resources, int n)
{
	Assert(lease_queue_enabled());

	LWLockAcquire(lease_wait_queue->lock, LW_EXCLUSIVE);
	lease_wait_queue->slots[MyBackendId - 1].exited_pid = MyProcPid;
	lease_wait_queue->slots[MyBackendId - 1].exited_start = MyStartTimestamp;
	for (int i = 0; i < n; i++)
	{
		lease_queue_wake_head(MyDatabaseId, resources[i]);
		queue_wake_observers(MyDatabaseId, resources[i]);
	}
	LWLockRelease(lease_wait_queue->lock);
}

/*
 * lease_queue_defer_wakes -- keep a prepared transaction's wake set until
 * COMMIT PREPARED or ROLLBACK PREPARED of gid
 *
 * An entry left over by a transaction finished without us seeing it (it
 * cannot happen in one server run, but costs nothing to allow for) is reused
 * when no entry is free: its waiters then fall back to polling.
 */
void
lease_queue_defer_wakes(const char *gid, const LeaseWakeSet *set)
{
	PreparedWakes *entry = NULL;

	if (lease_wait_queue == NULL || lease_wait_queue->nprepared == 0)
		return;

	LWLockAcquire(lease_wait_queue->lock, LW_EXCLUSIVE);
	for (int i = 0; i < lease_wait_queue->nprepared && entry == NULL; i++)
		if (!lease_wait_queue->prepared[i].in_use)
			entry = &lease_wait_queue->prepared[i];
	if (entry == NULL)
		entry = &lease_wait_queue->prepared[0];
	entry->in_use = true;
	entry->dbid = MyDatabaseId;
	strlcpy(entry->gid, gid, sizeof(entry->gid));
	entry->all = set->all;
	entry->n = set->n;
	for (int i = 0; i < set->n; i++)
		strlcpy(entry->resources[i], set->resources[i], sizeof(entry->resources[i]));
	LWLockRelease(lease_wait_queue->lock);
}

/*
 * lease_queue_finish_prepared -- gid was committed (wake its set) or rolled
 * back (forget it)
 *
 * Called once COMMIT PREPARED has made the transaction visible, so a woken
 * head sees its releases.
 */
void
lease_queue_finish_prepared(const char *gid, bool committed)
{
	if (lease_wait_queue == NULL || lease_wait_queue->nprepared == 0)
		return;

	LWLockAcquire(lease_wait_queue->lock, LW_EXCLUSIVE);
	for (int i = 0; i < lease_wait_queue->nprepared; i++)
	{
		PreparedWakes *entry = &lease_wait_queue->prepared[i];

		if (!entry->in_use || entry->dbid != MyDatabaseId || strcmp(entry->gid, gid) != 0)
			continue;
		if (committed && entry->all)
		{
			queue_wake_database(entry->dbid);
			queue_wake_observers_database(entry->dbid);
		}
		else if (committed)
		{
			for (int r = 0; r < entry->n; r++)
			{
				lease_queue_wake_head(entry->dbid, entry->resources[r]);
				queue_wake_observers(entry->dbid, entry->resources[r]);
			}
		}
		entry->in_use = false;
	}
	LWLockRelease(lease_wait_queue->lock);
}

/*
 * lease_queue_session_exited -- did that backend announce its exit?
 *
 * A backend holding session-bound grants marks itself exited before it wakes
 * their waiters, so they need not wait for its status entry to disappear.
 */
bool
lease_queue_session_exited(int pid, TimestampTz started)
{
	bool		exited = false;

	if (lease_wait_queue == NULL)
		return false;

	LWLockAcquire(lease_wait_queue->lock, LW_SHARED);
	for (int i = 0; i < lease_wait_queue->nslots && !exited; i++)
		exited = (lease_wait_queue->slots[i].exited_pid == pid &&
				  lease_wait_queue->slots[i].exited_start == started);
	LWLockRelease(lease_wait_queue->lock);
	return exited;
}
