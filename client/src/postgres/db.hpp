// postgres/db.hpp -- the client's only window on the database.  Every libpqxx
// call lives in connection.cpp behind these functions; none of them throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <pqxx/transaction>

#include "pglease/status.hpp"

namespace pglease::detail {

class Db; // one server connection

struct DbDeleter {
	void operator()(Db *db) const noexcept;
};
using DbPtr = std::unique_ptr<Db, DbDeleter>;

using std::chrono::milliseconds;

/// How long past its statement_timeout a call waits for the server's own
/// error before the client closes the connection (watchdog.hpp): the server
/// is then frozen or cut off.  A call's bound is its statement_timeout plus
/// this.
inline constexpr milliseconds db_answer_margin{500};

/// The conninfo to connect with: DSN (a URL or key=value string) checked by
/// libpq's parser (Errc::invalid_argument, password masked, when it refuses),
/// with connect_timeout added unless DSN has one.
Result<std::string> postgres_conninfo(std::string_view dsn, milliseconds connect_timeout) noexcept;
/// Connect with a conninfo of postgres_conninfo, and refuse
/// (Errc::not_installed) a database whose pg_lease is older than
/// extension_minimum_version (pglease/version.hpp); the version read is kept
/// with the connection (db_renew, db_release).  A refused login is
/// Errc::permission, a missing database Errc::invalid_argument.
Result<DbPtr> db_connect(const std::string &conninfo, milliseconds statement_timeout) noexcept;
/// False once the connection broke; the pool drops such connections.
[[nodiscard]] bool db_usable(const Db &db) noexcept;
[[nodiscard]] int db_backend_pid(const Db &db) noexcept;

/// lease.acquire: the token, or nullopt when not granted within wait.  With
/// value non-null, a campaign: the six-argument lease.acquire storing it
/// (an empty value is stored as NULL, "none").  Mode::shared is
/// lease.acquire_shared, a limit > 0 lease.acquire_permit (LS003, a mode or
/// limit the resource's grants disagree with, is Errc::invalid_argument).
Result<std::optional<std::int64_t>> db_acquire(Db &db, std::string_view resource, milliseconds ttl,
                                               milliseconds wait, const std::string &holder,
                                               bool session_bound, milliseconds statement_timeout,
                                               const std::string *value = nullptr,
                                               Mode mode = Mode::exclusive, std::uint32_t limit = 0) noexcept;

/// An election as lease.leader / lease.observe return it.  value is the
/// column as stored (NULL: none), so an observe can be re-called from
/// exactly what the server showed.
struct PgLeader {
	bool found = false;
	std::optional<std::string> value;
	std::int64_t term = 0;
	std::int64_t since_us = 0; // granted_at, microseconds since the Unix epoch
};
/// lease.proclaim (an empty value is stored as NULL): false if (election,
/// term) is not the current grant.
Result<bool> db_proclaim(Db &db, std::string_view election, std::int64_t term, std::string_view value,
                         milliseconds timeout) noexcept;
Result<PgLeader> db_leader(Db &db, std::string_view election, milliseconds timeout) noexcept;
/// lease.observe from (after_term, after_value), waiting at most wait in the
/// server, the statement bounded by timeout.
Result<PgLeader> db_observe(Db &db, std::string_view election, std::int64_t after_term,
                            const std::optional<std::string> &after_value, milliseconds wait,
                            milliseconds timeout) noexcept;
/// statement timeouts are per call (SET LOCAL): no session state, so the
/// client works through a transaction-mode pooler.  With a holder, the
/// grant is renewed or released only if that holder took it, in the same
/// statement (false otherwise): lease.renew/lease.release naming the holder
/// (pg_lease 0.5.0 on), or, before, called only for the lease.leases row of
/// (resource, token, holder).
Result<bool> db_renew(Db &db, std::string_view resource, std::int64_t token, milliseconds ttl,
                      milliseconds timeout, std::string_view holder = {}) noexcept;
Result<bool> db_release(Db &db, std::string_view resource, std::int64_t token, milliseconds timeout,
                        std::string_view holder = {}) noexcept;
/// The transactions of fenced/with_advisory run every statement (fn's too)
/// under statement_timeout = timeout (SET LOCAL: it ends with them).
Result<void> db_fenced(Db &db, std::string_view resource, std::int64_t token, milliseconds timeout,
                       const std::function<void(pqxx::work &)> &fn) noexcept;
Result<void> db_with_advisory(Db &db, std::string_view resource, milliseconds wait, milliseconds timeout,
                              const std::function<void(pqxx::work &)> &fn) noexcept;
Result<void> db_advisory_lock(pqxx::work &tx, std::string_view resource, milliseconds wait) noexcept;
Result<std::vector<LeaseInfo>> db_status(Db &db, milliseconds timeout) noexcept;

} // namespace pglease::detail
