/*-------------------------------------------------------------------------
 *
 * lease_lockqueue.c
 *		The wait queue when pg_lease is not preloaded: first come, first
 *		served in PostgreSQL's own lock manager.
 *
 * Without shared memory of its own, pg_lease queues the waiters of a
 * resource on one session-level advisory lock per resource and database:
 * the backend that holds it is the queue's head, the only one that tries
 * the table; the others wait for the lock, and the lock manager grants it
 * to them one at a time, in the order they asked.  A newcomer (try_acquire
 * included) looks at the lock in share mode first; one that cannot take
 * that at once (the lock is held or waited for) does not try the table
 * either: it waits its turn, or reports busy, so a releaser asking again
 * right after its release does not barge ahead of the waiters.
 *
 * The key is (LEASE_QUEUE_CLASS, hash of the resource) in the two-int4
 * space of advisory locks, which pg_advisory_lock(bigint) callers (the C++
 * client's advisory strategy among them) never use.  Two resources whose
 * hashes collide share a queue: one waits behind the other's waiters, which
 * delays it and decides nothing (the table decides every grant).
 *
 * Only waiting acquires hold the lock (from their first try on, when it is
 * free then), and only for the length of the call: it is
 * released when the acquire returns or fails (a session-level lock is not
 * released by the abort of the transaction, so the acquire's error path
 * releases it), and by the backend's exit.  It is never held across
 * statements, so it works through a transaction-mode pooler.
 *
 * Lock order: the queue lock comes before the resource's row and the grant
 * rows.  A head holds it while it tries and sleeps; the lease functions that
 * hold grant rows (renew, release, fence, break, gc) never take it.
 *
 * The head is woken by nothing (no shared memory to find it in): it polls,
 * every millisecond at first and twice as long each time the grant in its
 * way stays the same, up to lease.poll_interval, and at the grant's expiry.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/lock.h"

#include "pg_lease.h"

/* The first int4 of the key: 'LS' (0x4C53) and a version byte. */
#define LEASE_QUEUE_CLASS 0x4C5300

/* The queue lock this backend holds, if any. */
static bool lockq_held = false;
static LOCKTAG lockq_tag;

/*
 * lockq_tag_of -- the advisory lock of a resource's queue in this database
 */
static void
lockq_tag_of(const char *resource, LOCKTAG *tag)
{
	uint32		hash = hash_bytes((const unsigned char *) resource, (int) strlen(resource));

	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, LEASE_QUEUE_CLASS, hash, 2);
}

/*
 * lease_lockq_join_if_free -- take the queue's lock if nobody holds it
 *
 * A waiting request's first step: with the lock it is the head from its
 * arrival on, and no later request gets ahead of it.  Returns whether it
 * holds the lock.
 */
bool
lease_lockq_join_if_free(const char *resource)
{
	LOCKTAG		tag;

	if (lockq_held)
		return true;
	lockq_tag_of(resource, &tag);
	if (LockAcquire(&tag, ExclusiveLock, true, true) == LOCKACQUIRE_NOT_AVAIL)
		return false;
	lockq_tag = tag;
	lockq_held = true;
	return true;
}

/*
 * lease_lockq_may_take -- may this backend try the table now?
 *
 * Yes if it is the head, or if nobody waits: the queue's lock is neither
 * held nor waited for.  A newcomer only looks, in share mode (takes it at
 * once and gives it back): share does not conflict with share, so two
 * newcomers looking at once (two zero-wait permits, say) do not keep each
 * other out, while a head's or a waiter's exclusive request does.
 */
bool
lease_lockq_may_take(const char *resource)
{
	LOCKTAG		tag;

	if (lockq_held)
		return true;
	lockq_tag_of(resource, &tag);
	if (LockAcquire(&tag, ShareLock, true, true) == LOCKACQUIRE_NOT_AVAIL)
		return false;
	(void) LockRelease(&tag, ShareLock, true);
	return true;
}

/*
 * lockq_wait_for -- lease_in_subxact's step: wait for the lock (as a
 * session lock, which the subtransaction's end does not release)
 */
static bool
lockq_wait_for(void *tag)
{
	(void) LockAcquire((LOCKTAG *) tag, ExclusiveLock, true, false);
	return true;
}

/*
 * lease_lockq_join -- wait for the queue's lock, in the order asked
 *
 * Returns with this backend the head, or (lock_timeout, set by the caller
 * to its deadline, ended the wait) not.  The wait runs in a subtransaction
 * (lease_in_subxact) so that the lock timeout can be caught.
 */
void
lease_lockq_join(const char *resource)
{
	LOCKTAG		tag;
	bool		timed_out;

	if (lockq_held)
		return;
	lockq_tag_of(resource, &tag);
	if (lease_in_subxact(lockq_wait_for, &tag, &timed_out))
	{
		lockq_tag = tag;
		lockq_held = true;
	}
}

/*
 * lease_lockq_leave -- give the head's place to the next waiter, if held
 *
 * Safe to call from the acquire's error path.
 */
void
lease_lockq_leave(void)
{
	if (!lockq_held)
		return;
	lockq_held = false;
	(void) LockRelease(&lockq_tag, ExclusiveLock, true);
}

/*
 * lease_lockq_sleep -- the head's poll: sleep until wake_at, at most `*step`
 * milliseconds, then double the step (up to lease.poll_interval)
 */
void
lease_lockq_sleep(TimestampTz wake_at, int *step_ms)
{
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz until = wake_at;

	if (*step_ms < 1)
		*step_ms = 1;
	if (until > now + (int64) *step_ms * 1000)
		until = now + (int64) *step_ms * 1000;
	*step_ms = Min(*step_ms * 2, lease_poll_interval_ms);
	lease_wait_until(until);
}
