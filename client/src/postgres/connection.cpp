// connection.cpp -- every libpqxx call of the client.
//
// Each function runs one SQL API call (one round trip, in a nontransaction)
// or one transaction, and turns every exception into an Error: SQLSTATEs via
// errc_from_sqlstate, a broken connection into Errc::unavailable (and the Db
// is marked unusable, so the pool drops it), anything else into internal.
#include <pqxx/pqxx>

#include <string>

#include "postgres/db.hpp"
#include "pglease/version.hpp"

namespace pglease::detail {

class Db {
public:
	std::unique_ptr<pqxx::connection> conn;
	bool broken = false;
};

void
DbDeleter::operator()(Db *db) const noexcept
{
	delete db; // ~connection closes the session and never throws
}

namespace {

std::string
interval_ms(milliseconds d)
{
	return std::to_string(d.count()) + " milliseconds";
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

// Run body(); map what it throws.
template <class T, class Body>
Result<T>
guarded(Db *db, Body &&body) noexcept
{
	try {
		return body();
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
		return Error{errc_from_sqlstate(state), state, msg};
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
	pqxx::result r =
	    tx.exec("SET LOCAL statement_timeout = " + std::to_string(std::max<long long>(1, timeout.count())) +
	            "; SELECT " + call);
	return r.at(0);
}

// set_local_timeout -- statement_timeout for the rest of a transaction
void
set_local_timeout(pqxx::transaction_base &tx, milliseconds timeout)
{
	tx.exec("SET LOCAL statement_timeout = " + std::to_string(std::max<long long>(1, timeout.count())));
}

} // namespace

Result<DbPtr>
db_connect(const std::string &conninfo, milliseconds connect_timeout, milliseconds statement_timeout) noexcept
{
	return guarded<DbPtr>(nullptr, [&]() -> Result<DbPtr> {
		DbPtr db{new Db};
		// libpq takes the last value of a repeated keyword: the user's own wins
		std::string ci = "connect_timeout=" +
		                 std::to_string(std::max<long long>(1, (connect_timeout.count() + 999) / 1000)) +
		                 " " + conninfo;
		db->conn = std::make_unique<pqxx::connection>(ci);
		// once per connection: an older extension than the one this client
		// was built for may lack what it calls.  No row: not installed, which
		// the calls themselves report (3F000, 42883).
		pqxx::nontransaction tx{*db->conn};
		pqxx::result r =
		    tx.exec("SET LOCAL statement_timeout = " +
		            std::to_string(std::max<long long>(1, statement_timeout.count())) +
		            "; SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'pg_lease'");
		if (!r.empty() && compare_versions(r[0][0].c_str(), extension_version) < 0)
			return Error{Errc::not_installed, "",
			             "pg_lease " + std::string{r[0][0].c_str()} +
			                 " is installed in this database, but this client needs " +
			                 std::string{extension_version} +
			                 " or newer: run ALTER EXTENSION pg_lease UPDATE (as its owner)"};
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

Result<std::optional<std::int64_t>>
db_acquire(Db &db, std::string_view resource, milliseconds ttl, milliseconds wait, const std::string &holder,
           bool session_bound, milliseconds statement_timeout) noexcept
{
	return guarded<std::optional<std::int64_t>>(&db, [&]() -> Result<std::optional<std::int64_t>> {
		pqxx::nontransaction tx{*db.conn};
		pqxx::row r =
		    bounded(tx, statement_timeout,
		            "lease.acquire(" + tx.quote(std::string{resource}) + ", " + tx.quote(interval_ms(ttl)) +
		                "::interval, " + tx.quote(interval_ms(wait)) + "::interval, " + tx.quote(holder) +
		                ", " + (session_bound ? "true" : "false") + ")");
		if (r[0].is_null())
			return std::optional<std::int64_t>{};
		return std::optional<std::int64_t>{r[0].as<std::int64_t>()};
	});
}

Result<bool>
db_renew(Db &db, std::string_view resource, std::int64_t token, milliseconds ttl,
         milliseconds timeout) noexcept
{
	return guarded<bool>(&db, [&]() -> Result<bool> {
		pqxx::nontransaction tx{*db.conn};
		pqxx::row r = bounded(tx, timeout,
		                      "lease.renew(" + tx.quote(std::string{resource}) + ", " +
		                          std::to_string(token) + ", " + tx.quote(interval_ms(ttl)) + "::interval)");
		return r[0].as<bool>();
	});
}

Result<bool>
db_release(Db &db, std::string_view resource, std::int64_t token, milliseconds timeout) noexcept
{
	return guarded<bool>(&db, [&]() -> Result<bool> {
		pqxx::nontransaction tx{*db.conn};
		pqxx::row r =
		    bounded(tx, timeout,
		            "lease.release(" + tx.quote(std::string{resource}) + ", " + std::to_string(token) + ")");
		return r[0].as<bool>();
	});
}

Result<void>
db_fenced(Db &db, std::string_view resource, std::int64_t token, milliseconds timeout,
          const std::function<void(pqxx::work &)> &fn) noexcept
{
	return guarded<void>(&db, [&]() -> Result<void> {
		pqxx::work tx{*db.conn};
		set_local_timeout(tx, timeout);
		tx.exec_params("SELECT lease.fence($1, $2)", std::string{resource}, token);
		fn(tx);
		tx.commit();
		return {};
	});
}

Result<void>
db_advisory_lock(pqxx::work &tx, std::string_view resource, milliseconds wait) noexcept
{
	return guarded<void>(nullptr, [&]() -> Result<void> {
		// lock_timeout bounds the wait; SET LOCAL ends with the transaction
		tx.exec("SET LOCAL lock_timeout = " + std::to_string(std::max<long long>(1, wait.count())));
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
		pqxx::work tx{*db.conn};
		set_local_timeout(tx, timeout);
		Result<void> locked = db_advisory_lock(tx, resource, wait);
		if (!locked)
			return locked.error();
		fn(tx);
		tx.commit();
		return {};
	});
}

Result<std::vector<LeaseInfo>>
db_status(Db &db, milliseconds timeout) noexcept
{
	return guarded<std::vector<LeaseInfo>>(&db, [&]() -> Result<std::vector<LeaseInfo>> {
		pqxx::nontransaction tx{*db.conn};
		// one simple-query message: SET LOCAL lasts for this statement only
		pqxx::result res = tx.exec(
		    "SET LOCAL statement_timeout = " + std::to_string(std::max<long long>(1, timeout.count())) +
		    "; SELECT resource, holder, token, owner::text,"
		    "       (extract(epoch FROM remaining) * 1000)::bigint, session_bound, waiters"
		    "  FROM lease.leases ORDER BY resource");
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
			out.push_back(std::move(info));
		}
		return out;
	});
}

} // namespace pglease::detail
