/*-------------------------------------------------------------------------
 *
 * lease_xact.c
 *		What pg_lease does when a transaction ends: let a release-only
 *		transaction commit asynchronously, and wake the waiters of the
 *		resources it released or broke.
 *
 * This file owns the transaction callback (registered by lease_load.c) and the
 * per-transaction state it acts on: where the WAL of the releases ends, and
 * the resources whose queue heads are to be woken at commit.  The release
 * and break functions (lease_grant_ops.c) only note these facts here.
 *
 * Wake-ups wait for the commit: woken earlier, a queue head could still see
 * the old row version.  At abort they are forgotten.  At PREPARE TRANSACTION
 * they are handed to the queue (lease_wait.c keeps them in shared memory,
 * under the transaction's GID) and woken by COMMIT PREPARED, from whichever
 * backend runs it; the GIDs come from a ProcessUtility hook, installed when
 * the library is preloaded (there is no queue otherwise).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/guc.h"

#include "pg_lease.h"

/*
 * WAL position after this transaction's last release, when releases are all
 * it has written so far; InvalidXLogRecPtr otherwise.  See lease_xact_callback.
 */
static XLogRecPtr release_only_end = InvalidXLogRecPtr;

/* Resources released or broken in the current transaction: wake at commit. */
static LeaseWakeSet pending_wakes;

/*
 * Resources whose leader changed in the current transaction (granted,
 * re-acquired, proclaimed, released, broken): wake their observers at commit.
 */
static LeaseWakeSet pending_observers;

/* The GID of the PREPARE TRANSACTION this transaction ends with, if any. */
static char prepare_gid[GIDSIZE];

static ProcessUtility_hook_type prev_process_utility = NULL;

/*
 * lease_xact_release_starts -- is everything this transaction wrote so far releases?
 *
 * Called by a release before its UPDATE, and the answer passed on to
 * lease_xact_release_done() after it.
 */
bool
lease_xact_release_starts(void)
{
	return XactLastRecEnd == InvalidXLogRecPtr || XactLastRecEnd == release_only_end;
}

/*
 * lease_xact_release_done -- remember where the release-only WAL of this xact ends
 */
void
lease_xact_release_done(bool release_only)
{
	release_only_end = release_only ? XactLastRecEnd : InvalidXLogRecPtr;
}

/*
 * lease_xact_wake_at_commit -- wake the resource's head when this xact commits
 */
void
lease_xact_wake_at_commit(const char *resource)
{
	if (!lease_queue_exists())
		return;
	lease_wake_set_add(&pending_wakes, resource);
	lease_wake_set_add(&pending_observers, resource);
}

/*
 * lease_xact_observers_at_commit -- wake the resource's observers when this
 * xact commits
 */
void
lease_xact_observers_at_commit(const char *resource)
{
	if (!lease_queue_exists())
		return;
	lease_wake_set_add(&pending_observers, resource);
}

/*
 * xact_forget_set -- empty a wake set
 */
static void
xact_forget_set(LeaseWakeSet *set)
{
	for (int i = 0; i < set->n; i++)
		pfree(set->resources[i]);
	set->n = 0;
	set->all = false;
}

/*
 * xact_wake_pending -- at commit: wake the heads and observers noted; at
 * prepare: keep the heads for COMMIT PREPARED; at abort: forget them
 */
static void
xact_wake_pending(XactEvent event)
{
	bool		any = pending_wakes.n > 0 || pending_wakes.all;

	if (any && event == XACT_EVENT_COMMIT)
		lease_queue_wake(&pending_wakes);
	else if (any && event == XACT_EVENT_PREPARE && prepare_gid[0] != '\0')
		lease_queue_defer_wakes(prepare_gid, &pending_wakes);
	prepare_gid[0] = '\0';
	xact_forget_set(&pending_wakes);

	/*
	 * Observers of a prepared transaction's grants and proclamations see
	 * them at their next safety-net read (lease_election.c); its releases
	 * wake them at COMMIT PREPARED with the queue heads.
	 */
	if ((pending_observers.n > 0 || pending_observers.all) && event == XACT_EVENT_COMMIT)
		lease_queue_wake_observers(&pending_observers);
	xact_forget_set(&pending_observers);
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
void
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
			xact_wake_pending(event);
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			release_only_end = InvalidXLogRecPtr;
			xact_wake_pending(event);
			break;
		default:
			break;
	}
}

/*
 * xact_process_utility -- note PREPARE TRANSACTION's GID; after COMMIT or
 * ROLLBACK PREPARED, wake or forget what that transaction released
 *
 * COMMIT PREPARED has made the prepared transaction visible when the
 * standard processing returns, so a head woken then sees its releases.
 */
static void
xact_process_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					 ProcessUtilityContext context, ParamListInfo params,
					 QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	TransactionStmt *stmt = NULL;

	if (IsA(pstmt->utilityStmt, TransactionStmt))
		stmt = (TransactionStmt *) pstmt->utilityStmt;
	if (stmt != NULL && stmt->kind == TRANS_STMT_PREPARE)
		strlcpy(prepare_gid, stmt->gid, sizeof(prepare_gid));

	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context, params,
							 queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);

	if (stmt != NULL && (stmt->kind == TRANS_STMT_COMMIT_PREPARED ||
						 stmt->kind == TRANS_STMT_ROLLBACK_PREPARED))
		lease_queue_finish_prepared(stmt->gid, stmt->kind == TRANS_STMT_COMMIT_PREPARED);
}

/*
 * lease_xact_install_utility_hook -- follow prepared transactions (preload only)
 */
void
lease_xact_install_utility_hook(void)
{
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = xact_process_utility;
}
