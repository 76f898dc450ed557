/*-------------------------------------------------------------------------
 *
 * lease_funcs.c
 *		The SQL-callable lease functions: lease.acquire (both forms),
 *		try_acquire, renew and release (each with or without a holder),
 *		proclaim, fence, is_current, break, gc, waiters, leader and observe.
 *
 * This file owns only the fmgr face of those functions.  Each one builds a
 * LeaseRequest from its arguments (lease_args.c), hands it to the module
 * that does the work (lease_acquire.c, lease_grant_ops.c, lease_wait.c,
 * lease_election.c) and
 * turns the answer into a Datum.  lease.stats() and lease.session_alive()
 * live with what they report (lease_stats.c, lease_session.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "pg_lease.h"

/*
 * lease_acquire -- lease.acquire(resource, ttl, wait, holder, session_bound)
 */
PG_FUNCTION_INFO_V1(lease_acquire);

Datum
lease_acquire(PG_FUNCTION_ARGS)
{
	LeaseRequest req;
	int64		token;

	lease_args_acquire(fcinfo, &req);
	if (!lease_acquire_grant(&req, &token))
		PG_RETURN_NULL();
	PG_RETURN_INT64(token);
}

/*
 * lease_try_acquire -- lease.try_acquire(resource, ttl, holder, session_bound)
 */
PG_FUNCTION_INFO_V1(lease_try_acquire);

Datum
lease_try_acquire(PG_FUNCTION_ARGS)
{
	LeaseRequest req;
	int64		token;

	lease_args_try_acquire(fcinfo, &req);
	if (!lease_acquire_grant(&req, &token))
		PG_RETURN_NULL();
	PG_RETURN_INT64(token);
}

/*
 * lease_acquire_shared -- lease.acquire_shared(resource, ttl, wait, holder,
 * session_bound): a reader's grant
 */
PG_FUNCTION_INFO_V1(lease_acquire_shared);

Datum
lease_acquire_shared(PG_FUNCTION_ARGS)
{
	LeaseRequest req;
	int64		token;

	lease_args_acquire_shared(fcinfo, &req);
	if (!lease_acquire_grant(&req, &token))
		PG_RETURN_NULL();
	PG_RETURN_INT64(token);
}

/*
 * lease_acquire_permit -- lease.acquire_permit(resource, ttl, permits, wait,
 * holder, session_bound): one permit of a semaphore
 */
PG_FUNCTION_INFO_V1(lease_acquire_permit);

Datum
lease_acquire_permit(PG_FUNCTION_ARGS)
{
	LeaseRequest req;
	int64		token;

	lease_args_acquire_permit(fcinfo, &req);
	if (!lease_acquire_grant(&req, &token))
		PG_RETURN_NULL();
	PG_RETURN_INT64(token);
}

/*
 * lease_renew -- lease.renew(resource, token, ttl)
 */
PG_FUNCTION_INFO_V1(lease_renew);

Datum
lease_renew(PG_FUNCTION_ARGS)
{
	LeaseRequest req;

	lease_args_grant(fcinfo, &req, true);
	PG_RETURN_BOOL(lease_grant_renew(&req));
}

/*
 * lease_release -- lease.release(resource, token)
 */
PG_FUNCTION_INFO_V1(lease_release);

Datum
lease_release(PG_FUNCTION_ARGS)
{
	LeaseRequest req;

	lease_args_grant(fcinfo, &req, false);
	PG_RETURN_BOOL(lease_grant_release(&req));
}

/*
 * lease_renew_holder -- lease.renew(resource, token, ttl, holder): only that
 * holder's grant (since 0.5.0)
 */
PG_FUNCTION_INFO_V1(lease_renew_holder);

Datum
lease_renew_holder(PG_FUNCTION_ARGS)
{
	LeaseRequest req;

	lease_args_grant_holder(fcinfo, &req, true);
	PG_RETURN_BOOL(lease_grant_renew(&req));
}

/*
 * lease_release_holder -- lease.release(resource, token, holder): only that
 * holder's grant (since 0.5.0)
 */
PG_FUNCTION_INFO_V1(lease_release_holder);

Datum
lease_release_holder(PG_FUNCTION_ARGS)
{
	LeaseRequest req;

	lease_args_grant_holder(fcinfo, &req, false);
	PG_RETURN_BOOL(lease_grant_release(&req));
}

/*
 * lease_fence -- lease.fence(resource, token): the token, or LS001
 */
PG_FUNCTION_INFO_V1(lease_fence);

Datum
lease_fence(PG_FUNCTION_ARGS)
{
	LeaseRequest req;

	lease_args_grant(fcinfo, &req, false);
	lease_grant_fence(&req);
	PG_RETURN_INT64(req.token);
}

/*
 * lease_fence_mode -- lease.fence(resource, token, exclusive): the token, or
 * LS001; with exclusive true only a grant held alone passes
 */
PG_FUNCTION_INFO_V1(lease_fence_mode);

Datum
lease_fence_mode(PG_FUNCTION_ARGS)
{
	LeaseRequest req;

	lease_args_fence_mode(fcinfo, &req);
	lease_grant_fence(&req);
	PG_RETURN_INT64(req.token);
}

/*
 * lease_is_current -- lease.is_current(resource, token), without locking
 */
PG_FUNCTION_INFO_V1(lease_is_current);

Datum
lease_is_current(PG_FUNCTION_ARGS)
{
	LeaseRequest req;

	lease_args_grant(fcinfo, &req, false);
	PG_RETURN_BOOL(lease_grant_is_current(&req));
}

/*
 * lease_break -- lease.break(resource): end the current grant now (admin)
 *
 * Returns the token that was ended, or NULL if none was current.  EXECUTE is
 * revoked from PUBLIC by the install script.
 */
PG_FUNCTION_INFO_V1(lease_break);

Datum
lease_break(PG_FUNCTION_ARGS)
{
	LeaseRequest req;
	int64		token;

	lease_args_resource(fcinfo, &req);
	if (!lease_grant_break(&req, &token))
		PG_RETURN_NULL();
	PG_RETURN_INT64(token);
}

/*
 * lease_gc -- lease.gc(retain): delete rows free for longer than retain
 */
PG_FUNCTION_INFO_V1(lease_gc);

Datum
lease_gc(PG_FUNCTION_ARGS)
{
	int64		retain_usecs = lease_args_retain(fcinfo);

	PG_RETURN_INT64(lease_grant_gc(retain_usecs));
}

/*
 * lease_waiters -- lease.waiters(resource): queued waiters, NULL if unknown
 */
PG_FUNCTION_INFO_V1(lease_waiters);

Datum
lease_waiters(PG_FUNCTION_ARGS)
{
	int			n = lease_waiter_count(text_to_cstring(PG_GETARG_TEXT_PP(0)));

	if (n < 0)
		PG_RETURN_NULL();
	PG_RETURN_INT32(n);
}

/*
 * lease_acquire_value -- lease.acquire(resource, ttl, wait, holder,
 * session_bound, value): a campaign; the token is the term
 */
PG_FUNCTION_INFO_V1(lease_acquire_value);

Datum
lease_acquire_value(PG_FUNCTION_ARGS)
{
	LeaseRequest req;
	int64		token;

	lease_args_acquire_value(fcinfo, &req);
	if (!lease_acquire_grant(&req, &token))
		PG_RETURN_NULL();
	PG_RETURN_INT64(token);
}

/*
 * lease_proclaim -- lease.proclaim(resource, token, value)
 */
PG_FUNCTION_INFO_V1(lease_proclaim);

Datum
lease_proclaim(PG_FUNCTION_ARGS)
{
	LeaseRequest req;

	lease_args_proclaim(fcinfo, &req);
	PG_RETURN_BOOL(lease_grant_proclaim(&req));
}

/*
 * funcs_leader_datum -- (value, term, since, expires_at), all NULL when
 * nobody leads
 */
static Datum
funcs_leader_datum(FunctionCallInfo fcinfo, const LeaseLeader *leader)
{
	TupleDesc	desc;
	Datum		values[4] = {0};
	bool		nulls[4] = {true, true, true, true};

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	desc = BlessTupleDesc(desc);
	if (leader->found)
	{
		if (leader->value != NULL)
		{
			values[0] = CStringGetTextDatum(leader->value);
			nulls[0] = false;
		}
		values[1] = Int64GetDatum(leader->term);
		values[2] = TimestampTzGetDatum(leader->since);
		values[3] = TimestampTzGetDatum(leader->expires_at);
		nulls[1] = nulls[2] = nulls[3] = false;
	}
	return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

/*
 * lease_leader -- lease.leader(election): its current grant
 */
PG_FUNCTION_INFO_V1(lease_leader);

Datum
lease_leader(PG_FUNCTION_ARGS)
{
	LeaseRequest req;
	LeaseLeader leader;

	lease_args_resource(fcinfo, &req);
	lease_election_read(req.resource, &leader);
	return funcs_leader_datum(fcinfo, &leader);
}

/*
 * lease_observe -- lease.observe(election, after_term, after_value, wait)
 */
PG_FUNCTION_INFO_V1(lease_observe);

Datum
lease_observe(PG_FUNCTION_ARGS)
{
	LeaseRequest req;
	LeaseLeader leader;
	int64		after_term;
	const char *after_value;

	lease_args_observe(fcinfo, &req, &after_term, &after_value);
	lease_election_observe(&req, after_term, after_value, &leader);
	return funcs_leader_datum(fcinfo, &leader);
}
