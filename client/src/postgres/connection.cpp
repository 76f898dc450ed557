// connection.cpp -- every libpqxx call of the client.
//
// Each function runs one SQL API call (one round trip, in a nontransaction)
// or one transaction, and turns every exception into an Error: SQLSTATEs via
// errc_from_sqlstate, a broken connection into Errc::unavailable (and the Db
// is marked unusable, so the pool drops it), anything else into internal.
#include <libpq-fe.h>
#include <pqxx/pqxx>

#include <memory>
#include <optional>
#include <string>

#include "postgres/db.hpp"
#include "postgres/watchdog.hpp"
#include "detail/provider.hpp"
#include "pglease/version.hpp"

namespace pglease::detail {

class Db {
public:
	std::unique_ptr<pqxx::connection> conn;
	bool broken = false;
	// the installed extension has renew and release naming the holder
	// (0.5.0 on), read once, when the connection opened
	bool holder_calls = false;
};

void
DbDeleter::operator()(Db *db) const noexcept
{
	delete db; // ~connection closes the session and never throws
}

namespace {

// interval_ms -- a duration as an interval literal.  A wait longer than a
// century (milliseconds::max(): wait as long as it takes) is sent as one
// century, which PostgreSQL's interval holds; TTLs never get there (max_ttl).
std::string
interval_ms(milliseconds d)
{
	constexpr milliseconds century{100LL * 36525 * 24 * 3600 * 1000};
	return std::to_string(std::min(d, century).count()) + " milliseconds";
}

// timeout_ms -- a statement_timeout setting: at least 1 ms; 0 (none) beyond
// what the setting holds (INT_MAX ms, 24.8 days: a wait that long is bounded
// by its own wait argument, not by a statement timeout)
std::string
timeout_ms(milliseconds d)
{
	if (d.count() > 2147483647LL)
		return "0";
	return std::to_string(std::max<long long>(1, d.count()));
}

// sqlstate_of -- libpqxx 6 throws some classes without their SQLSTATE
// (insufficient_privilege has none): fill it in from the class.
std::string
sqlstate_of(const pqxx::sql_error &e)
{
	if (!e.sqlstate().empty())
		return e.sqlstate();
	if (dynamic_cast<const pqxx::insufficient_privilege *>(&e))
		return "42501";
	return {};
}

// ServerSilent -- a call outlived statement_timeout + db_answer_margin
struct ServerSilent : std::runtime_error {
	explicit ServerSilent(milliseconds limit)
	    : std::runtime_error("the server did not answer within " + std::to_string(limit.count()) +
	                         " ms (frozen or cut off): the connection was closed")
	{
	}
};

// watched -- run exec() on conn under a CallDeadline of timeout +
// db_answer_margin; a call cut off by it throws ServerSilent, except a
// COMMIT cut off: its outcome is unknown, and pqxx says so (in_doubt_error)
template <class Exec>
auto
watched(pqxx::connection_base &conn, milliseconds timeout, Exec &&exec)
{
	milliseconds limit = saturating_add(timeout, db_answer_margin);
	CallDeadline deadline{conn.sock(), limit};
	try {
		return exec();
	} catch (const pqxx::in_doubt_error &) {
		throw;
	} catch (const std::exception &) {
		if (deadline.fired())
			throw ServerSilent{limit};
		throw;
	}
}

template <class Exec>
auto
watched(pqxx::transaction_base &tx, milliseconds timeout, Exec &&exec)
{
	return watched(tx.conn(), timeout, std::forward<Exec>(exec));
}

// The extension version from which lease.renew and lease.release take the
// holder whose grant they may change (db_renew, db_release)
constexpr std::string_view holder_calls_since = "0.5.0";

// install_hint -- what to run when a SQLSTATE says the extension's schema
// (3F000), a table (42P01) or a function (42883) is missing; db_connect has
// already refused an installed extension older than this client works with,
// so a missing function means one dropped or updated since: both commands
// named
std::string
install_hint(const std::string &state)
{
	if (state == "3F000")
		return ": pg_lease is not installed in this database: run CREATE EXTENSION pg_lease "
		       "(as a superuser)";
	if (state == "42P01" || state == "42883")
		return ": pg_lease is not installed in this database, or is older than this client (" +
		       std::string{extension_version} +
		       "): run CREATE EXTENSION pg_lease, or ALTER EXTENSION pg_lease UPDATE";
	return {};
}

// Run body(); map what it throws.
template <class T, class Body>
Result<T>
guarded(Db *db, Body &&body) noexcept
{
	try {
		return body();
	} catch (const ServerSilent &e) {
		if (db)
			db->broken = true;
		return Error{Errc::unavailable, "08006", e.what()};
	} catch (const pqxx::broken_connection &e) {
		if (db)
			db->broken = true;
		return Error{Errc::unavailable, "08006", e.what()};
	} catch (const pqxx::in_doubt_error &e) {
		if (db)
			db->broken = true;
		return Error{Errc::unavailable, "08007", std::string{"transaction outcome unknown: "} + e.what()};
	} catch (const pqxx::transaction_rollback &e) {
		// not an sql_error in libpqxx 6, and without SQLSTATE: keep it
		// retryable (is_retryable looks for class 40)
		std::string state = dynamic_cast<const pqxx::deadlock_detected *>(&e)              ? "40P01"
		                    : dynamic_cast<const pqxx::statement_completion_unknown *>(&e) ? "40003"
		                    : dynamic_cast<const pqxx::serialization_failure *>(&e)        ? "40001"
		                                                                                   : "40000";
		return Error{errc_from_sqlstate(state), state, e.what()};
	} catch (const pqxx::sql_error &e) {
		if (db && (!db->conn || !db->conn->is_open()))
			db->broken = true;
		std::string msg = e.what();
		while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' '))
			msg.pop_back();
		std::string state = sqlstate_of(e);
		// a terminated session reports 57P01 and then is gone
		if (state.rfind("57P", 0) == 0 || state.rfind("08", 0) == 0) {
			if (db)
				db->broken = true;
		}
		return Error{errc_from_sqlstate(state), state, msg + install_hint(state)};
	} catch (const std::exception &e) {
		if (db && db->conn && !db->conn->is_open())
			db->broken = true;
		return Error{Errc::internal, "", e.what()};
	} catch (...) {
		return Error{Errc::internal, "", "unknown exception"};
	}
}

// bounded -- one statement under its own statement_timeout.  SET LOCAL in
// the same simple-query message: one round trip, and nothing outlives the
// call (a session SET would leak to other clients through a transaction
// pooler, and miss the backend the next statement runs on).
pqxx::row
bounded(pqxx::nontransaction &tx, milliseconds timeout, const std::string &call)
{
	pqxx::result r = watched(tx, timeout, [&] {
		return tx.exec("SET LOCAL statement_timeout = " + timeout_ms(timeout) + "; SELECT " + call);
	});
	return r.at(0);
}

// set_local_timeout -- statement_timeout for the rest of a transaction
void
set_local_timeout(pqxx::transaction_base &tx, milliseconds timeout)
{
	tx.exec("SET LOCAL statement_timeout = " + timeout_ms(timeout));
}

// quoted -- a conninfo value in single quotes, backslash-escaped
std::string
quoted(const char *value)
{
	std::string out = "'";
	for (const char *c = value; *c; c++) {
		if (*c == '\'' || *c == '\\')
			out += '\\';
		out += *c;
	}
	return out + "'";
}

// refused_tls -- a TLS handshake that cannot succeed by trying again
// (libpq's own texts): the server's certificate refused by sslmode=verify-ca
// or verify-full (an unknown CA, expired, another host's name), our client
// certificate refused by the server, or a server without TLS when sslmode
// requires it, are Errc::permission; TLS material the DSN names that libpq
// cannot read (sslrootcert=, sslcert=, sslkey=) is invalid_argument
std::optional<Error>
refused_tls(const std::string &msg)
{
	auto has = [&](const char *text) { return msg.find(text) != std::string::npos; };
	if (has("certificate verify failed") || has("does not match host name") ||
	    has("could not get server's host name from server certificate"))
		return Error{Errc::permission, "",
		             msg + " (the server's TLS certificate was refused: sslrootcert= must name the CA that "
		                   "signed it, and the host of the DSN must be a name the certificate carries)"};
	if (has("alert unknown ca") || has("alert bad certificate") || has("alert certificate required") ||
	    has("alert certificate expired") || has("alert certificate revoked"))
		return Error{Errc::permission, "", msg + " (the server refused our TLS client certificate)"};
	if (has("server does not support SSL"))
		return Error{Errc::permission, "", msg + " (the server does not speak TLS, and sslmode requires it)"};
	if (has("root certificate file") || has("certificate file \"") || has("private key file \"") ||
	    has("certificate revocation list"))
		return Error{Errc::invalid_argument, "", msg};
	return std::nullopt;
}

// refused_connection -- a connection the server refused for good, told by
// the server's message (libpq gives no SQLSTATE for a failed connection;
// these are the server's own texts, in English unless lc_messages says
// otherwise): authentication (28P01, 28000), a missing database (3D000), a
// TLS handshake refused for good (refused_tls) and an option value libpq
// refuses are final, anything else may pass (unavailable)
Error
refused_connection(const std::string &message, const std::string &conninfo)
{
	std::string msg = redact(message, conninfo);
	while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' '))
		msg.pop_back();
	auto has = [&](const char *text) { return msg.find(text) != std::string::npos; };
	if (has("password authentication failed") || has("authentication failed for user") ||
	    has("no password supplied"))
		return Error{Errc::permission, "28P01", msg};
	if (has("no pg_hba.conf entry") || has("pg_hba.conf rejects connection") ||
	    (has("role \"") && has("\" does not exist")))
		return Error{Errc::permission, "28000", msg};
	if (auto tls = refused_tls(msg))
		return *tls;
	if (has("database \"") && has("\" does not exist"))
		return Error{Errc::invalid_argument, "3D000", msg};
	// libpq checks option values (port, sslmode, ...) only as it connects
	if (msg.rfind("invalid ", 0) == 0)
		return Error{Errc::invalid_argument, "", msg};
	return Error{Errc::unavailable, "08006", msg};
}

} // namespace

Result<std::string>
postgres_conninfo(std::string_view dsn, milliseconds connect_timeout) noexcept
{
	try {
		std::string text{dsn};
		char *err = nullptr;
		std::unique_ptr<PQconninfoOption, void (*)(PQconninfoOption *)> opts{
		    PQconninfoParse(text.c_str(), &err), PQconninfoFree};
		if (!opts) {
			std::string why = err ? err : "out of memory";
			PQfreemem(err);
			while (!why.empty() && (why.back() == '\n' || why.back() == ' '))
				why.pop_back();
			return Error{Errc::invalid_argument, "",
			             "invalid PostgreSQL connection string: " + redact(why, dsn)};
		}
		// rebuilt as key=value: libpq reads URLs and key=value strings
		// alike, and connect_timeout is added to either form
		std::string out;
		bool has_timeout = false;
		for (const PQconninfoOption *o = opts.get(); o->keyword; o++) {
			if (!o->val)
				continue;
			has_timeout = has_timeout || std::string_view{o->keyword} == "connect_timeout";
			out += std::string{out.empty() ? "" : " "} + o->keyword + "=" + quoted(o->val);
		}
		if (!has_timeout)
			out += std::string{out.empty() ? "" : " "} + "connect_timeout=" +
			       std::to_string(std::max<long long>(1, (connect_timeout.count() + 999) / 1000));
		return out;
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

Result<DbPtr>
db_connect(const std::string &conninfo, milliseconds statement_timeout) noexcept
{
	return guarded<DbPtr>(nullptr, [&]() -> Result<DbPtr> {
		DbPtr db{new Db};
		try {
			db->conn = std::make_unique<pqxx::connection>(conninfo);
		} catch (const pqxx::broken_connection &e) {
			return refused_connection(e.what(), conninfo);
		}
		// once per connection: an extension older than extension_minimum_version
		// lacks what this client calls, and one older than 0.5.0 renew and
		// release naming the holder.  No row: not installed, which the calls
		// themselves report (3F000, 42883).
		pqxx::nontransaction tx{*db->conn};
		pqxx::result r = watched(tx, statement_timeout, [&] {
			return tx.exec("SET LOCAL statement_timeout = " + timeout_ms(statement_timeout) +
			               "; SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'pg_lease'");
		});
		if (!r.empty() && compare_versions(r[0][0].c_str(), extension_minimum_version) < 0)
			return Error{Errc::not_installed, "",
			             "pg_lease " + std::string{r[0][0].c_str()} +
			                 " is installed in this database, but this client needs " +
			                 std::string{extension_minimum_version} +
			                 " or newer: run ALTER EXTENSION pg_lease UPDATE (as its owner)"};
		db->holder_calls = !r.empty() && compare_versions(r[0][0].c_str(), holder_calls_since) >= 0;
		return db;
	});
}

bool
db_usable(const Db &db) noexcept
{
	return !db.broken && db.conn && db.conn->is_open();
}

int
db_backend_pid(const Db &db) noexcept
{
	return db.conn ? db.conn->backendpid() : 0;
}

namespace {

// value_literal -- an election's value as SQL: NULL when empty ("none")
std::string
value_literal(pqxx::transaction_base &tx, std::string_view value)
{
	return value.empty() ? std::string{"NULL::pg_catalog.text"}
	                     : tx.quote(std::string{value}) + "::pg_catalog.text";
}

} // namespace

Result<std::optional<std::int64_t>>
db_acquire(Db &db, std::string_view resource, milliseconds ttl, milliseconds wait, const std::string &holder,
           bool session_bound, milliseconds statement_timeout, const std::string *value, Mode mode,
           std::uint32_t limit) noexcept
{
	return guarded<std::optional<std::int64_t>>(&db, [&]() -> Result<std::optional<std::int64_t>> {
		pqxx::nontransaction tx{*db.conn};
		// a permit names its semaphore's limit third; a reader and a lock (or
		// a campaign) have the same arguments
		std::string call = limit > 0              ? "lease.acquire_permit("
		                   : mode == Mode::shared ? "lease.acquire_shared("
		                                          : "lease.acquire(";
		call += tx.quote(std::string{resource}) + ", " + tx.quote(interval_ms(ttl)) + "::interval, ";
		if (limit > 0)
			call += std::to_string(limit) + "::pg_catalog.int4, ";
		call += tx.quote(interval_ms(wait)) + "::interval, " + tx.quote(holder) + ", " +
		        (session_bound ? "true" : "false") +
		        (value ? ", " + value_literal(tx, *value) : std::string{}) + ")";
		pqxx::row r = bounded(tx, statement_timeout, call);
		if (r[0].is_null())
			return std::optional<std::int64_t>{};
		return std::optional<std::int64_t>{r[0].as<std::int64_t>()};
	});
}

namespace {

// holder_matched -- CALL (lease.renew or lease.release of (resource, token))
// run only if the current grant (resource, token) is holder's, else false,
// for an extension before 0.5.0 (db_grant_call names the holder in CALL
// itself from 0.5.0 on).  One statement, so no read-then-act race: a token
// is granted once, to one holder (a re-acquire by the same holder keeps it),
// so the view's row for (resource, token) names the holder of exactly the
// grant CALL acts on, and CALL itself still checks the grant is current.
// lease.leases, not lease.grants: every role may read the view, only the
// extension the table.
std::string
holder_matched(pqxx::transaction_base &tx, std::string_view resource, std::int64_t token,
               std::string_view holder, const std::string &call)
{
	// operators schema-qualified, as the extension's own statements: the
	// session's search_path cannot change what the match means
	return "COALESCE((SELECT " + call + " FROM lease.leases l WHERE l.resource OPERATOR(pg_catalog.=) " +
	       tx.quote(std::string{resource}) + " AND l.token OPERATOR(pg_catalog.=) " + std::to_string(token) +
	       "::pg_catalog.int8 AND l.holder OPERATOR(pg_catalog.=) " + tx.quote(std::string{holder}) +
	       "), false)";
}

// grant_call -- the statement of lease.renew (ttl non-null) or lease.release
// of (resource, token): with a holder, only that holder's grant -- the
// extension compares it in the statement that renews or releases (0.5.0
// on: no read of lease.leases, whose index scan pruned the table's page
// again), else holder_matched
std::string
grant_call(const Db &db, pqxx::transaction_base &tx, std::string_view resource, std::int64_t token,
           const milliseconds *ttl, std::string_view holder)
{
	std::string call = std::string{ttl ? "lease.renew(" : "lease.release("} + tx.quote(std::string{resource}) +
	                   ", " + std::to_string(token) +
	                   (ttl ? ", " + tx.quote(interval_ms(*ttl)) + "::interval" : std::string{});
	if (holder.empty())
		return call + ")";
	if (db.holder_calls)
		return call + ", " + tx.quote(std::string{holder}) + "::pg_catalog.text)";
	return holder_matched(tx, resource, token, holder, call + ")");
}

// grant_result -- a renew or release's answer; a function missing (42883)
// though the version read at connect had it means the extension was
// re-created older since: the connection is dropped, and the next one reads
// the version again
Result<bool>
grant_result(Db &db, Result<bool> r) noexcept
{
	if (!r && r.error().sqlstate == "42883" && db.holder_calls)
		db.broken = true;
	return r;
}

} // namespace

Result<bool>
db_renew(Db &db, std::string_view resource, std::int64_t token, milliseconds ttl, milliseconds timeout,
         std::string_view holder) noexcept
{
	return grant_result(db, guarded<bool>(&db, [&]() -> Result<bool> {
		pqxx::nontransaction tx{*db.conn};
		pqxx::row r = bounded(tx, timeout, grant_call(db, tx, resource, token, &ttl, holder));
		return r[0].as<bool>();
	}));
}

Result<bool>
db_release(Db &db, std::string_view resource, std::int64_t token, milliseconds timeout,
           std::string_view holder) noexcept
{
	return grant_result(db, guarded<bool>(&db, [&]() -> Result<bool> {
		pqxx::nontransaction tx{*db.conn};
		pqxx::row r = bounded(tx, timeout, grant_call(db, tx, resource, token, nullptr, holder));
		return r[0].as<bool>();
	}));
}

Result<bool>
db_proclaim(Db &db, std::string_view election, std::int64_t term, std::string_view value,
            milliseconds timeout) noexcept
{
	return guarded<bool>(&db, [&]() -> Result<bool> {
		pqxx::nontransaction tx{*db.conn};
		pqxx::row r = bounded(tx, timeout,
		                      "lease.proclaim(" + tx.quote(std::string{election}) + ", " +
		                          std::to_string(term) + ", " + value_literal(tx, value) + ")");
		return r[0].as<bool>();
	});
}

namespace {

// leader_of -- a row of lease.leader / lease.observe, as selected by leader_columns
constexpr const char *leader_columns =
    "value, term, (extract(epoch FROM since) * 1000000)::pg_catalog.int8 FROM ";

PgLeader
leader_of(const pqxx::row &r)
{
	PgLeader l;
	l.found = !r[1].is_null();
	if (!r[0].is_null())
		l.value = r[0].as<std::string>();
	if (l.found) {
		l.term = r[1].as<std::int64_t>();
		l.since_us = r[2].as<std::int64_t>();
	}
	return l;
}

} // namespace

Result<PgLeader>
db_leader(Db &db, std::string_view election, milliseconds timeout) noexcept
{
	return guarded<PgLeader>(&db, [&]() -> Result<PgLeader> {
		pqxx::nontransaction tx{*db.conn};
		return leader_of(
		    bounded(tx, timeout,
		            std::string{leader_columns} + "lease.leader(" + tx.quote(std::string{election}) + ")"));
	});
}

Result<PgLeader>
db_observe(Db &db, std::string_view election, std::int64_t after_term,
           const std::optional<std::string> &after_value, milliseconds wait, milliseconds timeout) noexcept
{
	return guarded<PgLeader>(&db, [&]() -> Result<PgLeader> {
		pqxx::nontransaction tx{*db.conn};
		std::string after =
		    after_value ? tx.quote(*after_value) + "::pg_catalog.text" : "NULL::pg_catalog.text";
		return leader_of(bounded(tx, timeout,
		                         std::string{leader_columns} + "lease.observe(" +
		                             tx.quote(std::string{election}) + ", " + std::to_string(after_term) +
		                             ", " + after + ", " + tx.quote(interval_ms(wait)) + "::interval)"));
	});
}

Result<void>
db_fenced(Db &db, std::string_view resource, std::int64_t token, milliseconds timeout,
          const std::function<void(pqxx::work &)> &fn) noexcept
{
	return guarded<void>(&db, [&]() -> Result<void> {
		// BEGIN, the fence and COMMIT are the client's own statements, each
		// bounded as every other call (a frozen server or a backend stuck in
		// the server cannot keep the caller forever); fn's are bounded by the
		// statement_timeout set here
		std::optional<pqxx::work> tx;
		watched(*db.conn, timeout, [&] {
			tx.emplace(*db.conn);
			set_local_timeout(*tx, timeout);
			tx->exec_params("SELECT lease.fence($1, $2)", std::string{resource}, token);
		});
		fn(*tx);
		watched(*db.conn, timeout, [&] { tx->commit(); });
		return {};
	});
}

Result<void>
db_advisory_lock(pqxx::work &tx, std::string_view resource, milliseconds wait) noexcept
{
	return guarded<void>(nullptr, [&]() -> Result<void> {
		// lock_timeout bounds the wait; SET LOCAL ends with the transaction
		tx.exec("SET LOCAL lock_timeout = " + timeout_ms(wait));
		// namespaced key, so pg_lease's advisory locks never collide with others'
		tx.exec_params("SELECT pg_advisory_xact_lock(hashtextextended($1 || $2, 0))",
		               std::string{advisory_key_prefix}, std::string{resource});
		return {};
	});
}

Result<void>
db_with_advisory(Db &db, std::string_view resource, milliseconds wait, milliseconds timeout,
                 const std::function<void(pqxx::work &)> &fn) noexcept
{
	return guarded<void>(&db, [&]() -> Result<void> {
		std::optional<pqxx::work> tx;
		Result<void> locked = watched(*db.conn, timeout, [&] {
			tx.emplace(*db.conn);
			set_local_timeout(*tx, timeout);
			return db_advisory_lock(*tx, resource, wait);
		});
		if (!locked)
			return locked.error();
		fn(*tx);
		watched(*db.conn, timeout, [&] { tx->commit(); });
		return {};
	});
}

Result<std::vector<LeaseInfo>>
db_status(Db &db, milliseconds timeout) noexcept
{
	return guarded<std::vector<LeaseInfo>>(&db, [&]() -> Result<std::vector<LeaseInfo>> {
		pqxx::nontransaction tx{*db.conn};
		// one simple-query message: SET LOCAL lasts for this statement only
		pqxx::result res = watched(tx, timeout, [&] {
			return tx.exec("SET LOCAL statement_timeout = " + timeout_ms(timeout) +
			               "; SELECT resource, holder, token, owner::text,"
			               "       (extract(epoch FROM remaining) * 1000)::bigint, session_bound, waiters,"
			               "       mode, permits"
			               "  FROM lease.leases ORDER BY resource, token");
		});
		std::vector<LeaseInfo> out;
		for (const auto &row : res) {
			LeaseInfo info;
			info.resource = row[0].as<std::string>();
			info.holder = row[1].as<std::string>();
			info.token = row[2].as<std::int64_t>();
			info.owner = row[3].as<std::string>();
			info.remaining = milliseconds{row[4].as<long long>()};
			info.session_bound = row[5].as<bool>();
			if (!row[6].is_null())
				info.waiters = row[6].as<int>();
			info.mode = row[7].as<std::string>() == "shared" ? Mode::shared : Mode::exclusive;
			info.limit = row[8].as<std::uint32_t>();
			out.push_back(std::move(info));
		}
		return out;
	});
}

} // namespace pglease::detail
