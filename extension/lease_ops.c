/*-------------------------------------------------------------------------
 *
 * lease_ops.c
 *		The SQL-callable lease functions, and every query on lease.grants.
 *
 * A grant is a row of lease.grants; its state changes only through the
 * prepared statements below, each an ordinary MVCC row change, so a grant or
 * release inside a transaction block takes effect at commit and vanishes on
 * rollback.  Safety rests on three facts enforced here:
 *
 * - A row changes hands only by an UPDATE whose WHERE requires the grant to
 *   be over by the server clock, and either released or exactly the token
 *   seen; concurrent takers serialize on the row lock and the loser's
 *   re-check (on the row version the winner committed) fails.
 * - Tokens come from one sequence, called only while the row is being
 *   changed, so a later grant of a resource always draws a larger number.
 * - lease.fence() takes FOR SHARE on the current grant's row, which blocks
 *   every UPDATE and DELETE of that row until the fencing transaction ends.
 *
 * No caller keeps a lock on a lease row it did not change: a try reads the
 * row without locking it, and every conditional UPDATE runs in a
 * subtransaction that is rolled back when it changes nothing.  An UPDATE that
 * waited for a concurrent change and then failed its re-check would otherwise
 * keep the row locked to the end of the transaction (so would INSERT ... ON
 * CONFLICT DO UPDATE with a false WHERE), and the new holder's renew or
 * release would queue behind a waiter.
 *
 * The functions run as the caller but do their table work as the owner of
 * lease.grants, so PUBLIC needs no right on the table; ownership of a grant
 * is the role that acquired it, checked here.  While they do, the search path
 * is pg_catalog alone (an override pushed by lease_begin, cheaper than a SET
 * clause on every call), and every name in the statements is qualified too.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/proc.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "pg_lease.h"

/* A grant is current: unexpired by the server clock, and its session alive. */
#define LEASE_CURRENT \
	"expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp() " \
	"AND CASE WHEN backend_pid IS NULL THEN true " \
	"ELSE lease.session_alive(backend_pid, backend_start) END"

#define LEASE_NEXT_TOKEN "pg_catalog.nextval('lease.token_seq'::pg_catalog.regclass)"

/*
 * An UPDATE that makes the row a new grant: $1 resource, $2 ttl, $3 owner,
 * $4 holder, $5 backend_pid, $6 backend_start (the order lease_grant_params
 * fills); the caller appends its WHERE.
 */
#define LEASE_NEW_GRANT \
	"UPDATE lease.grants SET token = " LEASE_NEXT_TOKEN "," \
	"       expires_at = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $2," \
	"       granted_at = pg_catalog.clock_timestamp()," \
	"       renewed_at = pg_catalog.clock_timestamp()," \
	"       owner = $3, released = false, backend_pid = $5, backend_start = $6," \
	"       holder = $4"

typedef enum LeaseQuery
{
	Q_TAKE_RELEASED,
	Q_READ_ROW,
	Q_INSERT,
	Q_TAKE_OVER,
	Q_EXTEND_SAME_HOLDER,
	Q_RENEW,
	Q_OWNER_OF,
	Q_RELEASE,
	Q_FENCE,
	Q_IS_CURRENT,
	Q_BREAK,
	Q_GC,
	LEASE_NUM_QUERIES
} LeaseQuery;

typedef struct LeaseQueryDef
{
	const char *sql;
	int			nargs;
	Oid			argtypes[9];
} LeaseQueryDef;

/*
 * Statement texts.  Everything is schema-qualified, operators included, and
 * they are prepared and run with the search path pinned to pg_catalog.
 */
static const LeaseQueryDef lease_queries[LEASE_NUM_QUERIES] = {
	/*
	 * The first try of an acquire: take a released grant without reading it
	 * first.  A released row is free whoever held it; the re-check after a
	 * concurrent change sees the committed version, and nextval() is
	 * evaluated again for it, after the row lock is held.
	 */
	[Q_TAKE_RELEASED] = {
		LEASE_NEW_GRANT
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND released"
		"   AND expires_at OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp()"
		" RETURNING token",
		6, {TEXTOID, INTERVALOID, OIDOID, TEXTOID, INT4OID, TIMESTAMPTZOID}
	},
	[Q_READ_ROW] = {
		"SELECT token, holder, owner, expires_at, released,"
		"       expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp(),"
		"       CASE WHEN backend_pid IS NULL THEN false"
		"            ELSE NOT lease.session_alive(backend_pid, backend_start) END"
		"  FROM lease.grants WHERE resource OPERATOR(pg_catalog.=) $1",
		1, {TEXTOID}
	},
	[Q_INSERT] = {
		"INSERT INTO lease.grants (resource, token, expires_at, granted_at, renewed_at,"
		"                          owner, released, backend_pid, backend_start, holder)"
		" VALUES ($1, " LEASE_NEXT_TOKEN ","
		"         pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $2,"
		"         pg_catalog.clock_timestamp(), pg_catalog.clock_timestamp(),"
		"         $3, false, $5, $6, $4)"
		" ON CONFLICT (resource) DO NOTHING"
		" RETURNING token",
		6, {TEXTOID, INTERVALOID, OIDOID, TEXTOID, INT4OID, TIMESTAMPTZOID}
	},
	/*
	 * Take over exactly the grant seen, if it is over: expired, or its
	 * session gone.  Both are judged again on the version the UPDATE locks,
	 * so a re-acquire that moved the grant to a live session meanwhile wins.
	 */
	[Q_TAKE_OVER] = {
		LEASE_NEW_GRANT
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $7"
		"   AND NOT (" LEASE_CURRENT ")"
		" RETURNING token",
		7, {TEXTOID, INTERVALOID, OIDOID, TEXTOID, INT4OID, TIMESTAMPTZOID, INT8OID}
	},
	/*
	 * The same holder asking again states the grant's terms again: the new
	 * expiry, and the session binding of this request ($4, $5: NULL unless
	 * session_bound), so a retry from a new connection binds it there.
	 */
	[Q_EXTEND_SAME_HOLDER] = {
		"UPDATE lease.grants"
		"   SET expires_at = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $3,"
		"       renewed_at = pg_catalog.clock_timestamp(),"
		"       backend_pid = $4, backend_start = $5"
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2"
		"   AND " LEASE_CURRENT
		" RETURNING token",
		5, {TEXTOID, INT8OID, INTERVALOID, INT4OID, TIMESTAMPTZOID}
	},
	[Q_RENEW] = {
		"UPDATE lease.grants"
		"   SET expires_at = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $3,"
		"       renewed_at = pg_catalog.clock_timestamp()"
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2"
		"   AND " LEASE_CURRENT
		"   AND (owner OPERATOR(pg_catalog.=) $4 OR $5)"
		" RETURNING token",
		5, {TEXTOID, INT8OID, INTERVALOID, OIDOID, BOOLOID}
	},
	[Q_OWNER_OF] = {
		"SELECT owner FROM lease.grants"
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2",
		2, {TEXTOID, INT8OID}
	},
	[Q_RELEASE] = {
		"UPDATE lease.grants SET expires_at = pg_catalog.clock_timestamp(), released = true"
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2"
		"   AND " LEASE_CURRENT
		"   AND (owner OPERATOR(pg_catalog.=) $3 OR $4)"
		" RETURNING token",
		4, {TEXTOID, INT8OID, OIDOID, BOOLOID}
	},
	[Q_FENCE] = {
		"SELECT token FROM lease.grants"
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2"
		"   AND " LEASE_CURRENT
		"   AND (owner OPERATOR(pg_catalog.=) $3 OR $4)"
		" FOR SHARE",
		4, {TEXTOID, INT8OID, OIDOID, BOOLOID}
	},
	[Q_IS_CURRENT] = {
		"SELECT token FROM lease.grants"
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2"
		"   AND " LEASE_CURRENT,
		2, {TEXTOID, INT8OID}
	},
	[Q_BREAK] = {
		"UPDATE lease.grants SET expires_at = pg_catalog.clock_timestamp(), released = true"
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND " LEASE_CURRENT
		" RETURNING token",
		1, {TEXTOID}
	},
	[Q_GC] = {
		"WITH gone AS (DELETE FROM lease.grants"
		"  WHERE expires_at OPERATOR(pg_catalog.<) $1"
		"  RETURNING 1)"
		" SELECT pg_catalog.count(*) FROM gone",
		1, {TIMESTAMPTZOID}
	},
};

static SPIPlanPtr lease_plans[LEASE_NUM_QUERIES];

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
} LeaseRow;

typedef enum LeaseTry
{
	LEASE_TRY_GRANTED,
	LEASE_TRY_BUSY,				/* someone else holds it: wait or give up */
	LEASE_TRY_AGAIN				/* the row changed under us: read it again */
} LeaseTry;

/*
 * Grants this backend made, for the nested-wait check (no hold-and-wait).
 * Entries are hints: each is verified in the table before it counts.
 */
typedef struct HeldGrant
{
	char		resource[LEASE_MAX_RESOURCE_BYTES + 1];
	char		holder[LEASE_MAX_HOLDER_BYTES + 1];
	int64		token;
} HeldGrant;

#define LEASE_MAX_TRACKED 64
static HeldGrant held_grants[LEASE_MAX_TRACKED];
static int	num_held_grants = 0;

static char *default_holder = NULL;

/* The search path of every statement: pg_catalog alone, no temp schema. */
static OverrideSearchPath catalog_only = {NIL, true, false, 0};

/*
 * lease_arg_not_null -- the argument must not be NULL (22004)
 */
static void
lease_arg_not_null(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", name)));
}

/*
 * lease_resource_arg -- fetch and check the resource name
 */
static text *
lease_resource_arg(FunctionCallInfo fcinfo, int argno)
{
	text	   *resource;
	int			len;

	lease_arg_not_null(fcinfo, argno, "resource");
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
	return resource;
}

/*
 * lease_token_arg -- fetch and check a fencing token
 */
static int64
lease_token_arg(FunctionCallInfo fcinfo, int argno)
{
	int64		token;

	lease_arg_not_null(fcinfo, argno, "token");
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
 * lease_interval_usecs -- an interval argument as microseconds
 *
 * Month parts are refused: a month has no fixed length.
 */
static int64
lease_interval_usecs(FunctionCallInfo fcinfo, int argno, const char *name)
{
	Interval   *iv;
	int64		usecs;

	lease_arg_not_null(fcinfo, argno, name);
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
 * lease_ttl_arg -- fetch and check a TTL, as a fixed-length interval
 *
 * The result has no day part: timestamptz + '1 day' follows the calendar
 * (23 or 25 hours across a DST change), a lease must last exactly its TTL.
 */
static Interval *
lease_ttl_arg(FunctionCallInfo fcinfo, int argno)
{
	int64		usecs = lease_interval_usecs(fcinfo, argno, "ttl");
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
 * lease_holder_arg -- the holder label, or this backend's default
 */
static char *
lease_holder_arg(FunctionCallInfo fcinfo, int argno)
{
	text	   *holder;
	int			len;

	if (PG_ARGISNULL(argno))
	{
		if (default_holder == NULL)
			default_holder = MemoryContextStrdup(TopMemoryContext,
												 psprintf("pid %d started %s", MyProcPid,
														  timestamptz_to_str(MyStartTimestamp)));
		return default_holder;
	}

	holder = PG_GETARG_TEXT_PP(argno);
	len = VARSIZE_ANY_EXHDR(holder);
	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("holder must not be empty"),
				 errhint("Pass NULL for the per-session default holder.")));
	if (len > LEASE_MAX_HOLDER_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("holder is too long"),
				 errdetail("The holder label has %d bytes; the limit is %d.",
						   len, LEASE_MAX_HOLDER_BYTES)));
	return text_to_cstring(holder);
}

/*
 * lease_begin -- connect to SPI and switch to the owner of lease.grants
 *
 * The caller's role is kept: it owns the grants it makes.  The switch is
 * undone by lease_end(), or by transaction abort on error.
 */
static void
lease_begin(LeaseCaller *caller)
{
	Oid			nsp;
	Oid			relid;
	HeapTuple	tuple;
	Oid			table_owner;

	caller->role = GetUserId();
	caller->is_superuser = superuser_arg(caller->role);

	nsp = get_namespace_oid("lease", false);
	relid = get_relname_relid("grants", nsp);
	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("table lease.grants does not exist"),
				 errhint("Reinstall the extension: DROP EXTENSION pg_lease; CREATE EXTENSION pg_lease;")));
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	table_owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);

	GetUserIdAndSecContext(&caller->saved_userid, &caller->saved_sec_context);
	SetUserIdAndSecContext(table_owner,
						   caller->saved_sec_context |
						   SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);

	/*
	 * The caller's search_path must not reach the statements.  They name
	 * everything with its schema anyway; the override also keeps the plan
	 * cache from re-planning them when the caller's search_path changes.
	 */
	PushOverrideSearchPath(&catalog_only);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

/*
 * lease_end -- undo lease_begin
 *
 * On error, transaction or subtransaction abort undoes it instead.
 */
static void
lease_end(LeaseCaller *caller)
{
	SPI_finish();
	PopOverrideSearchPath();
	SetUserIdAndSecContext(caller->saved_userid, caller->saved_sec_context);
}

/*
 * lease_exec -- run one of the prepared statements
 *
 * Plans are prepared once per backend and kept; the plan cache re-plans them
 * if the extension is dropped and re-created.
 */
static uint64
lease_exec(LeaseQuery q, Datum *values, const char *nulls)
{
	const LeaseQueryDef *def = &lease_queries[q];
	int			rc;

	if (lease_plans[q] == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare(def->sql, def->nargs, (Oid *) def->argtypes);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for pg_lease query %d: %s",
				 (int) q, SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
		lease_plans[q] = plan;
	}

	rc = SPI_execute_plan(lease_plans[q], values, nulls, false, 0);
	if (rc < 0)
		elog(ERROR, "pg_lease query %d failed: %s", (int) q, SPI_result_code_string(rc));
	return SPI_processed;
}

/*
 * lease_result_int64 -- column `col` of the first result row
 */
static int64
lease_result_int64(int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, &isnull);

	Assert(!isnull);
	return DatumGetInt64(d);
}

/*
 * lease_exec_change -- run a conditional row change; keep no lock if it fails
 *
 * The statement runs in a subtransaction, released if it changed a row and
 * rolled back (dropping any tuple lock it took) if it changed none.  With
 * result non-NULL, the first column of the first row returned is stored
 * there.  Returns the number of rows changed.
 */
static uint64
lease_exec_change(LeaseQuery q, Datum *values, const char *nulls, int64 *result)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	uint64		changed = 0;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcontext);

	PG_TRY();
	{
		changed = lease_exec(q, values, nulls);
		if (changed > 0 && result != NULL)
			*result = lease_result_int64(1);
		if (changed > 0)
			ReleaseCurrentSubTransaction();
		else
			RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		/* leave the transaction nesting as the caller's error handler expects it */
		MemoryContextSwitchTo(oldcontext);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
		ReThrowError(edata);
	}
	PG_END_TRY();

	return changed;
}

/*
 * lease_read_row -- the resource's row as it is now, without locking it
 */
static void
lease_read_row(text *resource, LeaseRow *row)
{
	Datum		values[1] = {PointerGetDatum(resource)};
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;

	memset(row, 0, sizeof(*row));
	if (lease_exec(Q_READ_ROW, values, NULL) == 0)
		return;

	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	row->found = true;
	row->token = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	row->holder = TextDatumGetCString(SPI_getbinval(tup, desc, 2, &isnull));
	row->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
	row->expires_at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 4, &isnull));
	row->released = DatumGetBool(SPI_getbinval(tup, desc, 5, &isnull));
	row->unexpired = DatumGetBool(SPI_getbinval(tup, desc, 6, &isnull));
	row->session_gone = DatumGetBool(SPI_getbinval(tup, desc, 7, &isnull));
}

/*
 * lease_row_held_by -- is the row a current grant of this holder and role?
 *
 * Such a holder asking again is an idempotent re-acquire, never a wait.
 */
static bool
lease_row_held_by(const LeaseRow *row, const LeaseCaller *caller, const char *holder)
{
	return row->found && row->unexpired && !row->session_gone &&
		row->owner == caller->role && strcmp(row->holder, holder) == 0;
}

/*
 * lease_drop_hint -- remove entry i of the grants this backend remembers
 */
static void
lease_drop_hint(int i)
{
	memmove(&held_grants[i], &held_grants[i + 1],
			sizeof(HeldGrant) * (num_held_grants - i - 1));
	num_held_grants--;
}

/*
 * lease_remember_grant -- note a grant for the nested-wait check
 */
static void
lease_remember_grant(const char *res, const char *holder, int64 token)
{
	int			slot = -1;

	for (int i = 0; i < num_held_grants; i++)
	{
		if (strcmp(held_grants[i].resource, res) == 0 &&
			strcmp(held_grants[i].holder, holder) == 0)
		{
			slot = i;
			break;
		}
	}
	if (slot < 0)
	{
		/* full: forget the oldest hint (it is re-verified anyway) */
		if (num_held_grants == LEASE_MAX_TRACKED)
			lease_drop_hint(0);
		slot = num_held_grants++;
	}
	strlcpy(held_grants[slot].resource, res, sizeof(held_grants[slot].resource));
	strlcpy(held_grants[slot].holder, holder, sizeof(held_grants[slot].holder));
	held_grants[slot].token = token;
}

/*
 * lease_forget_grant -- drop the hint of a grant this backend released
 *
 * Keeps the list (and the table checks of the nested-wait check) as short as
 * the grants actually held.
 */
static void
lease_forget_grant(const char *res, int64 token)
{
	for (int i = 0; i < num_held_grants; i++)
	{
		if (held_grants[i].token == token &&
			strcmp(held_grants[i].resource, res) == 0)
		{
			lease_drop_hint(i);
			return;
		}
	}
}

/*
 * lease_check_no_hold_and_wait -- refuse to wait while holding another lease
 *
 * A holder that waits while holding could deadlock with one that does the
 * reverse; refusing the wait makes lease waits deadlock-free.  "Holder" is the
 * holder label (the default label names this backend).
 */
static void
lease_check_no_hold_and_wait(LeaseCaller *caller, text *resource, const char *res,
							 const char *holder)
{
	LeaseRow	row;
	int			kept = 0;
	const HeldGrant *other = NULL;
	bool		holds_this = false;

	for (int i = 0; i < num_held_grants; i++)
	{
		HeldGrant  *g = &held_grants[i];
		Datum		values[2];

		values[0] = CStringGetTextDatum(g->resource);
		values[1] = Int64GetDatum(g->token);
		if (lease_exec(Q_IS_CURRENT, values, NULL) == 0)
			continue;			/* released, expired or rolled back: forget it */

		held_grants[kept++] = *g;
		if (strcmp(g->holder, holder) != 0)
			continue;
		if (strcmp(g->resource, res) == 0)
			holds_this = true;
		else if (other == NULL)
			other = &held_grants[kept - 1];
	}
	num_held_grants = kept;

	/*
	 * Asking again for a resource it holds is a re-acquire: it never waits.
	 * The grant may come from another connection of the same holder, so ask
	 * the table before refusing.
	 */
	if (other == NULL || holds_this)
		return;
	lease_read_row(resource, &row);
	if (!lease_row_held_by(&row, caller, holder))
		ereport(ERROR,
				(errcode(ERRCODE_LEASE_NESTED_WAIT),
				 errmsg("cannot wait for lease \"%s\" while holding lease \"%s\"",
						res, other->resource),
				 errdetail("Holder \"%s\" holds \"%s\"; waiting while holding could deadlock.",
						   holder, other->resource),
				 errhint("Release \"%s\" first, or call with wait => '0'.", other->resource)));
}

/*
 * lease_session_params -- parameters $at+1, $at+2 (backend_pid, backend_start):
 * this backend when the grant is session-bound, else NULL
 */
static void
lease_session_params(Datum *values, char *nulls, int at, bool session_bound)
{
	values[at] = Int32GetDatum(MyProcPid);
	values[at + 1] = TimestampTzGetDatum(MyStartTimestamp);
	nulls[at] = nulls[at + 1] = session_bound ? ' ' : 'n';
}

/*
 * lease_grant_params -- $1..$6 of the statements that make a grant
 *
 * Q_TAKE_RELEASED, Q_INSERT and Q_TAKE_OVER all start with (resource, ttl,
 * owner, holder, backend_pid, backend_start); the backend is recorded only
 * for a session-bound grant.
 */
static void
lease_grant_params(Datum *values, char *nulls, int nparams, text *resource,
				   Interval *ttl, const LeaseCaller *caller, const char *holder,
				   bool session_bound)
{
	values[0] = PointerGetDatum(resource);
	values[1] = IntervalPGetDatum(ttl);
	values[2] = ObjectIdGetDatum(caller->role);
	values[3] = CStringGetTextDatum(holder);
	memset(nulls, ' ', nparams);
	lease_session_params(values, nulls, 4, session_bound);
}

/*
 * lease_try_grant -- one try to grant the resource
 *
 * On LEASE_TRY_BUSY, *busy_until is when the current grant expires.  With
 * may_take false (others are queued first) a free resource counts as busy;
 * only the holder's own re-acquire goes through.
 */
static LeaseTry
lease_try_grant(LeaseCaller *caller, text *resource, Interval *ttl,
				const char *holder, bool session_bound, bool may_take,
				int64 *token, TimestampTz *busy_until)
{
	LeaseRow	row;
	Datum		values[8];
	char		nulls[8];

	/*
	 * The common case first: a released grant, taken in one statement.  When
	 * it changes nothing, the row is missing, held, expired unreleased, or
	 * taken by someone else meanwhile: read it and decide.
	 */
	if (may_take)
	{
		lease_grant_params(values, nulls, 6, resource, ttl, caller, holder, session_bound);
		if (lease_exec_change(Q_TAKE_RELEASED, values, nulls, token) > 0)
		{
			lease_count(LEASE_STAT_GRANTS);
			return LEASE_TRY_GRANTED;
		}
	}

	lease_read_row(resource, &row);

	if (!may_take && !lease_row_held_by(&row, caller, holder))
		return LEASE_TRY_BUSY;

	if (!row.found)
	{
		lease_grant_params(values, nulls, 6, resource, ttl, caller, holder, session_bound);

		/* DO NOTHING does not lock a conflicting row: a lost race just re-reads */
		if (lease_exec(Q_INSERT, values, nulls) == 0)
			return LEASE_TRY_AGAIN;
		*token = lease_result_int64(1);
		lease_count(LEASE_STAT_GRANTS);
		return LEASE_TRY_GRANTED;
	}

	if (row.unexpired && !row.session_gone)
	{
		/*
		 * The same holder (and role) asking again: same token, new expiry,
		 * and bound to this session if (and only if) this request says so.
		 */
		if (lease_row_held_by(&row, caller, holder))
		{
			values[0] = PointerGetDatum(resource);
			values[1] = Int64GetDatum(row.token);
			values[2] = IntervalPGetDatum(ttl);
			memset(nulls, ' ', 3);
			lease_session_params(values, nulls, 3, session_bound);
			if (lease_exec_change(Q_EXTEND_SAME_HOLDER, values, nulls, NULL) == 0)
				return LEASE_TRY_AGAIN;
			*token = row.token;
			return LEASE_TRY_GRANTED;
		}
		*busy_until = row.expires_at;
		return LEASE_TRY_BUSY;
	}

	/*
	 * The grant seen is over.  Take exactly that grant: if anyone renewed or
	 * took it since, the token or expiry re-check fails and we read again.
	 * If a fencing transaction holds the row, this waits for it to end.
	 */
	lease_grant_params(values, nulls, 7, resource, ttl, caller, holder, session_bound);
	values[6] = Int64GetDatum(row.token);

	if (lease_exec_change(Q_TAKE_OVER, values, nulls, token) == 0)
		return LEASE_TRY_AGAIN;
	lease_count(LEASE_STAT_GRANTS);
	if (!row.released)
		lease_count(LEASE_STAT_TAKEOVERS);
	return LEASE_TRY_GRANTED;
}

/*
 * lease_acquire_common -- acquire and try_acquire
 */
static Datum
lease_acquire_common(FunctionCallInfo fcinfo, text *resource, Interval *ttl,
					 int64 wait_usecs, const char *holder, bool session_bound)
{
	LeaseCaller caller;
	TimestampTz deadline;
	char	   *res = text_to_cstring(resource);
	volatile bool queued = false;
	bool		contended = false;
	bool		granted = false;
	int64		token = 0;
	int			guc_level = -1;

	if (wait_usecs > 0 && IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("lease.acquire cannot wait in a REPEATABLE READ or SERIALIZABLE transaction"),
				 errdetail("The transaction's snapshot would never see the lease being released."),
				 errhint("Acquire in a READ COMMITTED transaction, or pass wait => '0' and retry.")));

	if (pg_add_s64_overflow(GetCurrentTimestamp(), wait_usecs, &deadline))
		deadline = DT_NOEND;

	lease_begin(&caller);

	/*
	 * The wait argument is the timeout: waiting for the row lock of a fencing
	 * transaction is part of the wait, not a lock_timeout matter.
	 */
	if (LockTimeout != 0)
	{
		guc_level = NewGUCNestLevel();
		(void) set_config_option("lock_timeout", "0", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}

	if (wait_usecs > 0)
		lease_check_no_hold_and_wait(&caller, resource, res, holder);

	PG_TRY();
	{
		for (;;)
		{
			TimestampTz busy_until = DT_NOEND;
			bool		may_take = lease_queue_may_take(res);
			LeaseTry	result;

			CHECK_FOR_INTERRUPTS();

			/* a queued waiter that is not the head has nothing to try */
			if (queued && !may_take)
				result = LEASE_TRY_BUSY;
			else
				result = lease_try_grant(&caller, resource, ttl, holder, session_bound,
										 may_take, &token, &busy_until);
			if (result == LEASE_TRY_GRANTED)
			{
				granted = true;
				break;
			}
			if (result == LEASE_TRY_AGAIN)
				continue;

			if (!contended)
			{
				contended = true;
				lease_count(LEASE_STAT_CONTENDED);
			}
			if (GetCurrentTimestamp() >= deadline)
			{
				if (wait_usecs > 0)
					lease_count(LEASE_STAT_TIMEOUTS);
				break;
			}
			if (!queued && lease_queue_enabled())
			{
				/*
				 * Queued now, so a release that commits from here on wakes
				 * us.  One committed between our try and the join did not
				 * see us: try once more before sleeping.
				 */
				lease_queue_join(res);
				queued = true;
				continue;
			}
			lease_wait_until(Min(deadline, busy_until));
		}
	}
	PG_CATCH();
	{
		/* cancel, statement_timeout, any error: never block the next waiter */
		lease_queue_leave();
		PG_RE_THROW();
	}
	PG_END_TRY();
	lease_queue_leave();

	if (granted)
	{
		lease_remember_grant(res, holder, token);
		if (session_bound)
			lease_note_session_grant(res);
	}

	if (guc_level >= 0)
		AtEOXact_GUC(true, guc_level);
	lease_end(&caller);

	/*
	 * A grant must survive a crash before anyone is told of it: otherwise
	 * recovery could hand its token out again.  Flush even when the session
	 * has synchronous_commit = off.
	 */
	if (granted)
		ForceSyncCommit();

	if (!granted)
		PG_RETURN_NULL();
	PG_RETURN_INT64(token);
}

/*
 * lease_acquire -- lease.acquire(resource, ttl, wait, holder, session_bound)
 */
PG_FUNCTION_INFO_V1(lease_acquire);

Datum
lease_acquire(PG_FUNCTION_ARGS)
{
	text	   *resource = lease_resource_arg(fcinfo, 0);
	Interval   *ttl = lease_ttl_arg(fcinfo, 1);
	int64		wait_usecs = lease_interval_usecs(fcinfo, 2, "wait");
	const char *holder = lease_holder_arg(fcinfo, 3);
	bool		session_bound;

	if (wait_usecs < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("wait must not be negative")));
	lease_arg_not_null(fcinfo, 4, "session_bound");
	session_bound = PG_GETARG_BOOL(4);

	return lease_acquire_common(fcinfo, resource, ttl, wait_usecs, holder, session_bound);
}

/*
 * lease_try_acquire -- lease.try_acquire(resource, ttl, holder, session_bound)
 */
PG_FUNCTION_INFO_V1(lease_try_acquire);

Datum
lease_try_acquire(PG_FUNCTION_ARGS)
{
	text	   *resource = lease_resource_arg(fcinfo, 0);
	Interval   *ttl = lease_ttl_arg(fcinfo, 1);
	const char *holder = lease_holder_arg(fcinfo, 2);
	bool		session_bound;

	lease_arg_not_null(fcinfo, 3, "session_bound");
	session_bound = PG_GETARG_BOOL(3);

	return lease_acquire_common(fcinfo, resource, ttl, 0, holder, session_bound);
}

/*
 * lease_check_owner -- after a no-op on (resource, token): was it someone else's?
 *
 * Renew, release and fence act only on grants of the calling role.  Nothing
 * was changed when this raises.
 */
static void
lease_check_owner(LeaseCaller *caller, text *resource, int64 token, const char *action)
{
	Datum		values[2] = {PointerGetDatum(resource), Int64GetDatum(token)};
	Oid			owner;
	bool		isnull;

	if (caller->is_superuser || lease_exec(Q_OWNER_OF, values, NULL) == 0)
		return;
	owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 1, &isnull));
	if (owner != caller->role)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to %s lease \"%s\"", action,
						text_to_cstring(resource)),
				 errdetail("Token " INT64_FORMAT " was granted to another role.", token)));
}

/*
 * lease_renew -- lease.renew(resource, token, ttl)
 */
PG_FUNCTION_INFO_V1(lease_renew);

Datum
lease_renew(PG_FUNCTION_ARGS)
{
	text	   *resource = lease_resource_arg(fcinfo, 0);
	int64		token = lease_token_arg(fcinfo, 1);
	Interval   *ttl = lease_ttl_arg(fcinfo, 2);
	LeaseCaller caller;
	Datum		values[5];
	bool		renewed;

	lease_begin(&caller);
	values[0] = PointerGetDatum(resource);
	values[1] = Int64GetDatum(token);
	values[2] = IntervalPGetDatum(ttl);
	values[3] = ObjectIdGetDatum(caller.role);
	values[4] = BoolGetDatum(caller.is_superuser);
	renewed = lease_exec_change(Q_RENEW, values, NULL, NULL) > 0;
	if (!renewed)
		lease_check_owner(&caller, resource, token, "renew");
	lease_end(&caller);

	if (renewed)
	{
		lease_count(LEASE_STAT_RENEWALS);
		/* a renewal the holder was told of must not vanish in a crash */
		ForceSyncCommit();
	}
	else
		lease_count(LEASE_STAT_FAILED_RENEWALS);
	PG_RETURN_BOOL(renewed);
}

/*
 * lease_release -- lease.release(resource, token)
 */
PG_FUNCTION_INFO_V1(lease_release);

Datum
lease_release(PG_FUNCTION_ARGS)
{
	text	   *resource = lease_resource_arg(fcinfo, 0);
	int64		token = lease_token_arg(fcinfo, 1);
	LeaseCaller caller;
	Datum		values[4];
	bool		release_only = lease_release_starts();
	bool		released;

	lease_begin(&caller);
	values[0] = PointerGetDatum(resource);
	values[1] = Int64GetDatum(token);
	values[2] = ObjectIdGetDatum(caller.role);
	values[3] = BoolGetDatum(caller.is_superuser);
	released = lease_exec_change(Q_RELEASE, values, NULL, NULL) > 0;
	if (!released)
		lease_check_owner(&caller, resource, token, "release");
	lease_end(&caller);

	lease_release_done(release_only);
	if (released)
	{
		char	   *res = text_to_cstring(resource);

		lease_forget_grant(res, token);
		lease_count(LEASE_STAT_RELEASES);
		lease_wake_at_commit(res);
	}
	PG_RETURN_BOOL(released);
}

/*
 * lease_fence -- lease.fence(resource, token): admit a write of the holder
 *
 * FOR SHARE on the grant's row keeps every takeover, break or gc of it
 * waiting until this transaction ends, so the caller's writes commit before
 * any later grant of the resource exists.
 */
PG_FUNCTION_INFO_V1(lease_fence);

Datum
lease_fence(PG_FUNCTION_ARGS)
{
	text	   *resource = lease_resource_arg(fcinfo, 0);
	int64		token = lease_token_arg(fcinfo, 1);
	LeaseCaller caller;
	Datum		values[4];
	bool		current;

	lease_begin(&caller);
	values[0] = PointerGetDatum(resource);
	values[1] = Int64GetDatum(token);
	values[2] = ObjectIdGetDatum(caller.role);
	values[3] = BoolGetDatum(caller.is_superuser);
	current = lease_exec(Q_FENCE, values, NULL) > 0;
	if (!current)
	{
		lease_check_owner(&caller, resource, token, "fence");
		lease_count(LEASE_STAT_FENCE_REJECTIONS);
		ereport(ERROR,
				(errcode(ERRCODE_LEASE_NOT_HELD),
				 errmsg("lease \"%s\" is not held with token " INT64_FORMAT,
						text_to_cstring(resource), token),
				 errdetail("The grant was released, broken, has expired, or a later grant replaced it."),
				 errhint("Do not write: acquire the lease again and redo the work with the new token.")));
	}
	lease_end(&caller);

	ForceSyncCommit();
	PG_RETURN_INT64(token);
}

/*
 * lease_is_current -- lease.is_current(resource, token), without locking
 */
PG_FUNCTION_INFO_V1(lease_is_current);

Datum
lease_is_current(PG_FUNCTION_ARGS)
{
	text	   *resource = lease_resource_arg(fcinfo, 0);
	int64		token = lease_token_arg(fcinfo, 1);
	LeaseCaller caller;
	Datum		values[2] = {PointerGetDatum(resource), Int64GetDatum(token)};
	bool		current;

	lease_begin(&caller);
	current = lease_exec(Q_IS_CURRENT, values, NULL) > 0;
	lease_end(&caller);
	PG_RETURN_BOOL(current);
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
	text	   *resource = lease_resource_arg(fcinfo, 0);
	LeaseCaller caller;
	Datum		values[1] = {PointerGetDatum(resource)};
	bool		broken;
	int64		token = 0;

	lease_begin(&caller);
	broken = lease_exec_change(Q_BREAK, values, NULL, &token) > 0;
	lease_end(&caller);

	if (!broken)
		PG_RETURN_NULL();
	lease_wake_at_commit(text_to_cstring(resource));
	PG_RETURN_INT64(token);
}

/*
 * lease_gc -- lease.gc(retain): delete rows free for longer than retain
 *
 * Tokens come from the sequence, not from the rows, so a deleted row never
 * lets a token go backwards.
 */
PG_FUNCTION_INFO_V1(lease_gc);

Datum
lease_gc(PG_FUNCTION_ARGS)
{
	int64		retain_usecs = lease_interval_usecs(fcinfo, 0, "retain");
	TimestampTz cutoff;
	LeaseCaller caller;
	Datum		values[1];
	int64		deleted;

	if (retain_usecs < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("retain must not be negative")));

	/* a cutoff before the first representable instant: nothing is that old */
	if (pg_sub_s64_overflow(GetCurrentTimestamp(), retain_usecs, &cutoff) ||
		!IS_VALID_TIMESTAMP(cutoff))
		PG_RETURN_INT64(0);

	lease_begin(&caller);
	values[0] = TimestampTzGetDatum(cutoff);
	lease_exec(Q_GC, values, NULL);
	deleted = lease_result_int64(1);
	lease_end(&caller);
	PG_RETURN_INT64(deleted);
}

/*
 * lease_session_alive -- lease.session_alive(pid, started)
 *
 * True while the backend with that PID and start time runs.  The start time
 * tells a reused PID apart.  The local copy of the backend status array is
 * dropped first: a waiter loops inside one transaction and must see exits.
 */
PG_FUNCTION_INFO_V1(lease_session_alive);

Datum
lease_session_alive(PG_FUNCTION_ARGS)
{
	int32		pid = PG_GETARG_INT32(0);
	TimestampTz started = PG_GETARG_TIMESTAMPTZ(1);
	int			n;

	if (pid == MyProcPid)
		PG_RETURN_BOOL(started == MyStartTimestamp);
	if (lease_session_exited(pid, started))
		PG_RETURN_BOOL(false);

	pgstat_clear_backend_activity_snapshot();
	n = pgstat_fetch_stat_numbackends();
	for (int i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *local = pgstat_fetch_stat_local_beentry(i);

		if (local != NULL &&
			local->backendStatus.st_procpid == pid &&
			local->backendStatus.st_proc_start_timestamp == started)
			PG_RETURN_BOOL(true);
	}
	PG_RETURN_BOOL(false);
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
