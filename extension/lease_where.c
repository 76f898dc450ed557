/*-------------------------------------------------------------------------
 *
 * lease_where.c
 *		Where this backend last wrote a grant's row: its ctid, a hint for
 *		the release or renew of that grant that usually follows.
 *
 * This file owns one remembered (resource, token, ctid): the row version
 * of the grant this backend's last acquire took in place, or last renewed.
 * lease_grant_ops.c renews and releases that grant by its ctid first
 * (Q_RENEW_AT, Q_RELEASE_AT), a TID scan, instead of by the resource's
 * index.  An index scan prunes the page it visits when the page is past its
 * fillfactor, which every page of lease.grants soon is; so each renew and
 * release pruned the version the statement before it had just left behind
 * (a WAL record each).  By its ctid, the page is pruned once, at the next
 * acquire's visit.
 *
 * Only a hint: the statements by ctid carry every condition of the others,
 * so a stale entry (the transaction that wrote it rolled back, the row
 * changed or vacuumed since, the extension re-created) changes nothing and
 * the caller runs the statement by index.  Nothing here is shared or
 * durable.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "pg_lease.h"

static char *where_res = NULL;	/* in TopMemoryContext */
static int64 where_token = 0;
static ItemPointerData where_tid;

/*
 * lease_where_note -- the change just made (lease_exec_change) wrote the row
 * of (res, token): remember where, if its statement returned the ctid
 */
void
lease_where_note(const char *res, int64 token)
{
	ItemPointerData tid;

	if (!lease_changed_tid(&tid))
		return;
	if (where_res == NULL || strcmp(where_res, res) != 0)
	{
		if (where_res != NULL)
			pfree(where_res);
		where_res = MemoryContextStrdup(TopMemoryContext, res);
	}
	where_token = token;
	ItemPointerCopy(&tid, &where_tid);
}

/*
 * lease_where_find -- the ctid last written for (res, token), if it is the
 * one remembered
 */
bool
lease_where_find(const char *res, int64 token, ItemPointer tid)
{
	if (where_res == NULL || where_token != token || strcmp(where_res, res) != 0)
		return false;
	ItemPointerCopy(&where_tid, tid);
	return true;
}
