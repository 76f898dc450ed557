/*-------------------------------------------------------------------------
 *
 * pg_lease.h
 *		Shared declarations of the pg_lease extension: limits, SQLSTATEs,
 *		the request every SQL function builds, and what each module exports.
 *
 * The modules, lowest first (a module calls only those above it here):
 *
 *	lease_stats.c		the shared counters and lease.stats()
 *	lease_wait.c		the shared-memory FIFO wait queue and the sleep
 *	lease_wake.c		waking its heads and observers: now, at COMMIT PREPARED, at exit
 *						(the queue's layout, theirs alone: lease_queue.h)
 *	lease_args.c		SQL arguments, checked, into a LeaseRequest
 *	lease_queries.c		the text of every statement on lease.grants
 *	lease_spi.c			how the statements run: SPI, owner role, subtransactions
 *	lease_where.c		where this backend last wrote a grant's row: a hint (ctid)
 *	lease_lockqueue.c	the wait queue when not preloaded: an advisory lock
 *	lease_xact.c		commit-time work: async release-only commit, wake-ups
 *	lease_session.c		session liveness and session-bound grants at exit
 *	lease_held.c		this backend's grants and the no-hold-and-wait check
 *	lease_try.c			one try of an acquire at the table
 *	lease_acquire.c		the acquire algorithm: the wait loop around the tries
 *	lease_grant_ops.c	renew, proclaim, release, fence, is_current, break, gc
 *	lease_election.c	lease.leader and lease.observe: reading and awaiting a leader
 *	lease_funcs.c		the SQL-callable entry points, thin
 *	lease_load.c		module load: GUCs, shared memory hooks, callbacks
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_LEASE_H
#define PG_LEASE_H

#include "postgres.h"

#include "access/xact.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "storage/itemptr.h"

/* Limits of the SQL API (documented in docs/sql.md, checked by sql/bad_input.sql). */
#define LEASE_MAX_RESOURCE_BYTES	256
#define LEASE_MAX_HOLDER_BYTES		256
#define LEASE_MAX_VALUE_BYTES		1024	/* an election's value (since 0.3.0) */

/* SQLSTATEs of the SQL API (docs/sql.md "SQLSTATEs"; client/src maps them). */
#define ERRCODE_LEASE_NOT_HELD		MAKE_SQLSTATE('L','S','0','0','1')
#define ERRCODE_LEASE_NESTED_WAIT	MAKE_SQLSTATE('L','S','0','0','2')
#define ERRCODE_LEASE_MODE_MISMATCH	MAKE_SQLSTATE('L','S','0','0','3')

/* The largest semaphore (permits of lease.acquire_permit; since 0.4.0). */
#define LEASE_MAX_PERMITS			10000

/*
 * One call of a lease function, its arguments checked (lease_args.c).  A
 * field the function has no argument for stays zero.
 */
typedef struct LeaseRequest
{
	text	   *resource;		/* as passed, for the statements */
	char	   *res;			/* the same as a C string, for queue and messages */
	Interval   *ttl;			/* fixed length: no day or month part */
	int64		wait_usecs;		/* 0: do not wait */
	const char *holder;			/* acquire: the label, or this backend's
								 * default; renew, release: act only on that
								 * holder's grant (NULL: whoever holds it) */
	bool		session_bound;
	int64		token;
	bool		has_value;		/* a campaign or proclaim: value is stated */
	const char *value;			/* NULL: none */
	bool		shared;			/* a reader (acquire_shared) */
	int32		permits;		/* 0: a lock; else a permit of that many */
	bool		exclusive;		/* fence: only a grant held alone */
} LeaseRequest;

/* ---- lease_stats.c: shared counters ---- */

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
	LEASE_STAT_WAKEUPS,			/* since 0.2.0 (lease_stats_0_2) */
	LEASE_NUM_COUNTERS
} LeaseCounter;

extern Size lease_stats_shmem_size(void);
extern void lease_stats_shmem_init(void);
extern void lease_count(LeaseCounter counter);

/* ---- lease_wait.c, lease_wake.c: the wait queue ---- */

extern int	lease_poll_interval_ms;	/* GUC lease.poll_interval */

/*
 * A small set of resources whose queue heads are to be woken.  When one more
 * does not fit, `all` is set instead: then every backend queued in this
 * database is woken, which costs some spurious wake-ups and loses nothing.
 */
#define LEASE_MAX_WAKE_SET 16
typedef struct LeaseWakeSet
{
	char	   *resources[LEASE_MAX_WAKE_SET];	/* in TopMemoryContext */
	int			n;
	bool		all;
} LeaseWakeSet;

extern Size lease_queue_shmem_size(void);
extern void lease_queue_shmem_init(void);
extern bool lease_queue_exists(void);
extern bool lease_queue_enabled(void);
extern bool lease_queue_may_take(const char *resource);
extern void lease_queue_join(const char *resource, int32 permits);
extern bool lease_queue_waiting_permits(const char *resource, int32 *permits);
extern void lease_queue_leave(bool wake_next);
extern int	lease_waiter_count(const char *resource);
extern void lease_wait_until(TimestampTz wake_at);
extern void lease_wake_set_add(LeaseWakeSet *set, const char *resource);
extern void lease_queue_wake(const LeaseWakeSet *set);
extern void lease_queue_announce_exit(const char *const *resources, int n);
extern void lease_queue_defer_wakes(const char *gid, const LeaseWakeSet *set);
extern void lease_queue_finish_prepared(const char *gid, bool committed);
extern bool lease_queue_session_exited(int pid, TimestampTz started);
extern void lease_observe_join(const char *resource);
extern void lease_observe_leave(void);
extern void lease_queue_wake_observers(const LeaseWakeSet *set);

/* ---- lease_args.c: SQL arguments ---- */

extern int	lease_max_ttl_seconds;	/* GUC lease.max_ttl */

extern void lease_args_acquire(FunctionCallInfo fcinfo, LeaseRequest *req);
extern void lease_args_acquire_value(FunctionCallInfo fcinfo, LeaseRequest *req);
extern void lease_args_try_acquire(FunctionCallInfo fcinfo, LeaseRequest *req);
extern void lease_args_acquire_shared(FunctionCallInfo fcinfo, LeaseRequest *req);
extern void lease_args_acquire_permit(FunctionCallInfo fcinfo, LeaseRequest *req);
extern void lease_args_fence_mode(FunctionCallInfo fcinfo, LeaseRequest *req);
extern void lease_args_proclaim(FunctionCallInfo fcinfo, LeaseRequest *req);
extern void lease_args_observe(FunctionCallInfo fcinfo, LeaseRequest *req,
							   int64 *after_term, const char **after_value);
extern void lease_args_grant_holder(FunctionCallInfo fcinfo, LeaseRequest *req,
									bool with_ttl);
extern void lease_args_grant(FunctionCallInfo fcinfo, LeaseRequest *req,
							 bool with_ttl);
extern void lease_args_resource(FunctionCallInfo fcinfo, LeaseRequest *req);
extern int64 lease_args_retain(FunctionCallInfo fcinfo);

/* ---- lease_spi.c, lease_queries.c: statements on lease.grants ---- */

typedef enum LeaseQuery
{
	Q_LOCK_RESOURCE,
	Q_ADD_RESOURCE,
	Q_CLEAR_OVER,
	Q_TAKE_RELEASED,
	Q_READ_ROW,
	Q_INSERT,
	Q_TAKE_OVER,
	Q_EXTEND_SAME_HOLDER,
	Q_RENEW,
	Q_PROCLAIM,
	Q_LEADER,
	Q_OWNER_OF,
	Q_RELEASE,
	Q_FENCE,
	Q_FENCE_EXCLUSIVE,
	Q_IS_CURRENT,
	Q_BREAK,
	Q_GC,
	Q_RENEW_AT,
	Q_RELEASE_AT,
	Q_RENEW_HOLDER,				/* since 0.5.0: only the grant of a holder */
	Q_RELEASE_HOLDER,
	Q_RENEW_HOLDER_AT,
	Q_RELEASE_HOLDER_AT,
	LEASE_NUM_QUERIES
} LeaseQuery;

/* A statement's text and parameter types (lease_queries.c). */
typedef struct LeaseQueryDef
{
	const char *sql;
	int			nargs;
	Oid			argtypes[9];
} LeaseQueryDef;

/*
 * The statements for the schema of 0.4.0 on (one row per grant), and those
 * that differ for a database still at 0.3.0 or before 0.3.0 (NULL: as the
 * newer one).  lease_queries.c; lease_spi.c runs them.
 */
extern const LeaseQueryDef lease_queries[LEASE_NUM_QUERIES];
extern const LeaseQueryDef lease_queries_0_3[LEASE_NUM_QUERIES];
extern const LeaseQueryDef lease_queries_pre_0_3[LEASE_NUM_QUERIES];

/* Who called, and the user context to restore. */
typedef struct LeaseCaller
{
	Oid			role;
	bool		is_superuser;
	Oid			saved_userid;
	int			saved_sec_context;
} LeaseCaller;

/* What one read of a resource's row found. */
typedef struct LeaseRow
{
	bool		found;
	int64		token;
	char	   *holder;
	Oid			owner;
	TimestampTz expires_at;
	bool		released;
	bool		unexpired;
	bool		session_gone;
	bool		shared;			/* mode 'shared' */
	int32		permits;
} LeaseRow;

extern void lease_begin(LeaseCaller *caller);
extern void lease_end(LeaseCaller *caller);
extern uint64 lease_exec(LeaseQuery q, Datum *values, const char *nulls);
extern uint64 lease_exec_change(LeaseQuery q, Datum *values, const char *nulls,
								int64 *result, bool *locked);
extern int64 lease_result_int64(int col);
extern bool lease_changed_tid(ItemPointer tid);
extern void lease_read_row(text *resource, LeaseRow *row);
extern int	lease_read_grants(text *resource, LeaseRow **rows);
extern bool lease_schema_has_rows(void);
typedef bool (*LeaseSubxactFn) (void *arg);
extern bool lease_in_subxact(LeaseSubxactFn fn, void *arg, bool *locked);

/* ---- lease_where.c: where this backend last wrote a grant's row ---- */

extern void lease_where_note(const char *res, int64 token);
extern bool lease_where_find(const char *res, int64 token, ItemPointer tid);

/* ---- lease_lockqueue.c: the wait queue when not preloaded ---- */

extern bool lease_lockq_may_take(const char *resource);
extern bool lease_lockq_join_if_free(const char *resource);
extern void lease_lockq_join(const char *resource);
extern void lease_lockq_leave(void);
extern void lease_lockq_sleep(TimestampTz wake_at, int *step_ms);

/* ---- lease_xact.c: commit-time work ---- */

extern void lease_xact_callback(XactEvent event, void *arg);
extern bool lease_xact_release_starts(void);
extern void lease_xact_release_done(bool release_only);
extern void lease_xact_wake_at_commit(const char *resource);
extern void lease_xact_observers_at_commit(const char *resource);
extern void lease_xact_install_utility_hook(void);

/* ---- lease_session.c: session liveness ---- */

extern void lease_session_note_grant(const char *resource);
extern void lease_session_forget_grant(const char *resource);

/* ---- lease_held.c: this backend's grants, no hold-and-wait ---- */

extern bool lease_held_by(const LeaseRow *row, const LeaseCaller *caller, const char *holder);
extern void lease_held_remember(const LeaseRequest *req, const LeaseCaller *caller, int64 token);
extern void lease_held_forget(const char *res, int64 token);
extern void lease_held_check_no_wait(const LeaseCaller *caller, const LeaseRequest *req);

/* ---- lease_try.c: one try of an acquire ---- */

typedef enum LeaseTry
{
	LEASE_TRY_GRANTED,
	LEASE_TRY_BUSY,				/* someone else holds it: wait or give up */
	LEASE_TRY_AGAIN				/* the row changed under us: read it again */
} LeaseTry;

extern int	lease_test_pause_after_clear;	/* GUC lease.test_pause_after_clear */
extern LeaseTry lease_try_grant(const LeaseCaller *caller, const LeaseRequest *req, bool may_take,
								int64 *token, TimestampTz *busy_until);
extern LeaseTry lease_try_rows(const LeaseCaller *caller, const LeaseRequest *req, bool may_take,
							   int64 *token, TimestampTz *busy_until);

/* ---- lease_acquire.c: acquire ---- */

extern bool lease_acquire_grant(const LeaseRequest *req, int64 *token);

/* ---- lease_grant_ops.c: what is done to a grant ---- */

extern bool lease_grant_renew(const LeaseRequest *req);
extern bool lease_grant_proclaim(const LeaseRequest *req);
extern bool lease_grant_release(const LeaseRequest *req);
extern void lease_grant_fence(const LeaseRequest *req);
extern bool lease_grant_is_current(const LeaseRequest *req);
extern bool lease_grant_break(const LeaseRequest *req, int64 *token);
extern int64 lease_grant_gc(int64 retain_usecs);

/* ---- lease_election.c: leader and observe ---- */

/* An election's current grant, as lease.leader() returns it. */
typedef struct LeaseLeader
{
	bool		found;			/* false: nobody leads (the rest unset) */
	char	   *value;			/* NULL: none */
	int64		term;
	TimestampTz since;
	TimestampTz expires_at;
} LeaseLeader;

extern void lease_election_read(text *resource, LeaseLeader *leader);
extern void lease_election_observe(const LeaseRequest *req, int64 after_term,
								   const char *after_value, LeaseLeader *leader);

#endif							/* PG_LEASE_H */
