// postgres/pool.cpp -- the PostgreSQL provider's connection pool (pool.hpp):
// connection trouble is Errc::unavailable, and the next connection attempt
// waits the providers' backoff (detail/backoff.hpp), the rule of every
// provider.
#include "postgres/pool.hpp"

#include <algorithm>

namespace pglease::detail {

namespace {

// allowance -- connect_timeout as postgres_conninfo passes it to libpq (whole
// seconds, rounded up) and libpq uses it (at least 2 s), then the version
// check db_connect runs
milliseconds
allowance(const ClientOptions &options)
{
	auto seconds = std::max<long long>(2, (options.connect_timeout.count() + 999) / 1000);
	return saturating_add(saturating_add(milliseconds{seconds * 1000}, options.statement_grace),
	                      db_answer_margin);
}

// ends_by -- from + d is at most bound, without overflowing near the clock's ends
bool
ends_by(Clock::time_point from, milliseconds d, Clock::time_point bound)
{
	return from <= bound && std::chrono::duration_cast<milliseconds>(bound - from) >= d;
}

} // namespace

PgPool::PgPool(std::string_view dsn, const ClientOptions &options)
    : conninfo_(postgres_conninfo(dsn, options.connect_timeout)), options_(options),
      connect_allowance_(allowance(options)), backoff_(options.backoff_initial, options.backoff_max)
{
}

Result<DbPtr>
PgPool::borrow() noexcept
{
	return *borrow_by(Clock::time_point::max());
}

std::optional<Result<DbPtr>>
PgPool::borrow_by(Clock::time_point connect_by, bool *opened) noexcept
{
	if (opened)
		*opened = false;
	if (!conninfo_) // a malformed DSN: final, nothing to retry
		return Result<DbPtr>{conninfo_.error()};
	const bool unbounded = connect_by == Clock::time_point::max();
	{
		std::lock_guard<std::mutex> lk(mu_);
		while (!idle_.empty()) {
			DbPtr db = std::move(idle_.back());
			idle_.pop_back();
			if (db_usable(*db))
				return Result<DbPtr>{std::move(db)};
		}
		auto now = Clock::now();
		if (now < next_connect_) {
			if (!unbounded && !ends_by(next_connect_, connect_allowance_, connect_by))
				return std::nullopt;
			auto ms = std::chrono::duration_cast<milliseconds>(next_connect_ - now).count();
			return Result<DbPtr>{Error{Errc::unavailable, last_error_.sqlstate,
			                           "server unreachable, next connection attempt in " +
			                               std::to_string(ms) + " ms (last error: " + last_error_.message +
			                               ")"}};
		}
		if (!unbounded && !ends_by(now, connect_allowance_, connect_by))
			return std::nullopt;
	}
	Result<DbPtr> db = db_connect(*conninfo_, options_.statement_grace);
	std::lock_guard<std::mutex> lk(mu_);
	if (db || db.error().code != Errc::unavailable) {
		// the server answered (a refused extension version is final, not
		// a reason to back off)
		backoff_.reset();
		next_connect_ = Clock::time_point{};
		if (opened && db)
			*opened = true;
		return db;
	}
	next_connect_ = Clock::now() + backoff_.next();
	last_error_ = db.error();
	return Result<DbPtr>{Error{Errc::unavailable, db.error().sqlstate, db.error().message}};
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
