/*-------------------------------------------------------------------------
 *
 * lease_spi.c
 *		Every statement on lease.grants, and how it runs: prepared over SPI,
 *		as the table's owner, with the search path pinned to pg_catalog.
 *
 * This file owns the statement texts (lease_queries), their plans, the
 * conditional change in a subtransaction, reading a resource's row, and the
 * role switch around them (lease_begin/lease_end).  It decides nothing: the
 * acquire algorithm (lease_acquire.c) and the operations on a grant
 * (lease_grant_ops.c) choose which statement to run.
 *
 * A grant is a row of lease.grants; its state changes only through the
 * prepared statements below, each an ordinary MVCC row change, so a grant or
 * release inside a transaction block takes effect at commit and vanishes on
 * rollback.  Safety rests on three facts enforced by these statements:
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
 * subtransaction that is rolled back when it changes nothing
 * (lease_exec_change).  An UPDATE that waited for a concurrent change and
 * then failed its re-check would otherwise keep the row locked to the end of
 * the transaction (so would INSERT ... ON CONFLICT DO UPDATE with a false
 * WHERE), and the new holder's renew or release would queue behind a waiter.
 *
 * The functions run as the caller but do their table work as the owner of
 * lease.grants, so PUBLIC needs no right on the table; ownership of a grant
 * is the role that acquired it, checked by the statements and by
 * lease_grant_ops.c.  While they do, the search path is pg_catalog alone (an
 * override pushed by lease_begin, cheaper than a SET clause on every call),
 * and every name in the statements is qualified too.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
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
 * $4 holder, $5 backend_pid, $6 backend_start, $7 value (the order
 * lease_acquire.c's acquire_grant_params fills); the caller appends its WHERE.
 */
#define LEASE_NEW_GRANT \
	"UPDATE lease.grants SET token = " LEASE_NEXT_TOKEN "," \
	"       expires_at = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $2," \
	"       granted_at = pg_catalog.clock_timestamp()," \
	"       renewed_at = pg_catalog.clock_timestamp()," \
	"       owner = $3, released = false, backend_pid = $5, backend_start = $6," \
	"       holder = $4"
#define LEASE_SET_VALUE ", value = $7"

typedef struct LeaseQueryDef
{
	const char *sql;
	int			nargs;
	Oid			argtypes[9];
} LeaseQueryDef;

/* The parameters of a new grant: see LEASE_NEW_GRANT. */
#define LEASE_GRANT_ARGTYPES \
	TEXTOID, INTERVALOID, OIDOID, TEXTOID, INT4OID, TIMESTAMPTZOID, TEXTOID

/*
 * Statement texts, for the schema of 0.4.0 on (one row per grant).
 * Everything is schema-qualified, operators included, and they are prepared
 * and run with the search path pinned to pg_catalog.
 */
static const LeaseQueryDef lease_queries[LEASE_NUM_QUERIES] = {
	/*
	 * The resource's row, locked until the acquire's subtransaction ends: the
	 * grants of one resource are decided by one acquire at a time, and the
	 * next one reads them after this one committed (or rolled back).
	 */
	[Q_LOCK_RESOURCE] = {
		"SELECT 1 FROM lease.resources WHERE resource OPERATOR(pg_catalog.=) $1 FOR UPDATE",
		1, {TEXTOID}
	},
	/*
	 * A lock's common case: a released lock, taken in place, one UPDATE (a
	 * HOT update: the token is not indexed) instead of locking the resource,
	 * clearing the row and inserting.  It takes no resource lock; it meets
	 * every other acquire on the row it updates: an acquire adds a grant only
	 * after it deleted every released lock of the resource (Q_CLEAR_OVER,
	 * and a try again when one was released after that statement's
	 * snapshot), so this UPDATE either waits for that delete and finds the
	 * row gone, or the delete waits for this UPDATE and finds the row
	 * current.  So a released lock is never beside a current grant: while
	 * it was current nothing else was granted, and once released it goes
	 * before anything else is.  Rows beside it are over (an expiry the
	 * clearing did not see yet), and stay over.
	 */
	[Q_TAKE_RELEASED] = {
		LEASE_NEW_GRANT LEASE_SET_VALUE
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND released"
		"   AND expires_at OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp()"
		"   AND mode OPERATOR(pg_catalog.=) 'exclusive' AND permits OPERATOR(pg_catalog.=) 0"
		" RETURNING token",
		7, {LEASE_GRANT_ARGTYPES}
	},
	[Q_ADD_RESOURCE] = {
		"INSERT INTO lease.resources (resource) VALUES ($1)"
		" ON CONFLICT (resource) DO NOTHING",
		1, {TEXTOID}
	},
	/*
	 * The grants of the resource that are over (released, expired, session
	 * gone) go, before a new grant is made.  A grant held by an open fence
	 * (FOR SHARE) makes this wait until the fencing transaction ends, so no
	 * grant that conflicts with a fenced write exists before it commits.
	 * Returns one row per grant that had not been released (a takeover).
	 */
	[Q_CLEAR_OVER] = {
		"DELETE FROM lease.grants"
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND NOT (" LEASE_CURRENT ")"
		" RETURNING released",
		1, {TEXTOID}
	},
	[Q_READ_ROW] = {
		"SELECT token, holder, owner, expires_at, released,"
		"       expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp(),"
		"       CASE WHEN backend_pid IS NULL THEN false"
		"            ELSE NOT lease.session_alive(backend_pid, backend_start) END,"
		"       mode OPERATOR(pg_catalog.=) 'shared', permits"
		"  FROM lease.grants WHERE resource OPERATOR(pg_catalog.=) $1"
		" ORDER BY token",
		1, {TEXTOID}
	},
	/* A new grant: $1..$7 as LEASE_NEW_GRANT, $8 mode, $9 permits. */
	[Q_INSERT] = {
		"INSERT INTO lease.grants (resource, token, expires_at, granted_at, renewed_at,"
		"                          owner, released, backend_pid, backend_start, holder, value,"
		"                          mode, permits)"
		" VALUES ($1, " LEASE_NEXT_TOKEN ","
		"         pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $2,"
		"         pg_catalog.clock_timestamp(), pg_catalog.clock_timestamp(),"
		"         $3, false, $5, $6, $4, $7, $8, $9)"
		" RETURNING token",
		9, {LEASE_GRANT_ARGTYPES, TEXTOID, INT4OID}
	},
	/*
	 * The same holder asking again states the grant's terms again: the new
	 * expiry, and the session binding of this request ($4, $5: NULL unless
	 * session_bound), so a retry from a new connection binds it there; a
	 * campaign ($6 true) states its value ($7) again too, a plain acquire
	 * keeps the value.
	 */
	[Q_EXTEND_SAME_HOLDER] = {
		"UPDATE lease.grants"
		"   SET expires_at = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $3,"
		"       renewed_at = pg_catalog.clock_timestamp(),"
		"       backend_pid = $4, backend_start = $5,"
		"       value = CASE WHEN $6 THEN $7 ELSE value END"
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2"
		"   AND " LEASE_CURRENT
		" RETURNING token",
		7, {TEXTOID, INT8OID, INTERVALOID, INT4OID, TIMESTAMPTZOID, BOOLOID, TEXTOID}
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
	/* A proclamation: the value of exactly the current grant (resource, token). */
	[Q_PROCLAIM] = {
		"UPDATE lease.grants SET value = $3"
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2"
		"   AND " LEASE_CURRENT
		"   AND (owner OPERATOR(pg_catalog.=) $4 OR $5)"
		" RETURNING token",
		5, {TEXTOID, INT8OID, TEXTOID, OIDOID, BOOLOID}
	},
	/*
	 * An election's leader: its current exclusive grant, if any (what
	 * lease.leases shows); a campaign never makes any other.
	 */
	[Q_LEADER] = {
		"SELECT value, token, granted_at, expires_at FROM lease.grants"
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND " LEASE_CURRENT
		"   AND mode OPERATOR(pg_catalog.=) 'exclusive' AND permits OPERATOR(pg_catalog.=) 0"
		" ORDER BY token DESC LIMIT 1",
		1, {TEXTOID}
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
	/*
	 * The fence of a write only a sole holder may make: a lock, a writer, or
	 * a permit of a semaphore of one.
	 */
	[Q_FENCE_EXCLUSIVE] = {
		"SELECT token FROM lease.grants"
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2"
		"   AND " LEASE_CURRENT
		"   AND (owner OPERATOR(pg_catalog.=) $3 OR $4)"
		"   AND mode OPERATOR(pg_catalog.=) 'exclusive' AND permits OPERATOR(pg_catalog.<=) 1"
		" FOR SHARE",
		4, {TEXTOID, INT8OID, OIDOID, BOOLOID}
	},
	[Q_IS_CURRENT] = {
		"SELECT token FROM lease.grants"
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2"
		"   AND " LEASE_CURRENT,
		2, {TEXTOID, INT8OID}
	},
	/* every current grant of the resource ends; one row (the highest token) if any did */
	[Q_BREAK] = {
		"WITH ended AS (UPDATE lease.grants"
		"   SET expires_at = pg_catalog.clock_timestamp(), released = true"
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND " LEASE_CURRENT
		" RETURNING token)"
		" SELECT pg_catalog.max(token) FROM ended"
		" HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0",
		1, {TEXTOID}
	},
	/*
	 * Grants over for longer than the cutoff, and the rows of resources that
	 * had no grant left before this statement (the next gc takes those whose
	 * last grants it deletes now).  Lock order: gc holds the grant rows it
	 * deletes, so it must not wait for a resource's row, which an acquire
	 * holds while it waits for grant rows: it skips the rows an acquire has
	 * locked (that resource is in use: a later gc takes it).
	 */
	[Q_GC] = {
		"WITH gone AS (DELETE FROM lease.grants"
		"  WHERE expires_at OPERATOR(pg_catalog.<) $1"
		"  RETURNING 1),"
		" idle AS (SELECT r.ctid FROM lease.resources r"
		"  WHERE NOT EXISTS (SELECT 1 FROM lease.grants g"
		"                     WHERE g.resource OPERATOR(pg_catalog.=) r.resource)"
		"  FOR UPDATE OF r SKIP LOCKED),"
		" unused AS (DELETE FROM lease.resources r USING idle"
		"  WHERE r.ctid OPERATOR(pg_catalog.=) idle.ctid)"
		" SELECT pg_catalog.count(*) FROM gone",
		1, {TIMESTAMPTZOID}
	},
};

/*
 * The statements that differ on a schema from before 0.4.0 (one row per
 * resource, keyed by it): this library may run against a database not yet
 * updated with ALTER EXTENSION pg_lease UPDATE, where only the old SQL
 * functions exist, all of them exclusive.  lease_acquire.c runs the
 * single-row algorithm there.
 */
static const LeaseQueryDef lease_queries_0_3[LEASE_NUM_QUERIES] = {
	/*
	 * The first try of an acquire: take a released grant without reading it
	 * first.  A released row is free whoever held it; the re-check after a
	 * concurrent change sees the committed version, and nextval() is
	 * evaluated again for it, after the row lock is held.
	 */
	[Q_TAKE_RELEASED] = {
		LEASE_NEW_GRANT LEASE_SET_VALUE
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND released"
		"   AND expires_at OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp()"
		" RETURNING token",
		7, {LEASE_GRANT_ARGTYPES}
	},
	[Q_READ_ROW] = {
		"SELECT token, holder, owner, expires_at, released,"
		"       expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp(),"
		"       CASE WHEN backend_pid IS NULL THEN false"
		"            ELSE NOT lease.session_alive(backend_pid, backend_start) END,"
		"       false, 0"
		"  FROM lease.grants WHERE resource OPERATOR(pg_catalog.=) $1",
		1, {TEXTOID}
	},
	[Q_INSERT] = {
		"INSERT INTO lease.grants (resource, token, expires_at, granted_at, renewed_at,"
		"                          owner, released, backend_pid, backend_start, holder, value)"
		" VALUES ($1, " LEASE_NEXT_TOKEN ","
		"         pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $2,"
		"         pg_catalog.clock_timestamp(), pg_catalog.clock_timestamp(),"
		"         $3, false, $5, $6, $4, $7)"
		" ON CONFLICT (resource) DO NOTHING"
		" RETURNING token",
		7, {LEASE_GRANT_ARGTYPES}
	},
	/*
	 * Take over exactly the grant seen, if it is over: expired, or its
	 * session gone.  Both are judged again on the version the UPDATE locks,
	 * so a re-acquire that moved the grant to a live session meanwhile wins.
	 */
	[Q_TAKE_OVER] = {
		LEASE_NEW_GRANT LEASE_SET_VALUE
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $8"
		"   AND NOT (" LEASE_CURRENT ")"
		" RETURNING token",
		8, {LEASE_GRANT_ARGTYPES, INT8OID}
	},
	[Q_LEADER] = {
		"SELECT value, token, granted_at, expires_at FROM lease.grants"
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND " LEASE_CURRENT,
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

/*
 * The statements that name lease.grants.value, as they run on a schema from
 * before 0.3.0 (no such column), where only the old SQL functions exist,
 * none of which states a value.  The parameters are the same; $6 and $7
 * (the value) are left unused.  Those not here are lease_queries_0_3's.
 */
static const LeaseQueryDef lease_queries_pre_0_3[LEASE_NUM_QUERIES] = {
	[Q_TAKE_RELEASED] = {
		LEASE_NEW_GRANT
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND released"
		"   AND expires_at OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp()"
		" RETURNING token",
		7, {LEASE_GRANT_ARGTYPES}
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
		7, {LEASE_GRANT_ARGTYPES}
	},
	[Q_TAKE_OVER] = {
		LEASE_NEW_GRANT
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $8"
		"   AND NOT (" LEASE_CURRENT ")"
		" RETURNING token",
		8, {LEASE_GRANT_ARGTYPES, INT8OID}
	},
	[Q_EXTEND_SAME_HOLDER] = {
		"UPDATE lease.grants"
		"   SET expires_at = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $3,"
		"       renewed_at = pg_catalog.clock_timestamp(),"
		"       backend_pid = $4, backend_start = $5"
		" WHERE resource OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2"
		"   AND " LEASE_CURRENT
		" RETURNING token",
		7, {TEXTOID, INT8OID, INTERVALOID, INT4OID, TIMESTAMPTZOID, BOOLOID, TEXTOID}
	},
};

/* The schema of lease.grants, as lease_begin found it. */
typedef enum LeaseSchema
{
	LEASE_SCHEMA_ROWS,			/* 0.4.0 on: one row per grant */
	LEASE_SCHEMA_0_3,			/* 0.3.0: one row per resource */
	LEASE_SCHEMA_PRE_0_3,		/* 0.1.0, 0.2.0: neither value nor mode */
	LEASE_NUM_SCHEMAS
} LeaseSchema;

static LeaseSchema schema = LEASE_SCHEMA_ROWS;

/* Plans, per schema. */
static SPIPlanPtr lease_plans[LEASE_NUM_SCHEMAS][LEASE_NUM_QUERIES];

/* The search path of every statement: pg_catalog alone, no temp schema. */
static OverrideSearchPath catalog_only = {NIL, true, false, 0};

/*
 * lease_begin -- connect to SPI and switch to the owner of lease.grants
 *
 * The caller's role is kept: it owns the grants it makes.  The switch is
 * undone by lease_end(), or by transaction abort on error.
 */
void
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
				 errdetail("The extension's objects were changed by hand."),
				 errhint("Restore lease.grants from a backup.  Do not re-create the extension: "
						 "its token sequence would start again at 1 and reissue tokens.")));
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	table_owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	if (get_attnum(relid, "mode") != InvalidAttrNumber)
		schema = LEASE_SCHEMA_ROWS;
	else if (get_attnum(relid, "value") != InvalidAttrNumber)
		schema = LEASE_SCHEMA_0_3;
	else
		schema = LEASE_SCHEMA_PRE_0_3;

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
void
lease_end(LeaseCaller *caller)
{
	SPI_finish();
	PopOverrideSearchPath();
	SetUserIdAndSecContext(caller->saved_userid, caller->saved_sec_context);
}

/*
 * lease_schema_has_rows -- one row per grant (0.4.0 on)?  Valid after lease_begin.
 */
bool
lease_schema_has_rows(void)
{
	return schema == LEASE_SCHEMA_ROWS;
}

/*
 * lease_exec -- run one of the prepared statements
 *
 * Plans are prepared once per backend and kept; the plan cache re-plans them
 * if the extension is dropped and re-created.  A schema from before 0.4.0
 * gets the single-row statements, one from before 0.3.0 those without the
 * value column.
 */
uint64
lease_exec(LeaseQuery q, Datum *values, const char *nulls)
{
	const LeaseQueryDef *def = &lease_queries[q];
	SPIPlanPtr *planp = &lease_plans[schema][q];
	int			rc;

	if (schema == LEASE_SCHEMA_PRE_0_3 && lease_queries_pre_0_3[q].sql != NULL)
		def = &lease_queries_pre_0_3[q];
	else if (schema != LEASE_SCHEMA_ROWS && lease_queries_0_3[q].sql != NULL)
		def = &lease_queries_0_3[q];
	if (def->sql == NULL)
		elog(ERROR, "pg_lease query %d needs the schema of pg_lease 0.4.0", (int) q);

	if (*planp == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare(def->sql, def->nargs, (Oid *) def->argtypes);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for pg_lease query %d: %s",
				 (int) q, SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
		*planp = plan;
	}

	/*
	 * Under REPEATABLE READ or SERIALIZABLE the transaction's snapshot may
	 * predate a grant another session committed since: a decision read from
	 * it could grant beside that grant (a new row the snapshot cannot see,
	 * which no row lock of this statement meets).  Every statement reads the
	 * latest committed state instead, as under READ COMMITTED; a row changed
	 * by a transaction still in progress is still the usual 40001.
	 */
	if (IsolationUsesXactSnapshot())
		rc = SPI_execute_snapshot(*planp, values, nulls, GetLatestSnapshot(), InvalidSnapshot,
								  false, true, 0);
	else
		rc = SPI_execute_plan(*planp, values, nulls, false, 0);
	if (rc < 0)
		elog(ERROR, "pg_lease query %d failed: %s", (int) q, SPI_result_code_string(rc));
	return SPI_processed;
}

/*
 * lease_result_int64 -- column `col` of the first result row
 */
int64
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
 *
 * With locked non-NULL, a lock wait ended by lock_timeout (55P03: the row is
 * locked by a transaction that has not ended, and the caller set the
 * timeout to its deadline) is not an error: the change is rolled back,
 * *locked set and 0 returned.  Every other error is re-thrown.
 */
uint64
lease_exec_change(LeaseQuery q, Datum *values, const char *nulls, int64 *result,
				  bool *locked)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	uint64		changed = 0;

	if (locked != NULL)
		*locked = false;

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
		if (locked == NULL || edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
			ReThrowError(edata);
		FreeErrorData(edata);
		*locked = true;
		changed = 0;
	}
	PG_END_TRY();

	return changed;
}

/*
 * lease_in_subxact -- run fn in a subtransaction kept only if it returns true
 *
 * The several statements of one acquire try on a schema of one row per
 * grant (lock the resource, clear the grants that are over, add one) keep
 * their row locks and changes only when fn grants; otherwise they are rolled
 * back, so a try that decided "busy" holds no lock.  A lock wait ended by
 * lock_timeout (55P03) sets *locked and returns false; every other error is
 * re-thrown after the rollback.
 */
bool
lease_in_subxact(LeaseSubxactFn fn, void *arg, bool *locked)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	bool		kept = false;

	*locked = false;
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcontext);

	PG_TRY();
	{
		kept = fn(arg);
		if (kept)
			ReleaseCurrentSubTransaction();
		else
			RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcontext);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
		if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
			ReThrowError(edata);
		FreeErrorData(edata);
		*locked = true;
		kept = false;
	}
	PG_END_TRY();

	return kept;
}

/*
 * spi_fill_row -- result row i of Q_READ_ROW into row
 */
static void
spi_fill_row(uint64 i, LeaseRow *row)
{
	HeapTuple	tup = SPI_tuptable->vals[i];
	TupleDesc	desc = SPI_tuptable->tupdesc;
	bool		isnull;

	row->found = true;
	row->token = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	row->holder = TextDatumGetCString(SPI_getbinval(tup, desc, 2, &isnull));
	row->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
	row->expires_at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 4, &isnull));
	row->released = DatumGetBool(SPI_getbinval(tup, desc, 5, &isnull));
	row->unexpired = DatumGetBool(SPI_getbinval(tup, desc, 6, &isnull));
	row->session_gone = DatumGetBool(SPI_getbinval(tup, desc, 7, &isnull));
	row->shared = DatumGetBool(SPI_getbinval(tup, desc, 8, &isnull));
	row->permits = DatumGetInt32(SPI_getbinval(tup, desc, 9, &isnull));
}

/*
 * lease_read_row -- the resource's row as it is now, without locking it
 *
 * On a schema of one row per grant: its first row by token.
 */
void
lease_read_row(text *resource, LeaseRow *row)
{
	Datum		values[1] = {PointerGetDatum(resource)};

	memset(row, 0, sizeof(*row));
	if (lease_exec(Q_READ_ROW, values, NULL) == 0)
		return;
	spi_fill_row(0, row);
}

/*
 * lease_read_grants -- every grant row of the resource (released too), by token
 *
 * Returns their number; *rows is palloc'd in the current (SPI) context.
 */
int
lease_read_grants(text *resource, LeaseRow **rows)
{
	Datum		values[1] = {PointerGetDatum(resource)};
	uint64		n = lease_exec(Q_READ_ROW, values, NULL);
	uint64		i;

	*rows = palloc0(sizeof(LeaseRow) * Max(n, 1));
	for (i = 0; i < n; i++)
		spi_fill_row(i, &(*rows)[i]);
	return (int) n;
}
