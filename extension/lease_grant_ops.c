/*-------------------------------------------------------------------------
 *
 * lease_grant_ops.c
 *		What is done to a grant once it exists: renew, proclaim, release and
 *		fence (one shared path), is_current, break and gc.
 *
 * Renew, proclaim, release and fence act on exactly one grant, named by (resource,
 * token), and only for the role that acquired it (or a superuser); renew and
 * release, given a holder (since 0.5.0), only if that holder took it.  They
 * share grant_act(): run the statement on exactly that grant; when it finds
 * nothing, tell "not yours" (42501) apart from "not current" by reading the
 * owner of the row.  is_current only reads; break and gc are for admins
 * (EXECUTE is revoked from PUBLIC by the install script).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/int.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "pg_lease.h"

/*
 * grant_check_owner -- after a no-op on (resource, token): was it someone else's?
 *
 * Renew, proclaim, release and fence act only on grants of the calling role.  Nothing
 * was changed when this raises.
 */
static void
grant_check_owner(const LeaseCaller *caller, const LeaseRequest *req, const char *action)
{
	Datum		values[2] = {PointerGetDatum(req->resource), Int64GetDatum(req->token)};
	Oid			owner;
	bool		isnull;

	if (caller->is_superuser || lease_exec(Q_OWNER_OF, values, NULL) == 0)
		return;
	owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 1, &isnull));
	if (owner != caller->role)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to %s lease \"%s\"", action, req->res),
				 errdetail("Token " INT64_FORMAT " was granted to another role.",
						   req->token)));
}

/*
 * grant_at -- the statement of renew or release (q) by the row's ctid, or
 * Q_PROCLAIM (q itself: none)
 */
static LeaseQuery
grant_at(LeaseQuery q)
{
	switch (q)
	{
		case Q_RENEW:
			return Q_RENEW_AT;
		case Q_RELEASE:
			return Q_RELEASE_AT;
		case Q_RENEW_HOLDER:
			return Q_RENEW_HOLDER_AT;
		case Q_RELEASE_HOLDER:
			return Q_RELEASE_HOLDER_AT;
		default:
			return q;
	}
}

/*
 * grant_change -- run renew, proclaim or release (q, its n parameters in
 * values) as a conditional change; renew and release go first to the row
 * version this backend last wrote for the grant, by its ctid (lease_where.c),
 * and run by the index only if that changed nothing.  A renewal's new
 * version is remembered in turn.
 */
static bool
grant_change(const LeaseRequest *req, LeaseQuery q, Datum *values, char *nulls, int n)
{
	ItemPointerData tid;
	bool		done = false;

	if (grant_at(q) != q && lease_where_find(req->res, req->token, &tid))
	{
		values[n] = PointerGetDatum(&tid);
		nulls[n] = ' ';
		done = lease_exec_change(grant_at(q), values, nulls, NULL, NULL) > 0;
	}
	if (!done)
		done = lease_exec_change(q, values, nulls, NULL, NULL) > 0;
	if (done && (q == Q_RENEW || q == Q_RENEW_HOLDER))
		lease_where_note(req->res, req->token);
	return done;
}

/*
 * grant_act -- run renew, proclaim, release or fence on exactly (resource, token)
 *
 * The statements take ($1 resource, $2 token, [$3 ttl or value,] owner,
 * is_superuser[, holder]): renew and release of req->holder's grant only,
 * when it is set, else q as given.
 * Renew and release are conditional changes (no lock kept when they change
 * nothing); fence only reads, and its FOR SHARE must last to the end of the
 * transaction.  Returns whether the grant was current (and the holder's)
 * and the caller's; raises 42501 if it is another role's, whatever holder
 * was named.
 */
static bool
grant_act(const LeaseRequest *req, LeaseQuery q, const char *action)
{
	LeaseCaller caller;
	Datum		values[7];
	int			n = 0;
	bool		done;

	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};

	Assert(q == Q_RENEW || q == Q_PROCLAIM || q == Q_RELEASE || q == Q_FENCE ||
		   q == Q_FENCE_EXCLUSIVE);
	Assert(req->holder == NULL || q == Q_RENEW || q == Q_RELEASE);

	lease_begin(&caller);
	values[n++] = PointerGetDatum(req->resource);
	values[n++] = Int64GetDatum(req->token);
	if (q == Q_RENEW)
		values[n++] = IntervalPGetDatum(req->ttl);
	if (q == Q_PROCLAIM)
	{
		nulls[n] = req->value != NULL ? ' ' : 'n';
		values[n++] = req->value != NULL ? CStringGetTextDatum(req->value) : (Datum) 0;
	}
	values[n++] = ObjectIdGetDatum(caller.role);
	values[n++] = BoolGetDatum(caller.is_superuser);
	if (req->holder != NULL)
	{
		values[n++] = CStringGetTextDatum(req->holder);
		q = q == Q_RENEW ? Q_RENEW_HOLDER : Q_RELEASE_HOLDER;
	}
	if (q == Q_FENCE || q == Q_FENCE_EXCLUSIVE)
		done = lease_exec(q, values, nulls) > 0;
	else
		done = grant_change(req, q, values, nulls, n);
	if (!done)
		grant_check_owner(&caller, req, action);
	lease_end(&caller);
	return done;
}

/*
 * lease_grant_renew -- extend the grant by req->ttl; false if not current
 */
bool
lease_grant_renew(const LeaseRequest *req)
{
	bool		renewed = grant_act(req, Q_RENEW, "renew");

	if (renewed)
	{
		lease_count(LEASE_STAT_RENEWALS);
		/* a renewal the holder was told of must not vanish in a crash */
		ForceSyncCommit();
	}
	else
		lease_count(LEASE_STAT_FAILED_RENEWALS);
	return renewed;
}

/*
 * lease_grant_proclaim -- set the grant's value; false if not current
 *
 * Its observers are woken when this transaction commits.
 */
bool
lease_grant_proclaim(const LeaseRequest *req)
{
	bool		proclaimed = grant_act(req, Q_PROCLAIM, "proclaim on");

	if (proclaimed)
	{
		lease_xact_observers_at_commit(req->res);
		/* observers told of a value must not see it vanish in a crash */
		ForceSyncCommit();
	}
	return proclaimed;
}

/*
 * lease_grant_release -- end the grant now; false if not current
 *
 * Its waiters are woken when this transaction commits, and a transaction
 * that only released may commit asynchronously (lease_xact.c).
 */
bool
lease_grant_release(const LeaseRequest *req)
{
	bool		release_only = lease_xact_release_starts();
	bool		released = grant_act(req, Q_RELEASE, "release");

	lease_xact_release_done(release_only);
	if (released)
	{
		lease_held_forget(req->res, req->token);
		lease_session_forget_grant(req->res);
		lease_count(LEASE_STAT_RELEASES);
		lease_xact_wake_at_commit(req->res);
	}
	return released;
}

/*
 * lease_grant_fence -- admit a write of the holder, or raise LS001
 *
 * FOR SHARE on the grant's row keeps every takeover, break or gc of it
 * waiting until this transaction ends, so the caller's writes commit before
 * any later grant of the resource exists.
 */
void
lease_grant_fence(const LeaseRequest *req)
{
	if (req->exclusive && !grant_act(req, Q_FENCE_EXCLUSIVE, "fence"))
	{
		lease_count(LEASE_STAT_FENCE_REJECTIONS);
		ereport(ERROR,
				(errcode(ERRCODE_LEASE_NOT_HELD),
				 errmsg("lease \"%s\" is not held alone with token " INT64_FORMAT,
						req->res, req->token),
				 errdetail("The grant is shared or a permit of several, was released, broken, has expired, or a later grant replaced it."),
				 errhint("Only a lock, a writer or a permit of one may make this write.")));
	}
	if (!req->exclusive && !grant_act(req, Q_FENCE, "fence"))
	{
		lease_count(LEASE_STAT_FENCE_REJECTIONS);
		ereport(ERROR,
				(errcode(ERRCODE_LEASE_NOT_HELD),
				 errmsg("lease \"%s\" is not held with token " INT64_FORMAT,
						req->res, req->token),
				 errdetail("The grant was released, broken, has expired, or a later grant replaced it."),
				 errhint("Do not write: acquire the lease again and redo the work with the new token.")));
	}

	ForceSyncCommit();
}

/*
 * lease_grant_is_current -- is (resource, token) the current grant? No lock.
 */
bool
lease_grant_is_current(const LeaseRequest *req)
{
	LeaseCaller caller;
	Datum		values[2] = {PointerGetDatum(req->resource), Int64GetDatum(req->token)};
	bool		current;

	lease_begin(&caller);
	current = lease_exec(Q_IS_CURRENT, values, NULL) > 0;
	lease_end(&caller);
	return current;
}

/*
 * lease_grant_break -- end every current grant of req->res now, whoever holds it
 *
 * Returns whether one was current, with the highest token ended in *token.
 */
bool
lease_grant_break(const LeaseRequest *req, int64 *token)
{
	LeaseCaller caller;
	Datum		values[1] = {PointerGetDatum(req->resource)};
	bool		broken;

	*token = 0;
	lease_begin(&caller);
	broken = lease_exec_change(Q_BREAK, values, NULL, token, NULL) > 0;
	lease_end(&caller);

	if (broken)
		lease_xact_wake_at_commit(req->res);
	return broken;
}

/*
 * lease_grant_gc -- delete grants over for longer than retain_usecs
 *
 * Tokens come from the sequence, not from the rows, so a deleted row never
 * lets a token go backwards.  Returns the number of rows deleted.
 */
int64
lease_grant_gc(int64 retain_usecs)
{
	TimestampTz cutoff;
	LeaseCaller caller;
	Datum		values[1];
	int64		deleted;

	/* a cutoff before the first representable instant: nothing is that old */
	if (pg_sub_s64_overflow(GetCurrentTimestamp(), retain_usecs, &cutoff) ||
		!IS_VALID_TIMESTAMP(cutoff))
		return 0;

	lease_begin(&caller);
	values[0] = TimestampTzGetDatum(cutoff);
	lease_exec(Q_GC, values, NULL);
	deleted = lease_result_int64(1);
	lease_end(&caller);
	return deleted;
}
