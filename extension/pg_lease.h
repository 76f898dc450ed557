/*-------------------------------------------------------------------------
 *
 * pg_lease.h
 *		Shared declarations of the pg_lease extension: limits, SQLSTATEs,
 *		counters and the interfaces between its modules.
 *
 * pg_lease.c owns module load, GUCs, shared memory and the counters;
 * lease_ops.c owns the SQL-callable functions and every query on the lease
 * table; lease_wait.c owns how a backend sleeps until a resource may be free.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_LEASE_H
#define PG_LEASE_H

#include "postgres.h"

#include "datatype/timestamp.h"

/* Limits of the SQL API (documented in README.md, checked by sql/bad_input.sql). */
#define LEASE_MAX_RESOURCE_BYTES	256
#define LEASE_MAX_HOLDER_BYTES		256

/* SQLSTATEs of the SQL API (README.md "SQLSTATEs"; client/src maps them). */
#define ERRCODE_LEASE_NOT_HELD		MAKE_SQLSTATE('L','S','0','0','1')
#define ERRCODE_LEASE_NESTED_WAIT	MAKE_SQLSTATE('L','S','0','0','2')

/* Counters reported by lease.stats(), in its column order. */
typedef enum LeaseCounter
{
	LEASE_STAT_GRANTS,
	LEASE_STAT_CONTENDED,
	LEASE_STAT_TIMEOUTS,
	LEASE_STAT_TAKEOVERS,
	LEASE_STAT_RENEWALS,
	LEASE_STAT_FAILED_RENEWALS,
	LEASE_STAT_RELEASES,
	LEASE_STAT_FENCE_REJECTIONS,
	LEASE_NUM_COUNTERS
} LeaseCounter;

/* GUCs (pg_lease.c) */
extern int	lease_max_ttl_seconds;
extern int	lease_poll_interval_ms;

/* pg_lease.c */
extern bool lease_shmem_ready(void);
extern void lease_count(LeaseCounter counter);
extern bool lease_release_starts(void);
extern void lease_release_done(bool release_only);

/* lease_wait.c */
extern Size lease_queue_shmem_size(void);
extern void lease_queue_shmem_init(void);
extern bool lease_queue_enabled(void);
extern bool lease_queue_may_take(const char *resource);
extern void lease_queue_join(const char *resource);
extern void lease_queue_leave(void);
extern int	lease_waiter_count(const char *resource);
extern void lease_wait_until(TimestampTz wake_at);
extern void lease_wake_at_commit(const char *resource);
extern void lease_wake_pending(bool committed);
extern void lease_note_session_grant(const char *resource);
extern bool lease_session_exited(int pid, TimestampTz started);

#endif							/* PG_LEASE_H */
