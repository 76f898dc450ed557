// postgres/pool.hpp -- the PostgreSQL provider's connections: idle ones kept
// for reuse, and reconnect backoff while the server is unreachable.
//
// Locking: mu_ guards the idle connections and the backoff state; no lock is
// held across a database call.
#pragma once

#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "detail/backoff.hpp"
#include "detail/provider.hpp"
#include "postgres/db.hpp"

namespace pglease::detail {

class PgPool {
public:
	/// A malformed DSN is kept as the error every borrow() answers.
	PgPool(std::string_view dsn, const ClientOptions &options);

	[[nodiscard]] const ClientOptions &options() const noexcept { return options_; }

	/// An idle connection, or a new one unless the server is in backoff
	/// (Errc::unavailable at once, naming the last error).
	Result<DbPtr> borrow() noexcept;
	/// borrow() for a retry that must be over by a bound: a new connection
	/// only if opening it (connect_allowance_) ends by connect_by.  nullopt:
	/// no connection can be had by then (none idle; the backoff or the
	/// connect would pass connect_by), so a retry is pointless.  *opened
	/// says whether the connection is a new one.
	std::optional<Result<DbPtr>> borrow_by(Clock::time_point connect_by, bool *opened = nullptr) noexcept;
	/// Keep db for reuse, unless it broke or enough are idle.
	void give_back(DbPtr db) noexcept;

	/// Run fn(Db&) on a pooled connection and give it back.
	template <class T, class F> Result<T> with_db(F &&fn) noexcept
	{
		Result<DbPtr> db = borrow();
		if (!db)
			return db.error();
		Result<T> r = fn(**db);
		give_back(std::move(*db));
		return r;
	}

private:
	Result<std::string> conninfo_; // an error when libpq refused the DSN
	ClientOptions options_;
	// The longest a new connection takes to open on a server that does not
	// answer: libpq's connect_timeout (whole seconds, at least 2), then the
	// version check (statement_grace + its answer margin).  The DSN's own
	// connect_timeout, if it has one, is not read.
	milliseconds connect_allowance_;
	std::mutex mu_;
	std::vector<DbPtr> idle_;
	Clock::time_point next_connect_{};
	Backoff backoff_;
	Error last_error_;
};

} // namespace pglease::detail
