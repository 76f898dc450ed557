/*-------------------------------------------------------------------------
 *
 * lease_queries.c
 *		The text of every statement on lease.grants and lease.resources,
 *		for each schema a database may still have.
 *
 * This file owns the statement texts; lease_spi.c prepares and runs them
 * (as the table's owner, the search path pinned to pg_catalog) and says
 * which schema a database has.  What the statements guarantee is in
 * lease_spi.c's banner: a row changes hands only by an UPDATE whose WHERE
 * requires the grant to be over, tokens are drawn only while a row changes,
 * fence takes FOR SHARE.  Everything is schema-qualified, operators
 * included.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"

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
 * lease_try.c's acquire_grant_params fills); the caller appends its WHERE.
 */
#define LEASE_NEW_GRANT \
	"UPDATE lease.grants SET token = " LEASE_NEXT_TOKEN "," \
	"       expires_at = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $2," \
	"       granted_at = pg_catalog.clock_timestamp()," \
	"       renewed_at = pg_catalog.clock_timestamp()," \
	"       owner = $3, released = false, backend_pid = $5, backend_start = $6," \
	"       holder = $4"
#define LEASE_SET_VALUE ", value = $7"

/* Renew ($3 ttl) and release of (resource $1, token $2), by its owner ($4 or $3) or a superuser */
#define LEASE_RENEW \
	"UPDATE lease.grants" \
	"   SET expires_at = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $3," \
	"       renewed_at = pg_catalog.clock_timestamp()" \
	" WHERE resource OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2" \
	"   AND " LEASE_CURRENT \
	"   AND (owner OPERATOR(pg_catalog.=) $4 OR $5)"
#define LEASE_RELEASE \
	"UPDATE lease.grants SET expires_at = pg_catalog.clock_timestamp(), released = true" \
	" WHERE resource OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2" \
	"   AND " LEASE_CURRENT \
	"   AND (owner OPERATOR(pg_catalog.=) $3 OR $4)"

/* The parameters of a new grant: see LEASE_NEW_GRANT. */
#define LEASE_GRANT_ARGTYPES \
	TEXTOID, INTERVALOID, OIDOID, TEXTOID, INT4OID, TIMESTAMPTZOID, TEXTOID

/*
 * Statement texts, for the schema of 0.4.0 on (one row per grant).
 * Everything is schema-qualified, operators included, and they are prepared
 * and run with the search path pinned to pg_catalog.
 */
const LeaseQueryDef lease_queries[LEASE_NUM_QUERIES] = {
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
		" RETURNING token, ctid",
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
		LEASE_RENEW " RETURNING token, ctid",
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
		LEASE_RELEASE " RETURNING token",
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
	/*
	 * Renew and release of the row version this backend last wrote for the
	 * grant (lease_where.c), reached by its ctid ($6, $5): a TID scan, which
	 * does not prune the page as an index scan does.  Every condition of
	 * Q_RENEW and Q_RELEASE is there too, and a row version changed since
	 * is re-checked on its newest version as theirs is, so these change
	 * exactly what those would, or nothing (a version no longer visible,
	 * the ctid now another row's): then the caller runs Q_RENEW or
	 * Q_RELEASE.  Only where the page is pruned changes: at the next
	 * acquire's visit, once for the pair, instead of at every statement.
	 */
	[Q_RENEW_AT] = {
		LEASE_RENEW " AND ctid OPERATOR(pg_catalog.=) $6 RETURNING token, ctid",
		6, {TEXTOID, INT8OID, INTERVALOID, OIDOID, BOOLOID, TIDOID}
	},
	[Q_RELEASE_AT] = {
		LEASE_RELEASE " AND ctid OPERATOR(pg_catalog.=) $5 RETURNING token",
		5, {TEXTOID, INT8OID, OIDOID, BOOLOID, TIDOID}
	},
	/*
	 * The same, of only the grant a holder ($6, $5) took (since 0.5.0): the
	 * holder is compared in the statement that renews or releases, on the
	 * version it changes, so a caller that names its grant by token and
	 * holder needs no read of lease.leases first (an index scan, which pruned
	 * the page as Q_RENEW_AT and Q_RELEASE_AT avoid).  A holder is stored
	 * when the grant is made and changes only with its token (a takeover).
	 */
	[Q_RENEW_HOLDER] = {
		LEASE_RENEW " AND holder OPERATOR(pg_catalog.=) $6 RETURNING token, ctid",
		6, {TEXTOID, INT8OID, INTERVALOID, OIDOID, BOOLOID, TEXTOID}
	},
	[Q_RELEASE_HOLDER] = {
		LEASE_RELEASE " AND holder OPERATOR(pg_catalog.=) $5 RETURNING token",
		5, {TEXTOID, INT8OID, OIDOID, BOOLOID, TEXTOID}
	},
	[Q_RENEW_HOLDER_AT] = {
		LEASE_RENEW " AND holder OPERATOR(pg_catalog.=) $6 AND ctid OPERATOR(pg_catalog.=) $7"
		" RETURNING token, ctid",
		7, {TEXTOID, INT8OID, INTERVALOID, OIDOID, BOOLOID, TEXTOID, TIDOID}
	},
	[Q_RELEASE_HOLDER_AT] = {
		LEASE_RELEASE " AND holder OPERATOR(pg_catalog.=) $5 AND ctid OPERATOR(pg_catalog.=) $6"
		" RETURNING token",
		6, {TEXTOID, INT8OID, OIDOID, BOOLOID, TEXTOID, TIDOID}
	},
};

/*
 * The statements that differ on a schema from before 0.4.0 (one row per
 * resource, keyed by it): this library may run against a database not yet
 * updated with ALTER EXTENSION pg_lease UPDATE, where only the old SQL
 * functions exist, all of them exclusive.  lease_try.c runs the
 * single-row algorithm there.
 */
const LeaseQueryDef lease_queries_0_3[LEASE_NUM_QUERIES] = {
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
const LeaseQueryDef lease_queries_pre_0_3[LEASE_NUM_QUERIES] = {
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
