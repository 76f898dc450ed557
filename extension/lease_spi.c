/*-------------------------------------------------------------------------
 *
 * lease_spi.c
 *		Every statement on lease.grants, and how it runs: prepared over SPI,
 *		as the table's owner, with the search path pinned to pg_catalog.
 *
 * This file owns how the statements run: their plans (the texts are in
 * lease_queries.c), the conditional change in a subtransaction, reading a
 * resource's row, and the role switch around them (lease_begin/lease_end).  It decides nothing: the
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
 * spi_in_subxact -- run fn in a subtransaction kept only if it returns true
 *
 * Rolled back (dropping any tuple lock it took) when fn returns false or
 * raises an error.  With catch_locked, a lock wait ended by lock_timeout
 * (55P03) is not an error: *locked is set and false returned.  Every other
 * error is re-thrown after the rollback, the transaction nesting left as the
 * caller's error handler expects it.
 */
static bool
spi_in_subxact(LeaseSubxactFn fn, void *arg, bool catch_locked, bool *locked)
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
		if (!catch_locked || edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
			ReThrowError(edata);
		FreeErrorData(edata);
		*locked = true;
		kept = false;
	}
	PG_END_TRY();

	return kept;
}

/* One conditional change (lease_exec_change), run by spi_in_subxact. */
typedef struct SpiChange
{
	LeaseQuery	q;
	Datum	   *values;
	const char *nulls;
	int64	   *result;
	uint64		changed;
} SpiChange;

/* The ctid the last change returned as its second column, if it did. */
static ItemPointerData changed_tid;
static bool changed_has_tid = false;

static bool
spi_change(void *arg)
{
	SpiChange  *c = arg;

	changed_has_tid = false;
	c->changed = lease_exec(c->q, c->values, c->nulls);
	if (c->changed > 0 && c->result != NULL)
		*c->result = lease_result_int64(1);
	if (c->changed > 0 && SPI_tuptable->tupdesc->natts >= 2 &&
		SPI_gettypeid(SPI_tuptable->tupdesc, 2) == TIDOID)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);

		if (!isnull)
		{
			ItemPointerCopy((ItemPointer) DatumGetPointer(d), &changed_tid);
			changed_has_tid = true;
		}
	}
	return c->changed > 0;
}

/*
 * lease_changed_tid -- the ctid of the row version the last lease_exec_change
 * wrote, when its statement returns it second; false if it does not
 */
bool
lease_changed_tid(ItemPointer tid)
{
	if (changed_has_tid)
		ItemPointerCopy(&changed_tid, tid);
	return changed_has_tid;
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
	SpiChange	c = {q, values, nulls, result, 0};
	bool		was_locked;

	if (!spi_in_subxact(spi_change, &c, locked != NULL, &was_locked))
		c.changed = 0;
	if (locked != NULL)
		*locked = was_locked;
	return c.changed;
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
	return spi_in_subxact(fn, arg, true, locked);
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
