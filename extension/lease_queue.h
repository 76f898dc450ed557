/*-------------------------------------------------------------------------
 *
 * lease_queue.h
 *		The wait queue in shared memory, as lease_wait.c and lease_wake.c
 *		share it; no other module reads it.
 *
 * Locking notes: lease_wait_queue->lock protects every slot field,
 * next_ticket and the PreparedWakes entries (lease_wait.c's banner).
 *
 *-------------------------------------------------------------------------
 */
#ifndef LEASE_QUEUE_H
#define LEASE_QUEUE_H

#include "access/twophase.h"
#include "storage/lwlock.h"

#include "pg_lease.h"

typedef struct WaitSlot
{
	bool		in_use;			/* waiting for `resource` in database `dbid` */
	int			pgprocno;		/* whose latch to set */
	uint64		ticket;			/* arrival order */
	Oid			dbid;
	char		resource[LEASE_MAX_RESOURCE_BYTES + 1];
	int32		permits;		/* the request's: 0 a lock or reader-writer, else a permit */
	/* observing `resource` of `dbid` (lease.observe); never with in_use */
	bool		observing;
	/* set by a backend that exits holding session-bound grants */
	int			exited_pid;
	TimestampTz exited_start;
} WaitSlot;

/* The resources a prepared transaction released or broke: wake at COMMIT PREPARED. */
typedef struct PreparedWakes
{
	bool		in_use;
	Oid			dbid;
	char		gid[GIDSIZE];
	int			n;
	bool		all;			/* more than fit: wake every waiter of dbid */
	char		resources[LEASE_MAX_WAKE_SET][LEASE_MAX_RESOURCE_BYTES + 1];
} PreparedWakes;

typedef struct WaitQueue
{
	LWLock	   *lock;
	uint64		next_ticket;
	int			nslots;
	int			nprepared;
	PreparedWakes *prepared;	/* nprepared entries, after the slots */
	WaitSlot	slots[FLEXIBLE_ARRAY_MEMBER];
} WaitQueue;

/* The queue; NULL when the library is not preloaded (lease_wait.c). */
extern WaitQueue *lease_wait_queue;

/* Caller holds the lock (lease_wait.c). */
extern void lease_queue_wake_slot(const WaitSlot *s);
extern void lease_queue_wake_head(Oid dbid, const char *resource);

#endif							/* LEASE_QUEUE_H */
