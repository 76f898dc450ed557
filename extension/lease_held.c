/*-------------------------------------------------------------------------
 *
 * lease_held.c
 *		The grants this backend made, and the no-hold-and-wait check (LS002)
 *		they serve.
 *
 * This file owns the set of grants this backend made, for the check that a
 * holder never waits while holding another lease (which makes lease waits
 * deadlock-free).  The set is exact: a grant leaves it when released here
 * (lease_grant_ops.c), or when the table says it is no longer current,
 * never because others came after it.  An acquire (lease_acquire.c) checks
 * it before waiting and adds what it granted.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/hsearch.h"

#include "pg_lease.h"

/*
 * Grants this backend made, for the nested-wait check (no hold-and-wait),
 * keyed by resource: the last grant of each.  An entry counts only once the
 * table confirms it is current; one found not current is dropped.
 */
typedef struct HeldGrant
{
	char		resource[LEASE_MAX_RESOURCE_BYTES + 1];	/* hash key */
	char		holder[LEASE_MAX_HOLDER_BYTES + 1];
	Oid			role;
	int64		token;
} HeldGrant;

static HTAB *held_grants = NULL;

/* Verify every entry (dropping the stale ones) once the set grows past this. */
#define LEASE_HELD_PRUNE_MIN 1024
static long held_prune_at = LEASE_HELD_PRUNE_MIN;

/*
 * lease_held_by -- is the row a current grant of this holder and role?
 *
 * Such a holder asking again is an idempotent re-acquire, never a wait.
 */
bool
lease_held_by(const LeaseRow *row, const LeaseCaller *caller, const char *holder)
{
	return row->found && row->unexpired && !row->session_gone &&
		row->owner == caller->role && strcmp(row->holder, holder) == 0;
}

/*
 * held_holds -- has this holder and role a current grant of the resource?
 */
static bool
held_holds(const LeaseCaller *caller, const LeaseRequest *req)
{
	LeaseRow   *rows;
	int			n = lease_read_grants(req->resource, &rows);

	for (int i = 0; i < n; i++)
		if (lease_held_by(&rows[i], caller, req->holder))
			return true;
	return false;
}

/*
 * held_is_current -- does the table say the held grant is current?
 */
static bool
held_is_current(const HeldGrant *g)
{
	Datum		values[2];

	values[0] = CStringGetTextDatum(g->resource);
	values[1] = Int64GetDatum(g->token);
	return lease_exec(Q_IS_CURRENT, values, NULL) > 0;
}

/*
 * held_prune -- drop every grant the table no longer has as current
 *
 * Keeps the set as large as the grants this backend still holds, however
 * many it made.  Needs SPI (called between lease_begin and lease_end).
 */
static void
held_prune(void)
{
	HASH_SEQ_STATUS scan;
	HeldGrant  *g;

	hash_seq_init(&scan, held_grants);
	while ((g = hash_seq_search(&scan)) != NULL)
		if (!held_is_current(g))
			(void) hash_search(held_grants, g->resource, HASH_REMOVE, NULL);
	held_prune_at = Max(LEASE_HELD_PRUNE_MIN, 2 * hash_get_num_entries(held_grants));
}

/*
 * lease_held_remember -- note a grant for the nested-wait check
 */
void
lease_held_remember(const LeaseRequest *req, const LeaseCaller *caller, int64 token)
{
	HeldGrant  *g;

	if (held_grants == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(((HeldGrant *) NULL)->resource);
		ctl.entrysize = sizeof(HeldGrant);
		held_grants = hash_create("pg_lease grants of this backend", 64, &ctl,
								  HASH_ELEM | HASH_STRINGS);
	}
	else if (hash_get_num_entries(held_grants) >= held_prune_at)
		held_prune();

	g = hash_search(held_grants, req->res, HASH_ENTER, NULL);
	strlcpy(g->holder, req->holder, sizeof(g->holder));
	g->role = caller->role;
	g->token = token;
}

/*
 * lease_held_forget -- this backend released the grant
 */
void
lease_held_forget(const char *res, int64 token)
{
	HeldGrant  *g;

	if (held_grants == NULL)
		return;
	g = hash_search(held_grants, res, HASH_FIND, NULL);
	if (g != NULL && g->token == token)
		(void) hash_search(held_grants, res, HASH_REMOVE, NULL);
}

/*
 * lease_held_check_no_wait -- refuse to wait while holding another lease
 *
 * A holder that waits while holding could deadlock with one that does the
 * reverse; refusing the wait makes lease waits deadlock-free.  The holder is
 * the label (the default label names this backend) and the role: another
 * role's grants under the same label are not this holder's.
 */
void
lease_held_check_no_wait(const LeaseCaller *caller, const LeaseRequest *req)
{
	HASH_SEQ_STATUS scan;
	HeldGrant  *g;
	char		other[LEASE_MAX_RESOURCE_BYTES + 1];

	if (held_grants == NULL)
		return;

	other[0] = '\0';
	hash_seq_init(&scan, held_grants);
	while ((g = hash_seq_search(&scan)) != NULL)
	{
		if (g->role != caller->role || strcmp(g->holder, req->holder) != 0 ||
			strcmp(g->resource, req->res) == 0)
			continue;
		if (!held_is_current(g))
		{
			/* released elsewhere, expired, broken or rolled back */
			(void) hash_search(held_grants, g->resource, HASH_REMOVE, NULL);
			continue;
		}
		strlcpy(other, g->resource, sizeof(other));
		hash_seq_term(&scan);
		break;
	}
	if (other[0] == '\0')
		return;

	/*
	 * Asking again for a resource it holds is a re-acquire: it never waits.
	 * The grant may come from another connection of the same holder, so ask
	 * the table before refusing.
	 */
	if (!held_holds(caller, req))
		ereport(ERROR,
				(errcode(ERRCODE_LEASE_NESTED_WAIT),
				 errmsg("cannot wait for lease \"%s\" while holding lease \"%s\"",
						req->res, other),
				 errdetail("Holder \"%s\" holds \"%s\"; waiting while holding could deadlock.",
						   req->holder, other),
				 errhint("Release \"%s\" first, or call with wait => '0'.", other)));
}
