/*-------------------------------------------------------------------------
 *
 * lease_stats.c
 *		The shared counters of pg_lease and the SQL function lease.stats().
 *
 * This file owns the counters in shared memory: bumping them (lease_count)
 * and reporting them.  They exist only when the library is in
 * shared_preload_libraries; without it lease_count() does nothing and only
 * lease.stats() refuses (55000).  A restart resets them, which is fine for
 * statistics.
 *
 * Locking notes: the counters are atomics, read without a lock; a reader may
 * see one counter bumped and another not yet, which is fine for statistics.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "port/atomics.h"
#include "storage/shmem.h"

#include "pg_lease.h"

typedef struct LeaseSharedState
{
	pg_atomic_uint64 counters[LEASE_NUM_COUNTERS];
} LeaseSharedState;

static LeaseSharedState *lease_state = NULL;

/*
 * lease_stats_shmem_size -- shared memory for the counters
 */
Size
lease_stats_shmem_size(void)
{
	return MAXALIGN(sizeof(LeaseSharedState));
}

/*
 * lease_stats_shmem_init -- attach to (or create) the counters
 *
 * Called from the shmem startup hook with AddinShmemInitLock held.
 */
void
lease_stats_shmem_init(void)
{
	bool		found;

	lease_state = ShmemInitStruct("pg_lease", sizeof(LeaseSharedState), &found);
	if (!found)
	{
		for (int i = 0; i < LEASE_NUM_COUNTERS; i++)
			pg_atomic_init_u64(&lease_state->counters[i], 0);
	}
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
 * stats_report -- the first ncols counters as the row of lease.stats()
 *
 * Each version of the SQL function has its own C symbol, the
 * pg_stat_statements way: an install that still has an older definition
 * (before ALTER EXTENSION UPDATE) calls the symbol made for its shape.
 */
static Datum
stats_report(FunctionCallInfo fcinfo, int ncols)
{
	TupleDesc	tupdesc;
	Datum		values[LEASE_NUM_COUNTERS];
	bool		nulls[LEASE_NUM_COUNTERS] = {0};

	Assert(ncols <= LEASE_NUM_COUNTERS);

	if (lease_state == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("lease.stats() needs pg_lease in shared_preload_libraries"),
				 errdetail("The counters are kept in shared memory, which exists only when the library is preloaded."),
				 errhint("Add pg_lease to shared_preload_libraries and restart the server.")));

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (tupdesc->natts != ncols)
		elog(ERROR, "lease.stats() has %d columns, this symbol reports %d",
			 tupdesc->natts, ncols);

	for (int i = 0; i < ncols; i++)
		values[i] = Int64GetDatum((int64) pg_atomic_read_u64(&lease_state->counters[i]));

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * lease_stats -- lease.stats() of version 0.1.0: eight counters
 */
PG_FUNCTION_INFO_V1(lease_stats);

Datum
lease_stats(PG_FUNCTION_ARGS)
{
	return stats_report(fcinfo, LEASE_STAT_WAKEUPS);
}

/*
 * lease_stats_0_2 -- lease.stats() since version 0.2.0: with wakeups
 */
PG_FUNCTION_INFO_V1(lease_stats_0_2);

Datum
lease_stats_0_2(PG_FUNCTION_ARGS)
{
	return stats_report(fcinfo, LEASE_STAT_WAKEUPS + 1);
}
