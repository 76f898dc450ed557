// postgres/pool.cpp -- the PostgreSQL provider's connection pool (pool.hpp):
// connection trouble is Errc::unavailable, and the next connection attempt
// waits the providers' backoff (detail/backoff.hpp), the rule of every
// provider.
#include "postgres/pool.hpp"

namespace pglease::detail {

PgPool::PgPool(std::string_view dsn, const ClientOptions &options)
    : conninfo_(postgres_conninfo(dsn, options.connect_timeout)), options_(options),
      backoff_(options.backoff_initial, options.backoff_max)
{
}

Result<DbPtr>
PgPool::borrow() noexcept
{
	if (!conninfo_) // a malformed DSN: final, nothing to retry
		return conninfo_.error();
	{
		std::lock_guard<std::mutex> lk(mu_);
		while (!idle_.empty()) {
			DbPtr db = std::move(idle_.back());
			idle_.pop_back();
			if (db_usable(*db))
				return db;
		}
		auto now = Clock::now();
		if (now < next_connect_) {
			auto ms = std::chrono::duration_cast<milliseconds>(next_connect_ - now).count();
			return Error{Errc::unavailable, last_error_.sqlstate,
			             "server unreachable, next connection attempt in " + std::to_string(ms) +
			                 " ms (last error: " + last_error_.message + ")"};
		}
	}
	Result<DbPtr> db = db_connect(*conninfo_, options_.statement_grace);
	std::lock_guard<std::mutex> lk(mu_);
	if (db || db.error().code != Errc::unavailable) {
		// the server answered (a refused extension version is final, not
		// a reason to back off)
		backoff_.reset();
		next_connect_ = Clock::time_point{};
		return db;
	}
	next_connect_ = Clock::now() + backoff_.next();
	last_error_ = db.error();
	return Error{Errc::unavailable, db.error().sqlstate, db.error().message};
}

void
PgPool::give_back(DbPtr db) noexcept
{
	if (!db || !db_usable(*db))
		return;
	std::lock_guard<std::mutex> lk(mu_);
	if (idle_.size() < options_.max_idle_connections)
		idle_.push_back(std::move(db));
}

} // namespace pglease::detail
