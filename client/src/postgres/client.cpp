// postgres/client.cpp -- the PostgreSQL provider: pglease::Client, its
// connection pool with reconnect backoff, and its grants.
//
// The provider's recipe is the pg_lease extension's SQL API: lease.acquire
// waits in the server's FIFO queue, the token is the extension's token
// sequence (strictly increasing per resource, durable), renew and release
// act on the exact (resource, token).  What every provider shares (renewal
// thread, loss reporting, no-nested rule) is in lease.cpp.
//
// Locking: PgPool::mu_ guards the idle connections and backoff state; a
// PgGrant's pinned connection is used under its LeaseState::op_mu.  No lock
// is held across a database call except op_mu.
#include "pglease/client.hpp"

#include <algorithm>
#include <mutex>
#include <random>

#include "detail/provider.hpp"
#include "postgres/db.hpp"

namespace pglease {
namespace detail {

// PgPool -- idle connections, and backoff while the server is unreachable
class PgPool {
public:
	PgPool(std::string_view dsn, ClientOptions options)
	    : conninfo_(postgres_conninfo(dsn, options.connect_timeout)), options_(options),
	      backoff_(options.backoff_initial), rng_(std::random_device{}())
	{
	}

	const ClientOptions &options() const noexcept { return options_; }

	// borrow -- an idle connection, or a new one unless the server is in backoff
	Result<DbPtr> borrow() noexcept
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
			backoff_ = options_.backoff_initial;
			next_connect_ = Clock::time_point{};
			return db;
		}
		// exponential backoff with jitter: [backoff/2, backoff]
		std::uniform_int_distribution<long long> jitter(backoff_.count() / 2, backoff_.count());
		next_connect_ = Clock::now() + milliseconds{jitter(rng_)};
		backoff_ = std::min(backoff_ * 2, options_.backoff_max);
		last_error_ = db.error();
		return Error{Errc::unavailable, db.error().sqlstate, db.error().message};
	}

	// with_db -- run fn(Db&) on a pooled connection and give it back
	template <class T, class F> Result<T> with_db(F &&fn) noexcept
	{
		Result<DbPtr> db = borrow();
		if (!db)
			return db.error();
		Result<T> r = fn(**db);
		give_back(std::move(*db));
		return r;
	}

	void give_back(DbPtr db) noexcept
	{
		if (!db || !db_usable(*db))
			return;
		std::lock_guard<std::mutex> lk(mu_);
		if (idle_.size() < options_.max_idle_connections)
			idle_.push_back(std::move(db));
	}

private:
	Result<std::string> conninfo_; // an error when libpq refused the DSN
	ClientOptions options_;
	std::mutex mu_;
	std::vector<DbPtr> idle_;
	Clock::time_point next_connect_{};
	milliseconds backoff_;
	Error last_error_;
	std::mt19937_64 rng_;
};

// PgGrant -- one grant of lease.grants; a session-bound one keeps its connection
class PgGrant final : public Grant {
public:
	PgGrant(std::shared_ptr<PgPool> pool, std::string resource, std::int64_t token, DbPtr pinned)
	    : pool_(std::move(pool)), resource_(std::move(resource)), token_(token), pinned_(std::move(pinned)),
	      session_bound_(static_cast<bool>(pinned_))
	{
	}

	Result<bool> renew(milliseconds ttl) noexcept override
	{
		milliseconds grace = pool_->options().statement_grace;
		if (!session_bound_)
			return pool_->with_db<bool>([&](Db &db) { return db_renew(db, resource_, token_, ttl, grace); });
		Result<bool> renewed = Error{Errc::unavailable, "", "no connection"};
		if (pinned_ && db_usable(*pinned_))
			renewed = db_renew(*pinned_, resource_, token_, ttl, grace);
		if (!pinned_ || !db_usable(*pinned_)) // the session that bound the grant is gone, so is the grant
			return Error{Errc::lost, renewed ? "" : renewed.error().sqlstate,
			             "the connection holding session-bound lease \"" + resource_ + "\" ended"};
		return renewed;
	}

	Result<bool> release() noexcept override
	{
		milliseconds grace = pool_->options().statement_grace;
		if (!session_bound_)
			return pool_->with_db<bool>([&](Db &db) { return db_release(db, resource_, token_, grace); });
		Result<bool> released = Error{Errc::unavailable, "", "no connection"};
		if (pinned_ && db_usable(*pinned_))
			released = db_release(*pinned_, resource_, token_, grace);
		// closing the session would end the grant anyway
		if (released)
			pool_->give_back(std::move(pinned_));
		pinned_.reset();
		return released;
	}

private:
	std::shared_ptr<PgPool> pool_;
	std::string resource_;
	std::int64_t token_;
	DbPtr pinned_; // session-bound grants live as long as this session
	bool session_bound_;
};

// PgLocker -- acquire through lease.acquire, on the pool
class PgLocker final : public LockerBase {
public:
	explicit PgLocker(std::shared_ptr<PgPool> pool) noexcept : pool_(std::move(pool)) {}

	Capabilities capabilities() const noexcept override { return postgres_capabilities(); }
	std::string_view provider() const noexcept override { return "PostgreSQL"; }

	static Capabilities postgres_capabilities() noexcept
	{
		Capabilities c;
		c.distributed = true;
		c.fencing_token = true;
		c.fenced_write = true;
		c.fifo_wait = true;
		c.ephemeral = true;
		c.durable = true;
		c.survives_failover = true;
		return c;
	}

	const std::string &default_holder() const noexcept { return holder_prefix(); }
	using LockerBase::constructed;

protected:
	// lease.max_ttl's own maximum (INT_MAX seconds); the server's setting
	// (default 1 day) may be lower, and refuses a longer TTL itself (22023)
	milliseconds max_ttl() const noexcept override { return std::chrono::seconds{2147483647}; }

	Result<bool> renew_by_token(std::string_view resource, std::int64_t token, milliseconds ttl) override
	{
		return pool_->with_db<bool>(
		    [&](Db &db) { return db_renew(db, resource, token, ttl, pool_->options().statement_grace); });
	}

	Result<bool> release_by_token(std::string_view resource, std::int64_t token) override
	{
		return pool_->with_db<bool>(
		    [&](Db &db) { return db_release(db, resource, token, pool_->options().statement_grace); });
	}

	Result<Granted> grant(std::string_view resource, const LeaseOptions &options,
	                      const std::string &holder) noexcept override
	{
		if (options.strategy == Strategy::advisory)
			return Error{Errc::invalid_argument, "",
			             "Strategy::advisory holds no lease object: use Client::with_advisory"};
		bool session_bound = options.session_bound || options.strategy == Strategy::ephemeral;
		Result<DbPtr> db = pool_->borrow();
		if (!db)
			return db.error();
		auto sent = Clock::now();
		auto granted = db_acquire(**db, resource, options.ttl, options.wait, holder, session_bound,
		                          saturating_add(options.wait, pool_->options().statement_grace));
		if (!granted || !*granted) {
			pool_->give_back(std::move(*db));
			if (!granted)
				return granted.error();
			return Error{Errc::timeout, "",
			             "lease \"" + std::string{resource} + "\" not granted within " +
			                 format_duration(options.wait)};
		}
		DbPtr pinned;
		if (session_bound)
			pinned = std::move(*db);
		else
			pool_->give_back(std::move(*db));
		Granted g;
		g.token = **granted;
		g.deadline = deadline_after(sent, options.ttl);
		g.grant = std::make_unique<PgGrant>(pool_, std::string{resource}, g.token, std::move(pinned));
		return g;
	}

private:
	std::shared_ptr<PgPool> pool_;
};

} // namespace detail

// ---- Client -----------------------------------------------------------------

Client::Client(std::string conninfo, ClientOptions options) noexcept
{
	try {
		pool_ = std::make_shared<detail::PgPool>(conninfo, options);
		locker_ = std::make_unique<detail::PgLocker>(pool_);
		if (!locker_->constructed())
			locker_.reset();
	} catch (const std::exception &e) {
		locker_.reset();
		try {
			construction_error_ = std::string{"pglease::Client could not be constructed: "} + e.what();
		} catch (...) {
			// no memory for the message either: constructed() has a fixed one
		}
	}
	if (!locker_)
		pool_.reset();
}

// leases that outlive the client stay valid until their deadline, unrenewed
Client::~Client() = default;

Result<void>
Client::constructed() const noexcept
{
	if (pool_ && locker_)
		return {};
	try {
		return Error{Errc::internal, "",
		             construction_error_.empty() ? "pglease::Client could not be constructed"
		                                         : construction_error_};
	} catch (...) {
		return Error{};
	}
}

const std::string &
Client::default_holder() const noexcept
{
	static const std::string none;
	return locker_ ? locker_->default_holder() : none;
}

Capabilities
Client::capabilities() const noexcept
{
	return detail::PgLocker::postgres_capabilities();
}

Result<Lease>
Client::acquire(std::string_view resource, const LeaseOptions &options) noexcept
{
	if (auto ok = constructed(); !ok)
		return ok.error();
	return locker_->acquire(resource, options);
}

Result<Lease>
Client::try_acquire(std::string_view resource, LeaseOptions options) noexcept
{
	if (auto ok = constructed(); !ok)
		return ok.error();
	return locker_->try_acquire(resource, std::move(options));
}

Result<void>
Client::run_fenced(const Lease *lease, std::string_view, std::chrono::milliseconds, const TxFn &fn) noexcept
{
	if (auto ok = constructed(); !ok)
		return ok;
	if (!lease->state_)
		return Error{Errc::lost, "", "empty lease"};
	// no local pre-check: the fence in the server is the authority
	Result<void> r = pool_->with_db<void>([&](detail::Db &db) {
		return detail::db_fenced(db, lease->resource(), lease->token(), pool_->options().statement_grace, fn);
	});
	if (!r && r.error().code == Errc::lost)
		detail::LeaseEngine::mark_lost(*lease->state_, r.error());
	return r;
}

Result<void>
Client::run_advisory(const Lease *, std::string_view resource, std::chrono::milliseconds wait,
                     const TxFn &fn) noexcept
{
	if (auto ok = constructed(); !ok)
		return ok;
	if (auto ok = detail::check_resource(resource); !ok)
		return ok;
	if (wait < std::chrono::milliseconds{0})
		return Error{Errc::invalid_argument, "22023", "wait must not be negative"};
	return pool_->with_db<void>([&](detail::Db &db) {
		return detail::db_with_advisory(db, resource, wait,
		                                detail::saturating_add(wait, pool_->options().statement_grace), fn);
	});
}

Result<void>
Client::advisory_lock(pqxx::work &tx, std::string_view resource, std::chrono::milliseconds wait) noexcept
{
	return detail::db_advisory_lock(tx, resource, wait);
}

Result<bool>
Client::renew(std::string_view resource, std::int64_t token, std::chrono::milliseconds ttl) noexcept
{
	if (auto ok = constructed(); !ok)
		return ok.error();
	return locker_->renew(resource, token, ttl);
}

Result<bool>
Client::release(std::string_view resource, std::int64_t token) noexcept
{
	if (auto ok = constructed(); !ok)
		return ok.error();
	return locker_->release(resource, token);
}

Result<std::vector<LeaseInfo>>
Client::status() noexcept
{
	if (auto ok = constructed(); !ok)
		return ok.error();
	return pool_->with_db<std::vector<LeaseInfo>>(
	    [&](detail::Db &db) { return detail::db_status(db, pool_->options().statement_grace); });
}

} // namespace pglease
