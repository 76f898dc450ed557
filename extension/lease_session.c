/*-------------------------------------------------------------------------
 *
 * lease_session.c
 *		Session liveness: lease.session_alive(), and the session-bound grants
 *		this backend holds, whose waiters it wakes when it exits.
 *
 * A session-bound grant (session_bound => true) is current only while the
 * backend that took it runs; the statements ask lease.session_alive() for
 * that.  When such a backend exits, it marks itself exited in the wait queue
 * and wakes the queue heads of its grants (lease_wait.c does both), so their
 * waiters need not sleep until the next poll to find the grant over.
 *
 * The set of those grants is exact and unbounded (a hash table of resource
 * names): a grant leaves it when this backend releases it or re-acquires it
 * without session_bound, so an exit wakes the waiters of the grants still
 * bound to it and nobody else.  A grant that ended otherwise (expired and
 * taken over, broken, rolled back) stays in the set until the exit, which
 * then wakes its resource's head once more than needed: harmless.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "utils/backend_status.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "pg_lease.h"

/* Resources this backend holds session-bound grants of: wake at exit. */
typedef struct SessionGrant
{
	char		resource[LEASE_MAX_RESOURCE_BYTES + 1];	/* hash key */
} SessionGrant;

static HTAB *session_grants = NULL;

static void session_exit_hook(int code, Datum arg);

/*
 * lease_session_note_grant -- this backend holds a session-bound grant
 *
 * Its waiters are woken when this backend exits.  Noted at acquire time even
 * if the transaction later rolls back: a spurious wake-up is harmless.
 */
void
lease_session_note_grant(const char *resource)
{
	if (!lease_queue_enabled())
		return;
	if (session_grants == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(((SessionGrant *) NULL)->resource);
		ctl.entrysize = sizeof(SessionGrant);
		session_grants = hash_create("pg_lease session-bound grants", 16, &ctl,
									 HASH_ELEM | HASH_STRINGS);
		before_shmem_exit(session_exit_hook, (Datum) 0);
	}
	(void) hash_search(session_grants, resource, HASH_ENTER, NULL);
}

/*
 * lease_session_forget_grant -- the grant of resource is no longer bound to
 * this backend (released by it, or re-acquired without session_bound)
 */
void
lease_session_forget_grant(const char *resource)
{
	if (session_grants != NULL)
		(void) hash_search(session_grants, resource, HASH_REMOVE, NULL);
}

/*
 * session_exit_hook -- backend exit: free the session-bound grants
 *
 * Leaves the wait queue first, as lease_wait.c's own exit hook does (which of
 * the two runs first depends on which was registered last).  Runs before the
 * backend aborts its open transaction, so a waiter woken here may find the
 * row still locked by it; it then waits on that lock, which the abort
 * releases.
 */
static void
session_exit_hook(int code, Datum arg)
{
	long		n;
	const char **resources;
	HASH_SEQ_STATUS scan;
	SessionGrant *grant;
	int			i = 0;

	lease_queue_leave(true);

	n = hash_get_num_entries(session_grants);
	if (n == 0)
		return;
	resources = palloc(n * sizeof(char *));
	hash_seq_init(&scan, session_grants);
	while ((grant = hash_seq_search(&scan)) != NULL)
		resources[i++] = grant->resource;
	lease_queue_announce_exit(resources, i);
}

/*
 * lease_session_alive -- lease.session_alive(pid, started)
 *
 * True while the backend with that PID and start time runs.  The start time
 * tells a reused PID apart.  The local copy of the backend status array is
 * dropped first: a waiter loops inside one transaction and must see exits.
 */
PG_FUNCTION_INFO_V1(lease_session_alive);

Datum
lease_session_alive(PG_FUNCTION_ARGS)
{
	int32		pid = PG_GETARG_INT32(0);
	TimestampTz started = PG_GETARG_TIMESTAMPTZ(1);
	int			n;

	if (pid == MyProcPid)
		PG_RETURN_BOOL(started == MyStartTimestamp);
	if (lease_queue_session_exited(pid, started))
		PG_RETURN_BOOL(false);

	pgstat_clear_backend_activity_snapshot();
	n = pgstat_fetch_stat_numbackends();
	for (int i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *local = pgstat_fetch_stat_local_beentry(i);

		if (local != NULL &&
			local->backendStatus.st_procpid == pid &&
			local->backendStatus.st_proc_start_timestamp == started)
			PG_RETURN_BOOL(true);
	}
	PG_RETURN_BOOL(false);
}
