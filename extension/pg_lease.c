/*-------------------------------------------------------------------------
 *
 * pg_lease.c
 *		Module load, configuration, shared counters and commit handling of
 *		pg_lease: leased locks with fencing tokens.
 *
 * The lease state itself lives in the table lease.grants (see lease_ops.c);
 * shared memory only holds what may be lost at a restart without harm: the
 * counters of lease.stats() and the wait queue (lease_wait.c).  Shared memory exists
 * only when the library is in shared_preload_libraries; without it every
 * lease function still works and only lease.stats() refuses (55000).
 *
 * Locking notes: the counters are atomics, read without a lock; a reader may
 * see one counter bumped and another not yet, which is fine for statistics.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "pg_lease.h"

PG_MODULE_MAGIC;

/* GUC variables */
int			lease_max_ttl_seconds = 86400;
int			lease_poll_interval_ms = 50;

typedef struct LeaseSharedState
{
	pg_atomic_uint64 counters[LEASE_NUM_COUNTERS];
} LeaseSharedState;

static LeaseSharedState *lease_state = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*
 * WAL position after this transaction's last release, when releases are all
 * it has written so far; InvalidXLogRecPtr otherwise.  See lease_xact_callback.
 */
static XLogRecPtr release_only_end = InvalidXLogRecPtr;

void		_PG_init(void);

static void lease_shmem_request(void);
static void lease_shmem_startup(void);
static void lease_xact_callback(XactEvent event, void *arg);

/*
 * _PG_init -- define the GUCs; set up shared memory when preloaded
 */
void
_PG_init(void)
{
	DefineCustomIntVariable("lease.max_ttl",
							"Longest TTL a lease may be granted or renewed for.",
							NULL,
							&lease_max_ttl_seconds,
							86400,
							1,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("lease.poll_interval",
							"Longest sleep between two tries of a waiting acquire.",
							"Waiters also wake at the expiry instant of the grant they wait for.",
							&lease_poll_interval_ms,
							50,
							1,
							1000,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	MarkGUCPrefixReserved("lease");

	RegisterXactCallback(lease_xact_callback, NULL);

	/* Shared memory only when preloaded, the pg_stat_statements way. */
	if (!process_shared_preload_libraries_in_progress)
		return;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = lease_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = lease_shmem_startup;
}

/*
 * lease_shmem_request -- reserve shared memory for the counters
 */
static void
lease_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();

	RequestAddinShmemSpace(add_size(MAXALIGN(sizeof(LeaseSharedState)),
									lease_queue_shmem_size()));
	RequestNamedLWLockTranche("pg_lease", 1);
}

/*
 * lease_shmem_startup -- attach to (or create) the shared state
 */
static void
lease_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	lease_state = ShmemInitStruct("pg_lease", sizeof(LeaseSharedState), &found);
	if (!found)
	{
		for (int i = 0; i < LEASE_NUM_COUNTERS; i++)
			pg_atomic_init_u64(&lease_state->counters[i], 0);
	}
	lease_queue_shmem_init();
	LWLockRelease(AddinShmemInitLock);
}

/*
 * lease_shmem_ready -- is the library preloaded, with its shared state?
 */
bool
lease_shmem_ready(void)
{
	return lease_state != NULL;
}

/*
 * lease_count -- bump one counter (a no-op without shared memory)
 */
void
lease_count(LeaseCounter counter)
{
	if (lease_state != NULL)
		pg_atomic_fetch_add_u64(&lease_state->counters[counter], 1);
}

/*
 * lease_release_starts -- is everything this transaction wrote so far releases?
 *
 * Called by lease.release() before its UPDATE, and the answer passed on to
 * lease_release_done() after it.
 */
bool
lease_release_starts(void)
{
	return XactLastRecEnd == InvalidXLogRecPtr || XactLastRecEnd == release_only_end;
}

/*
 * lease_release_done -- remember where the release-only WAL of this xact ends
 */
void
lease_release_done(bool release_only)
{
	release_only_end = release_only ? XactLastRecEnd : InvalidXLogRecPtr;
}

/*
 * lease_xact_callback -- let a release-only transaction commit asynchronously
 *
 * A release that is lost in a crash only delays the next grant until the
 * TTL, so waiting for its WAL flush buys nothing.  Any later WAL of the
 * transaction (another write, an acquire, a fence's row lock) moves
 * XactLastRecEnd and keeps the commit synchronous.  A later grant's
 * synchronous commit flushes this release's WAL too, so no grant can be
 * durable while the release it depends on is not.  The LOCAL setting is
 * undone by the commit itself.
 */
static void
lease_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (release_only_end != InvalidXLogRecPtr &&
				XactLastRecEnd == release_only_end)
				(void) set_config_option("synchronous_commit", "off",
										 PGC_USERSET, PGC_S_SESSION,
										 GUC_ACTION_LOCAL, true, 0, false);
			release_only_end = InvalidXLogRecPtr;
			break;
		case XACT_EVENT_COMMIT:
			/* the release is visible now: its waiters may take the resource */
			release_only_end = InvalidXLogRecPtr;
			lease_wake_pending(true);
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			release_only_end = InvalidXLogRecPtr;
			lease_wake_pending(false);
			break;
		default:
			break;
	}
}

/*
 * lease_stats -- SQL function lease.stats(): the shared counters
 */
PG_FUNCTION_INFO_V1(lease_stats);

Datum
lease_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[LEASE_NUM_COUNTERS];
	bool		nulls[LEASE_NUM_COUNTERS] = {0};

	if (lease_state == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("lease.stats() needs pg_lease in shared_preload_libraries"),
				 errdetail("The counters are kept in shared memory, which exists only when the library is preloaded."),
				 errhint("Add pg_lease to shared_preload_libraries and restart the server.")));

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (tupdesc->natts != LEASE_NUM_COUNTERS)
		elog(ERROR, "lease.stats() has %d columns, the library counts %d",
			 tupdesc->natts, LEASE_NUM_COUNTERS);

	for (int i = 0; i < LEASE_NUM_COUNTERS; i++)
		values[i] = Int64GetDatum((int64) pg_atomic_read_u64(&lease_state->counters[i]));

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
