/*-------------------------------------------------------------------------
 *
 * lease_wait.c
 *		How a waiting lease.acquire() sleeps, and who tries next: the shared
 *		first-come-first-served wait queue.
 *
 * This file owns the queue in shared memory, the sleep of a waiter, and the
 * GUC lease.poll_interval that bounds it; the wake-ups others ask for (at
 * commit, COMMIT PREPARED and exit, and of observers) are lease_wake.c's,
 * over the same slots (lease_queue.h).  Who is to be woken, and when, is
 * decided by their callers (lease_xact.c at commit, lease_session.c at exit).
 *
 * The grant decision is always made in the table by lease_acquire.c; the queue
 * only decides who may try and when to wake up.  A lost or early wake-up can
 * therefore only delay a grant, never break safety, and every sleep is also
 * bounded by a timer (the grant's expiry instant, the waiter's deadline and
 * lease.poll_interval) as a backstop.
 *
 * When pg_lease is preloaded, shared memory holds one WaitSlot per backend
 * (MaxBackends of them: a backend waits for one resource at a time, so the
 * pool cannot run out).  A waiting backend takes a ticket from a shared
 * counter and fills its slot; the head of a resource's queue is the in-use
 * slot with the smallest ticket among those of the same database and
 * resource name (each database has its own lease.grants, so its own queues:
 * a waiter in one database never blocks the same name in another).  Only the head tries the table; the others
 * sleep.  A newcomer, try_acquire included, may take a free resource only if
 * nobody is queued for it.  Wake-ups set the head's latch:
 *
 * - a release or break wakes the head when its transaction commits (woken
 *   earlier, the head could still see the old row version); a waiter tries
 *   once more right after joining, since a release that committed between
 *   its last try and its join found nobody to wake;
 * - a release or break in a prepared transaction wakes the head at COMMIT
 *   PREPARED: its wake set is kept here, in one PreparedWakes entry per
 *   prepared transaction (max_prepared_transactions of them), until then;
 * - a head that leaves (granted, timed out, cancelled, or its backend exits)
 *   wakes the next one;
 * - a backend that holds session-bound grants marks itself exited in its
 *   slot and wakes their heads as it exits (lease_session.c asks for it);
 * - expiry needs no waker: the head sleeps until the grant's expires_at.
 *
 * Without preload there is no queue here: the waiters queue in the lock
 * manager instead (lease_lockqueue.c), and the head re-tries at the expiry
 * instant and at least every lease.poll_interval.
 *
 * The same slots hold observers (lease.observe, lease_election.c): a backend
 * observing an election marks its slot `observing` with the resource, never
 * `in_use`, so it is neither a waiter nor a head.  Every change of a
 * resource's leader wakes all its observers: at the commit of a grant,
 * re-acquire, proclaim, release or break (lease_xact.c), at COMMIT PREPARED
 * of a release or break, and at the exit of a backend holding session-bound
 * grants.  Observer wake-ups are not counted in wakeups (waiters only).
 *
 * Every latch set here is counted (lease.stats() column wakeups).
 *
 * Locking notes: WaitQueue.lock (a named LWLock tranche) protects every slot
 * field, next_ticket and the PreparedWakes entries.  It is held only for scans of the slot array and
 * never across anything that can raise an error or sleep.  Latches are set
 * while holding it (SetLatch does not block).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/twophase.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "storage/backendid.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "pg_lease.h"
#include "lease_queue.h"

/* GUC lease.poll_interval (registered in lease_load.c) */
int			lease_poll_interval_ms = 50;

WaitQueue  *lease_wait_queue = NULL;

/* This backend's slot when it is queued, else NULL. */
static WaitSlot *my_slot = NULL;
static bool exit_hook_registered = false;

static void queue_exit_hook(int code, Datum arg);

/*
 * lease_queue_shmem_size -- shared memory for the queue
 */
Size
lease_queue_shmem_size(void)
{
	Size		size = add_size(offsetof(WaitQueue, slots),
								mul_size(MaxBackends, sizeof(WaitSlot)));

	size = MAXALIGN(size);
	return add_size(size, mul_size(max_prepared_xacts, sizeof(PreparedWakes)));
}

/*
 * lease_queue_shmem_init -- attach to (or create) the queue
 *
 * Called from the shmem startup hook with AddinShmemInitLock held.
 */
void
lease_queue_shmem_init(void)
{
	bool		found;

	lease_wait_queue = ShmemInitStruct("pg_lease wait queue", lease_queue_shmem_size(), &found);
	if (!found)
	{
		lease_wait_queue->lock = &(GetNamedLWLockTranche("pg_lease"))->lock;
		lease_wait_queue->next_ticket = 1;
		lease_wait_queue->nslots = MaxBackends;
		memset(lease_wait_queue->slots, 0, mul_size(MaxBackends, sizeof(WaitSlot)));
		lease_wait_queue->nprepared = max_prepared_xacts;
		lease_wait_queue->prepared = (PreparedWakes *)
			((char *) lease_wait_queue +
			 MAXALIGN(add_size(offsetof(WaitQueue, slots),
							   mul_size(MaxBackends, sizeof(WaitSlot)))));
		memset(lease_wait_queue->prepared, 0,
			   mul_size(max_prepared_xacts, sizeof(PreparedWakes)));
	}
}

/*
 * lease_queue_exists -- is the library preloaded, with its queue?
 */
bool
lease_queue_exists(void)
{
	return lease_wait_queue != NULL;
}

/*
 * lease_queue_enabled -- is there a queue this backend can use?
 */
bool
lease_queue_enabled(void)
{
	return lease_wait_queue != NULL &&
		MyBackendId != InvalidBackendId &&
		MyBackendId <= lease_wait_queue->nslots;
}

/*
 * queue_slot_waits_for -- is the slot queued for this resource of this database?
 */
static inline bool
queue_slot_waits_for(const WaitSlot *s, Oid dbid, const char *resource)
{
	return s->in_use && s->dbid == dbid && strcmp(s->resource, resource) == 0;
}

/*
 * queue_head -- the queued slot with the smallest ticket for a resource
 *
 * Caller holds the lock.
 */
static WaitSlot *
queue_head(Oid dbid, const char *resource)
{
	WaitSlot   *head = NULL;

	for (int i = 0; i < lease_wait_queue->nslots; i++)
	{
		WaitSlot   *s = &lease_wait_queue->slots[i];

		if (queue_slot_waits_for(s, dbid, resource) &&
			(head == NULL || s->ticket < head->ticket))
			head = s;
	}
	return head;
}

/*
 * lease_queue_wake_slot -- set a queued backend's latch, and count it
 */
void
lease_queue_wake_slot(const WaitSlot *s)
{
	SetLatch(&GetPGProcByNumber(s->pgprocno)->procLatch);
	lease_count(LEASE_STAT_WAKEUPS);
}

/*
 * lease_queue_wake_head -- set the latch of a resource's queue head, if any
 *
 * Caller holds the lock.
 */
void
lease_queue_wake_head(Oid dbid, const char *resource)
{
	WaitSlot   *head = queue_head(dbid, resource);

	if (head != NULL)
		lease_queue_wake_slot(head);
}

/*
 * lease_queue_may_take -- may this backend take the resource if it is free?
 *
 * Yes if nobody is queued for it, or this backend is the head of its queue.
 */
bool
lease_queue_may_take(const char *resource)
{
	WaitSlot   *head;
	bool		result;

	if (lease_wait_queue == NULL)
		return true;

	LWLockAcquire(lease_wait_queue->lock, LW_SHARED);
	head = queue_head(MyDatabaseId, resource);
	result = (head == NULL || head == my_slot);
	LWLockRelease(lease_wait_queue->lock);
	return result;
}

/*
 * queue_register_exit_hook -- leave queue and observers at backend exit
 */
static void
queue_register_exit_hook(void)
{
	if (!exit_hook_registered)
	{
		before_shmem_exit(queue_exit_hook, (Datum) 0);
		exit_hook_registered = true;
	}
}

/*
 * lease_queue_waiting_permits -- the permits of the head of another backend
 *
 * Returns whether another backend is queued for the resource, with the
 * permits its request names in *permits: a request of other permits than
 * the queued ones is a mismatch (LS003) when no grant is current.
 */
bool
lease_queue_waiting_permits(const char *resource, int32 *permits)
{
	bool		found = false;

	if (lease_wait_queue == NULL)
		return false;

	LWLockAcquire(lease_wait_queue->lock, LW_SHARED);
	for (int i = 0; i < lease_wait_queue->nslots; i++)
	{
		WaitSlot   *s = &lease_wait_queue->slots[i];

		if (s != my_slot && queue_slot_waits_for(s, MyDatabaseId, resource))
		{
			*permits = s->permits;
			found = true;
			break;
		}
	}
	LWLockRelease(lease_wait_queue->lock);
	return found;
}

/*
 * lease_queue_join -- join the tail of a resource's queue
 *
 * The queue is one FIFO per resource whatever the modes: only its head
 * tries, and the table decides whether the grants admit it (lease_acquire.c),
 * so a waiting writer holds back every reader after it, and a head granted
 * leaves and wakes the next, which may be admitted at once too (readers
 * behind a writer, free permits).
 */
void
lease_queue_join(const char *resource, int32 permits)
{
	WaitSlot   *slot;

	Assert(lease_queue_enabled());
	Assert(my_slot == NULL);

	queue_register_exit_hook();
	slot = &lease_wait_queue->slots[MyBackendId - 1];
	LWLockAcquire(lease_wait_queue->lock, LW_EXCLUSIVE);
	slot->pgprocno = MyProc->pgprocno;
	slot->ticket = lease_wait_queue->next_ticket++;
	slot->dbid = MyDatabaseId;
	strlcpy(slot->resource, resource, sizeof(slot->resource));
	slot->permits = permits;
	slot->in_use = true;
	LWLockRelease(lease_wait_queue->lock);
	my_slot = slot;
}

/*
 * lease_queue_leave -- leave the queue, if queued
 *
 * If this backend was the head, the next waiter becomes head, and is woken
 * when wake_next: it may take a free resource now.  A head that leaves with
 * an exclusive grant passes wake_next false: the next one could take
 * nothing before that grant's release wakes it, and a try now would only
 * contend with the new holder's statements (its sleep is bounded by
 * lease.poll_interval anyway).  Safe to call from error and exit paths.
 */
void
lease_queue_leave(bool wake_next)
{
	char		resource[LEASE_MAX_RESOURCE_BYTES + 1];
	bool		was_head;

	if (my_slot == NULL)
		return;

	LWLockAcquire(lease_wait_queue->lock, LW_EXCLUSIVE);
	was_head = (queue_head(my_slot->dbid, my_slot->resource) == my_slot);
	strlcpy(resource, my_slot->resource, sizeof(resource));
	my_slot->in_use = false;
	if (was_head && wake_next)
		lease_queue_wake_head(my_slot->dbid, resource);
	my_slot = NULL;
	LWLockRelease(lease_wait_queue->lock);
}

/*
 * lease_observe_join -- observe a resource: its changes set this backend's latch
 *
 * Caller checked lease_queue_enabled().  A backend observes one resource at
 * a time, and never while it waits in the queue (both are one statement).
 */
void
lease_observe_join(const char *resource)
{
	WaitSlot   *slot;

	Assert(lease_queue_enabled());
	queue_register_exit_hook();
	slot = &lease_wait_queue->slots[MyBackendId - 1];
	LWLockAcquire(lease_wait_queue->lock, LW_EXCLUSIVE);
	slot->pgprocno = MyProc->pgprocno;
	slot->dbid = MyDatabaseId;
	strlcpy(slot->resource, resource, sizeof(slot->resource));
	slot->observing = true;
	LWLockRelease(lease_wait_queue->lock);
}

/*
 * lease_observe_leave -- stop observing; safe to call from error and exit paths
 */
void
lease_observe_leave(void)
{
	WaitSlot   *slot;

	if (!lease_queue_enabled())
		return;
	slot = &lease_wait_queue->slots[MyBackendId - 1];
	if (!slot->observing)
		return;
	LWLockAcquire(lease_wait_queue->lock, LW_EXCLUSIVE);
	slot->observing = false;
	LWLockRelease(lease_wait_queue->lock);
}

/*
 * lease_waiter_count -- backends queued for a resource of this database; -1
 * without a queue
 */
int
lease_waiter_count(const char *resource)
{
	int			n = 0;

	if (lease_wait_queue == NULL)
		return -1;

	LWLockAcquire(lease_wait_queue->lock, LW_SHARED);
	for (int i = 0; i < lease_wait_queue->nslots; i++)
	{
		WaitSlot   *s = &lease_wait_queue->slots[i];

		if (queue_slot_waits_for(s, MyDatabaseId, resource))
			n++;
	}
	LWLockRelease(lease_wait_queue->lock);
	return n;
}

/*
 * lease_wait_until -- sleep until wake_at, a wake-up, or one poll interval
 *
 * Returns early on any latch event (interrupts are processed here); the
 * caller re-checks, so an early or spurious wake-up costs one check.
 */
void
lease_wait_until(TimestampTz wake_at)
{
	TimestampTz now = GetCurrentTimestamp();
	long		sleep_ms;

	if (wake_at <= now)
	{
		CHECK_FOR_INTERRUPTS();
		return;
	}

	/* round up, so a sleep never ends just before the instant it waits for */
	sleep_ms = (long) Min((wake_at - now + 999) / 1000, (int64) lease_poll_interval_ms);

	(void) WaitLatch(MyLatch,
					 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 sleep_ms,
					 PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/*
 * queue_exit_hook -- backend exit: leave the queue
 *
 * A backend killed while waiting never reaches the PG_CATCH of its acquire;
 * without this its slot would stay the head and block the next waiter.
 */
static void
queue_exit_hook(int code, Datum arg)
{
	lease_queue_leave(true);
	lease_observe_leave();
}
