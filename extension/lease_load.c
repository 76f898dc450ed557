/*-------------------------------------------------------------------------
 *
 * lease_load.c
 *		Module load of pg_lease (leased locks with fencing tokens): the GUCs,
 *		the shared memory hooks and the transaction callback.
 *
 * This file owns only what happens when the library is loaded.  (It is not
 * called pg_lease.c: pg_lease.h is every module's shared header, not this
 * file's interface.)
 *
 * The lease state itself lives in the table lease.grants (lease_spi.c);
 * shared memory only holds what may be lost at a restart without harm: the
 * counters of lease.stats() (lease_stats.c) and the wait queue
 * (lease_wait.c).  Shared memory exists only when the library is in
 * shared_preload_libraries; without it every lease function still works and
 * only lease.stats() refuses (55000).
 *
 * Each GUC variable is defined by the module that reads it (lease.max_ttl in
 * lease_args.c, lease.poll_interval in lease_wait.c); it is registered here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#include "pg_lease.h"

PG_MODULE_MAGIC;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

void		_PG_init(void);

static void load_shmem_request(void);
static void load_shmem_startup(void);

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

	/*
	 * For the isolation tests only: an acquire that deletes the grants that
	 * are over waits on this advisory lock key just after, so a spec can
	 * commit a release between that delete and the acquire's read of the
	 * grants (tests/isolation/specs/release_between_clear_and_read.spec).
	 */
	DefineCustomIntVariable("lease.test_pause_after_clear",
							"Advisory lock key an acquire waits on after it cleared the grants that are over (tests only; 0: none).",
							NULL,
							&lease_test_pause_after_clear,
							0,
							0,
							INT_MAX,
							PGC_SUSET,
							GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL,
							NULL, NULL, NULL);

	MarkGUCPrefixReserved("lease");

	RegisterXactCallback(lease_xact_callback, NULL);

	/* Shared memory only when preloaded, the pg_stat_statements way. */
	if (!process_shared_preload_libraries_in_progress)
		return;

	/* COMMIT PREPARED wakes what the prepared transaction released */
	lease_xact_install_utility_hook();

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = load_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = load_shmem_startup;
}

/*
 * load_shmem_request -- reserve shared memory for the counters and the queue
 */
static void
load_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();

	RequestAddinShmemSpace(add_size(lease_stats_shmem_size(),
									lease_queue_shmem_size()));
	/* the wait queue's lock */
	RequestNamedLWLockTranche("pg_lease", 1);
}

/*
 * load_shmem_startup -- attach to (or create) the shared state
 */
static void
load_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	lease_stats_shmem_init();
	lease_queue_shmem_init();
	LWLockRelease(AddinShmemInitLock);
}
