/*-------------------------------------------------------------------------
 *
 * lease_args.c
 *		The arguments of the SQL lease functions: fetched, checked and put
 *		into a LeaseRequest.
 *
 * This file owns every argument error of the SQL API (22004 for a NULL,
 * 22023 for a bad value) and the GUC lease.max_ttl that bounds a TTL.  Each
 * lease_args_* function reads the arguments of one SQL signature, in the
 * order of its parameters, so the first bad argument is the one reported.
 * The resource name is converted to a C string here, once.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/int.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "pg_lease.h"

/* GUC lease.max_ttl, in seconds (registered in lease_load.c) */
int			lease_max_ttl_seconds = 86400;

static char *default_holder = NULL;

/*
 * args_not_null -- the argument must not be NULL (22004)
 */
static void
args_not_null(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", name)));
}

/*
 * args_resource -- fetch and check the resource name
 */
static void
args_resource(FunctionCallInfo fcinfo, int argno, LeaseRequest *req)
{
	text	   *resource;
	int			len;

	args_not_null(fcinfo, argno, "resource");
	resource = PG_GETARG_TEXT_PP(argno);
	len = VARSIZE_ANY_EXHDR(resource);
	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("resource must not be empty")));
	if (len > LEASE_MAX_RESOURCE_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("resource is too long"),
				 errdetail("The resource name has %d bytes; the limit is %d.",
						   len, LEASE_MAX_RESOURCE_BYTES)));
	req->resource = resource;
	req->res = text_to_cstring(resource);
}

/*
 * args_token -- fetch and check a fencing token
 */
static int64
args_token(FunctionCallInfo fcinfo, int argno)
{
	int64		token;

	args_not_null(fcinfo, argno, "token");
	token = PG_GETARG_INT64(argno);
	if (token <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("token must be positive"),
				 errdetail("Fencing tokens are positive; %lld was never issued.",
						   (long long) token)));
	return token;
}

/*
 * args_interval_usecs -- an interval argument as microseconds
 *
 * Month parts are refused: a month has no fixed length.
 */
static int64
args_interval_usecs(FunctionCallInfo fcinfo, int argno, const char *name)
{
	Interval   *iv;
	int64		usecs;

	args_not_null(fcinfo, argno, name);
	iv = PG_GETARG_INTERVAL_P(argno);
	if (iv->month != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not have a month or year part", name),
				 errdetail("Months have no fixed length."),
				 errhint("Write the interval in days, hours, minutes or seconds.")));
	if (pg_mul_s64_overflow((int64) iv->day, USECS_PER_DAY, &usecs) ||
		pg_add_s64_overflow(usecs, iv->time, &usecs))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is out of range", name)));
	return usecs;
}

/*
 * args_not_negative -- a wait or retain interval must not be negative
 */
static void
args_not_negative(int64 usecs, const char *name)
{
	if (usecs < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be negative", name)));
}

/*
 * args_ttl -- fetch and check a TTL, as a fixed-length interval
 *
 * The result has no day part: timestamptz + '1 day' follows the calendar
 * (23 or 25 hours across a DST change), a lease must last exactly its TTL.
 */
static Interval *
args_ttl(FunctionCallInfo fcinfo, int argno)
{
	int64		usecs = args_interval_usecs(fcinfo, argno, "ttl");
	Interval   *ttl;

	if (usecs <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ttl must be positive")));
	if (usecs > (int64) lease_max_ttl_seconds * USECS_PER_SEC)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ttl exceeds lease.max_ttl"),
				 errdetail("lease.max_ttl is %d seconds.", lease_max_ttl_seconds),
				 errhint("Renew a shorter lease instead, or raise lease.max_ttl.")));

	ttl = palloc0(sizeof(Interval));
	ttl->time = usecs;
	return ttl;
}

/*
 * args_holder_label -- a holder label that is not NULL: 1 to
 * LEASE_MAX_HOLDER_BYTES bytes; null_allowed: NULL, the default, is the
 * hint for an empty one
 */
static const char *
args_holder_label(FunctionCallInfo fcinfo, int argno, bool null_allowed)
{
	text	   *holder = PG_GETARG_TEXT_PP(argno);
	int			len = VARSIZE_ANY_EXHDR(holder);

	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("holder must not be empty"),
				 null_allowed ? errhint("Pass NULL for the per-session default holder.") : 0));
	if (len > LEASE_MAX_HOLDER_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("holder is too long"),
				 errdetail("The holder label has %d bytes; the limit is %d.",
						   len, LEASE_MAX_HOLDER_BYTES)));
	return text_to_cstring(holder);
}

/*
 * args_holder -- the holder label, or this backend's default
 */
static const char *
args_holder(FunctionCallInfo fcinfo, int argno)
{
	if (PG_ARGISNULL(argno))
	{
		if (default_holder == NULL)
			default_holder = MemoryContextStrdup(TopMemoryContext,
												 psprintf("pid %d started %s", MyProcPid,
														  timestamptz_to_str(MyStartTimestamp)));
		return default_holder;
	}
	return args_holder_label(fcinfo, argno, true);
}

/*
 * args_value -- an election's value: NULL (none) or at most
 * LEASE_MAX_VALUE_BYTES bytes (the server encoding's, checked valid on input)
 */
static const char *
args_value(FunctionCallInfo fcinfo, int argno)
{
	text	   *value;
	int			len;

	if (PG_ARGISNULL(argno))
		return NULL;
	value = PG_GETARG_TEXT_PP(argno);
	len = VARSIZE_ANY_EXHDR(value);
	if (len > LEASE_MAX_VALUE_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("value is too long"),
				 errdetail("The value has %d bytes; the limit is %d.",
						   len, LEASE_MAX_VALUE_BYTES)));
	return text_to_cstring(value);
}

/*
 * args_session_bound -- fetch the session_bound flag
 */
static bool
args_session_bound(FunctionCallInfo fcinfo, int argno)
{
	args_not_null(fcinfo, argno, "session_bound");
	return PG_GETARG_BOOL(argno);
}

/*
 * lease_args_acquire -- lease.acquire(resource, ttl, wait, holder, session_bound)
 *
 * A negative wait is reported after a bad holder, as it always was.
 */
void
lease_args_acquire(FunctionCallInfo fcinfo, LeaseRequest *req)
{
	memset(req, 0, sizeof(*req));
	args_resource(fcinfo, 0, req);
	req->ttl = args_ttl(fcinfo, 1);
	req->wait_usecs = args_interval_usecs(fcinfo, 2, "wait");
	req->holder = args_holder(fcinfo, 3);
	args_not_negative(req->wait_usecs, "wait");
	req->session_bound = args_session_bound(fcinfo, 4);
}

/*
 * lease_args_acquire_value -- lease.acquire(resource, ttl, wait, holder,
 * session_bound, value): a campaign
 */
void
lease_args_acquire_value(FunctionCallInfo fcinfo, LeaseRequest *req)
{
	lease_args_acquire(fcinfo, req);
	req->has_value = true;
	req->value = args_value(fcinfo, 5);
}

/*
 * lease_args_try_acquire -- lease.try_acquire(resource, ttl, holder, session_bound)
 */
void
lease_args_try_acquire(FunctionCallInfo fcinfo, LeaseRequest *req)
{
	memset(req, 0, sizeof(*req));
	args_resource(fcinfo, 0, req);
	req->ttl = args_ttl(fcinfo, 1);
	req->holder = args_holder(fcinfo, 2);
	req->session_bound = args_session_bound(fcinfo, 3);
}

/*
 * lease_args_acquire_shared -- lease.acquire_shared(resource, ttl, wait,
 * holder, session_bound): a reader
 */
void
lease_args_acquire_shared(FunctionCallInfo fcinfo, LeaseRequest *req)
{
	lease_args_acquire(fcinfo, req);
	req->shared = true;
}

/*
 * lease_args_acquire_permit -- lease.acquire_permit(resource, ttl, permits,
 * wait, holder, session_bound): a permit of a semaphore
 */
void
lease_args_acquire_permit(FunctionCallInfo fcinfo, LeaseRequest *req)
{
	int32		permits;

	memset(req, 0, sizeof(*req));
	args_resource(fcinfo, 0, req);
	req->ttl = args_ttl(fcinfo, 1);
	args_not_null(fcinfo, 2, "permits");
	permits = PG_GETARG_INT32(2);
	if (permits < 1 || permits > LEASE_MAX_PERMITS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("permits must be between 1 and %d", LEASE_MAX_PERMITS),
				 errdetail("permits was %d.", permits)));
	req->permits = permits;
	req->wait_usecs = args_interval_usecs(fcinfo, 3, "wait");
	req->holder = args_holder(fcinfo, 4);
	args_not_negative(req->wait_usecs, "wait");
	req->session_bound = args_session_bound(fcinfo, 5);
}

/*
 * lease_args_fence_mode -- lease.fence(resource, token, exclusive)
 */
void
lease_args_fence_mode(FunctionCallInfo fcinfo, LeaseRequest *req)
{
	lease_args_grant(fcinfo, req, false);
	args_not_null(fcinfo, 2, "exclusive");
	req->exclusive = PG_GETARG_BOOL(2);
}

/*
 * lease_args_grant -- (resource, token), and ttl third when with_ttl
 *
 * The arguments of renew (with_ttl), release, fence and is_current.
 */
void
lease_args_grant(FunctionCallInfo fcinfo, LeaseRequest *req, bool with_ttl)
{
	memset(req, 0, sizeof(*req));
	args_resource(fcinfo, 0, req);
	req->token = args_token(fcinfo, 1);
	if (with_ttl)
		req->ttl = args_ttl(fcinfo, 2);
}

/*
 * lease_args_grant_holder -- (resource, token, [ttl,] holder): renew
 * (with_ttl) or release of only that holder's grant (since 0.5.0)
 *
 * The holder names a grant here, so NULL (which acquire reads as this
 * backend's default) is refused, and "" as acquire refuses it.
 */
void
lease_args_grant_holder(FunctionCallInfo fcinfo, LeaseRequest *req, bool with_ttl)
{
	int			argno = with_ttl ? 3 : 2;

	lease_args_grant(fcinfo, req, with_ttl);
	args_not_null(fcinfo, argno, "holder");
	req->holder = args_holder_label(fcinfo, argno, false);
}

/*
 * lease_args_proclaim -- lease.proclaim(resource, token, value)
 */
void
lease_args_proclaim(FunctionCallInfo fcinfo, LeaseRequest *req)
{
	lease_args_grant(fcinfo, req, false);
	req->has_value = true;
	req->value = args_value(fcinfo, 2);
}

/*
 * lease_args_observe -- lease.observe(election, after_term, after_value, wait)
 *
 * after_term NULL or 0 means "I saw no leader"; a negative one was never
 * issued.  wait is checked as acquire's.
 */
void
lease_args_observe(FunctionCallInfo fcinfo, LeaseRequest *req,
				   int64 *after_term, const char **after_value)
{
	memset(req, 0, sizeof(*req));
	args_resource(fcinfo, 0, req);
	*after_term = PG_ARGISNULL(1) ? 0 : PG_GETARG_INT64(1);
	if (*after_term < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("after_term must not be negative"),
				 errhint("Pass 0 or NULL when no leader was seen.")));
	*after_value = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	req->wait_usecs = args_interval_usecs(fcinfo, 3, "wait");
	args_not_negative(req->wait_usecs, "wait");
}

/*
 * lease_args_resource -- (resource): the argument of break
 */
void
lease_args_resource(FunctionCallInfo fcinfo, LeaseRequest *req)
{
	memset(req, 0, sizeof(*req));
	args_resource(fcinfo, 0, req);
}

/*
 * lease_args_retain -- (retain) of gc, as microseconds
 */
int64
lease_args_retain(FunctionCallInfo fcinfo)
{
	int64		retain_usecs = args_interval_usecs(fcinfo, 0, "retain");

	args_not_negative(retain_usecs, "retain");
	return retain_usecs;
}
