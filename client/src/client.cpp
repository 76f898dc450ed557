// client.cpp -- Client, Lease and the shared core: connection pool with
// reconnect backoff, one renewal thread per client, lost-lease reporting.
//
// Locking: pool_mu_ guards the idle connections and backoff state;
// renew_mu_ guards the list of tracked leases; each LeaseState::mu guards
// its deadline, schedule and lost state, and LeaseState::db_mu its pinned
// connection.  No lock is held across a database call except db_mu (the
// pinned session serves one call at a time), and no two of them are ever
// held together.  Callbacks run with no lock held.
#include "pglease/client.hpp"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "detail/db.hpp"

namespace pglease {
namespace detail {

using Clock = std::chrono::steady_clock;

struct LeaseState {
	std::string resource;
	std::int64_t token = 0;
	milliseconds ttl{0};
	milliseconds heartbeat{0};
	bool session_bound = false;

	std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
	std::atomic<bool> released{false};

	std::mutex mu;
	Clock::time_point deadline; // conservative: send time of last success + ttl
	Clock::time_point next_renew;
	bool lost = false;
	std::function<void(const Error &)> on_lost;

	std::mutex db_mu;
	DbPtr pinned; // session-bound grants live as long as this session
};

class ClientCore {
public:
	ClientCore(std::string conninfo, ClientOptions options)
	    : conninfo_(std::move(conninfo)), options_(options), backoff_(options.backoff_initial),
	      rng_(std::random_device{}())
	{
		char host[256] = "localhost";
		(void)gethostname(host, sizeof(host) - 1);
		static std::atomic<unsigned> clients{0};
		holder_prefix_ = "pglease@" + std::string{host} + ":" + std::to_string(getpid()) + ":" +
		                 std::to_string(clients.fetch_add(1));
	}

	~ClientCore() { stop(); }

	const ClientOptions &options() const noexcept { return options_; }
	const std::string &holder_prefix() const noexcept { return holder_prefix_; }
	std::string next_holder() { return holder_prefix_ + ":" + std::to_string(acquires_.fetch_add(1)); }

	// borrow -- an idle connection, or a new one unless the server is in backoff
	Result<DbPtr> borrow() noexcept
	{
		{
			std::lock_guard<std::mutex> lk(pool_mu_);
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
		Result<DbPtr> db = db_connect(conninfo_, options_.connect_timeout, options_.statement_grace);
		std::lock_guard<std::mutex> lk(pool_mu_);
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
		std::lock_guard<std::mutex> lk(pool_mu_);
		if (idle_.size() < options_.max_idle_connections)
			idle_.push_back(std::move(db));
	}

	void track(const std::shared_ptr<LeaseState> &state)
	{
		std::lock_guard<std::mutex> lk(renew_mu_);
		leases_.push_back(state);
		if (!renewer_.joinable() && !stopping_)
			renewer_ = std::thread([this] { renew_loop(); });
		renew_cv_.notify_all();
	}

	void stop() noexcept
	{
		{
			std::lock_guard<std::mutex> lk(renew_mu_);
			stopping_ = true;
		}
		renew_cv_.notify_all();
		if (renewer_.joinable() && renewer_.get_id() != std::this_thread::get_id())
			renewer_.join();
	}

	// mark_lost -- report a lost lease once: flag, cancel token, callback
	static void mark_lost(LeaseState &st, const Error &error) noexcept
	{
		std::function<void(const Error &)> callback;
		{
			std::lock_guard<std::mutex> lk(st.mu);
			if (st.lost || st.released)
				return;
			st.lost = true;
			callback = st.on_lost;
		}
		st.cancelled->store(true);
		if (callback) {
			try {
				callback(error);
			} catch (...) {
				// a throwing callback must not take the renewal thread down
			}
		}
	}

	// renew_now -- one renewal; a definite "no" or a missed deadline is a loss
	Result<void> renew_now(LeaseState &st) noexcept
	{
		{
			std::lock_guard<std::mutex> lk(st.mu);
			if (st.lost || st.released)
				return Error{Errc::lost, "", "lease \"" + st.resource + "\" is no longer held"};
		}
		auto sent = Clock::now();
		Result<bool> renewed = Error{Errc::unavailable, "", "no connection"};
		if (st.session_bound) {
			std::lock_guard<std::mutex> lk(st.db_mu);
			if (st.pinned && db_usable(*st.pinned))
				renewed = db_renew(*st.pinned, st.resource, st.token, st.ttl, options_.statement_grace);
			if (!st.pinned || !db_usable(*st.pinned)) {
				// the session that bound the grant is gone, so is the grant
				Error e{Errc::lost, renewed ? "" : renewed.error().sqlstate,
				        "the connection holding session-bound lease \"" + st.resource + "\" ended"};
				mark_lost(st, e);
				return e;
			}
		} else {
			renewed = with_db<bool>([&](Db &db) {
				return db_renew(db, st.resource, st.token, st.ttl, options_.statement_grace);
			});
		}

		if (renewed && *renewed) {
			std::lock_guard<std::mutex> lk(st.mu);
			st.deadline = sent + st.ttl;
			st.next_renew = sent + st.heartbeat;
			return {};
		}
		if (renewed) {
			Error e{Errc::lost, "",
			        "lease \"" + st.resource + "\" token " + std::to_string(st.token) +
			            " was released, broken, expired or taken over"};
			mark_lost(st, e);
			return e;
		}
		Clock::time_point deadline;
		{
			std::lock_guard<std::mutex> lk(st.mu);
			deadline = st.deadline;
			// retry soon, but not in a tight loop
			st.next_renew = std::min(Clock::now() + milliseconds{200}, deadline);
		}
		if (Clock::now() >= deadline || renewed.error().code == Errc::lost) {
			Error e{Errc::lost, renewed.error().sqlstate,
			        "lease \"" + st.resource +
			            "\" could not be renewed before its local deadline: " + renewed.error().message};
			mark_lost(st, e);
			return e;
		}
		return renewed.error();
	}

	Result<void> release(LeaseState &st) noexcept
	{
		{
			std::lock_guard<std::mutex> lk(st.mu);
			if (st.released)
				return {};
			if (st.lost)
				return Error{Errc::lost, "", "lease \"" + st.resource + "\" was lost before release"};
			st.released = true;
		}
		Result<bool> released = Error{Errc::unavailable, "", "no connection"};
		if (st.session_bound) {
			std::lock_guard<std::mutex> lk(st.db_mu);
			if (st.pinned && db_usable(*st.pinned))
				released = db_release(*st.pinned, st.resource, st.token, options_.statement_grace);
			// closing the session would end the grant anyway
			DbPtr pinned = std::move(st.pinned);
			if (released && pinned)
				give_back(std::move(pinned));
		} else {
			released = with_db<bool>(
			    [&](Db &db) { return db_release(db, st.resource, st.token, options_.statement_grace); });
		}
		if (!released)
			return released.error();
		if (!*released)
			return Error{Errc::lost, "", "lease \"" + st.resource + "\" was no longer held at release"};
		return {};
	}

private:
	void renew_loop() noexcept
	{
		std::unique_lock<std::mutex> lk(renew_mu_);
		while (!stopping_) {
			auto now = Clock::now();
			auto wake = now + std::chrono::seconds{1};
			std::vector<std::shared_ptr<LeaseState>> due;
			for (auto it = leases_.begin(); it != leases_.end();) {
				std::shared_ptr<LeaseState> st = it->lock();
				bool keep = false;
				if (st) {
					std::lock_guard<std::mutex> slk(st->mu);
					keep = !st->lost && !st->released;
					if (keep && st->next_renew <= now)
						due.push_back(st);
					else if (keep)
						wake = std::min(wake, st->next_renew);
				}
				it = keep ? std::next(it) : leases_.erase(it);
			}
			if (!due.empty()) {
				lk.unlock();
				for (auto &st : due)
					(void)renew_now(*st);
				lk.lock();
				continue;
			}
			renew_cv_.wait_until(lk, wake);
		}
	}

	std::string conninfo_;
	ClientOptions options_;
	std::string holder_prefix_;
	std::atomic<unsigned long long> acquires_{0};

	std::mutex pool_mu_;
	std::vector<DbPtr> idle_;
	Clock::time_point next_connect_{};
	milliseconds backoff_;
	Error last_error_;
	std::mt19937_64 rng_;

	std::mutex renew_mu_;
	std::condition_variable renew_cv_;
	std::vector<std::weak_ptr<LeaseState>> leases_;
	bool stopping_ = false;
	std::thread renewer_;
};

namespace {

// Leases acquired by this thread, for the no-nested-locks rule.
thread_local std::vector<std::weak_ptr<LeaseState>> t_held;

bool
thread_holds_lease() noexcept
{
	auto now = Clock::now();
	bool holds = false;
	t_held.erase(std::remove_if(t_held.begin(), t_held.end(),
	                            [&](const std::weak_ptr<LeaseState> &w) {
		                            auto st = w.lock();
		                            if (!st)
			                            return true;
		                            std::lock_guard<std::mutex> lk(st->mu);
		                            bool held = !st->lost && !st->released && now < st->deadline;
		                            holds = holds || held;
		                            return !held;
	                            }),
	             t_held.end());
	return holds;
}

} // namespace
} // namespace detail

using detail::Clock;

// ---- Lease ------------------------------------------------------------------

Lease::Lease(std::shared_ptr<detail::ClientCore> core, std::shared_ptr<detail::LeaseState> state) noexcept
    : core_(std::move(core)), state_(std::move(state))
{
}

Lease::Lease(Lease &&) noexcept = default;

Lease &
Lease::operator=(Lease &&other) noexcept
{
	if (this != &other) {
		if (state_ && core_)
			(void)core_->release(*state_);
		core_ = std::move(other.core_);
		state_ = std::move(other.state_);
	}
	return *this;
}

Lease::~Lease()
{
	if (state_ && core_)
		(void)core_->release(*state_);
}

std::int64_t
Lease::token() const noexcept
{
	return state_ ? state_->token : 0;
}

const std::string &
Lease::resource() const noexcept
{
	static const std::string none;
	return state_ ? state_->resource : none;
}

bool
Lease::valid() const noexcept
{
	if (!state_)
		return false;
	std::lock_guard<std::mutex> lk(state_->mu);
	return !state_->lost && !state_->released && Clock::now() < state_->deadline;
}

std::chrono::milliseconds
Lease::remaining() const noexcept
{
	if (!valid())
		return std::chrono::milliseconds{0};
	std::lock_guard<std::mutex> lk(state_->mu);
	return std::chrono::duration_cast<std::chrono::milliseconds>(state_->deadline - Clock::now());
}

Result<void>
Lease::renew() noexcept
{
	if (!state_)
		return Error{Errc::lost, "", "empty lease"};
	return core_->renew_now(*state_);
}

Result<void>
Lease::release() noexcept
{
	if (!state_)
		return Error{Errc::lost, "", "empty lease"};
	return core_->release(*state_);
}

void
Lease::on_lost(std::function<void(const Error &)> callback) noexcept
{
	if (!state_)
		return;
	bool already = false;
	{
		std::lock_guard<std::mutex> lk(state_->mu);
		already = state_->lost;
		if (!already)
			state_->on_lost = callback;
	}
	if (already && callback) {
		try {
			callback(Error{Errc::lost, "", "lease \"" + state_->resource + "\" was already lost"});
		} catch (...) {
		}
	}
}

std::int64_t
Lease::detach() noexcept
{
	std::int64_t token = this->token();
	if (state_) {
		std::lock_guard<std::mutex> lk(state_->mu);
		state_->released = true; // stops renewal; nothing is sent
	}
	state_.reset();
	core_.reset();
	return token;
}

CancelToken
Lease::cancel_token() const noexcept
{
	return state_ ? CancelToken{state_->cancelled} : CancelToken{};
}

// ---- Client -----------------------------------------------------------------

Client::Client(std::string conninfo, ClientOptions options) noexcept
{
	try {
		core_ = std::make_shared<detail::ClientCore>(std::move(conninfo), options);
	} catch (const std::exception &e) {
		try {
			construction_error_ = std::string{"pglease::Client could not be constructed: "} + e.what();
		} catch (...) {
			// no memory for the message either: constructed() has a fixed one
		}
	}
}

Client::~Client()
{
	// leases that outlive the client stay valid until their deadline, unrenewed
	if (core_)
		core_->stop();
}

Result<void>
Client::constructed() const noexcept
{
	if (core_)
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
	return core_ ? core_->holder_prefix() : none;
}

Result<Lease>
Client::acquire(std::string_view resource, const LeaseOptions &options) noexcept
{
	if (auto ok = constructed(); !ok)
		return ok.error();
	try {
		if (options.strategy == Strategy::advisory)
			return Error{Errc::invalid_argument, "",
			             "Strategy::advisory holds no lease object: use Client::with_advisory"};
		if (options.ttl <= std::chrono::milliseconds{0} || options.wait < std::chrono::milliseconds{0})
			return Error{Errc::invalid_argument, "", "ttl must be positive and wait not negative"};
		auto heartbeat = options.heartbeat.count() > 0 ? options.heartbeat : options.ttl / 3;
		if (heartbeat * 2 > options.ttl || heartbeat.count() <= 0)
			return Error{Errc::invalid_argument, "", "heartbeat must be positive and at most ttl/2"};
		if (detail::thread_holds_lease() && !(options.wait.count() == 0 && options.allow_nested_try))
			return Error{Errc::nested, "LS002",
			             "this thread already holds a lease; release it before acquiring another"};

		bool session_bound = options.session_bound || options.strategy == Strategy::ephemeral;
		std::string holder = options.holder.empty() ? core_->next_holder() : options.holder;

		Result<detail::DbPtr> db = core_->borrow();
		if (!db)
			return db.error();
		auto sent = Clock::now();
		auto granted = detail::db_acquire(**db, resource, options.ttl, options.wait, holder, session_bound,
		                                  options.wait + core_->options().statement_grace);
		if (!granted) {
			core_->give_back(std::move(*db));
			return granted.error();
		}
		if (!*granted) {
			core_->give_back(std::move(*db));
			return Error{Errc::timeout, "",
			             "lease \"" + std::string{resource} + "\" not granted within " +
			                 format_duration(options.wait)};
		}

		auto state = std::make_shared<detail::LeaseState>();
		state->resource = std::string{resource};
		state->token = **granted;
		state->ttl = options.ttl;
		state->heartbeat = heartbeat;
		state->session_bound = session_bound;
		state->deadline = sent + options.ttl;
		state->next_renew = sent + heartbeat;
		if (session_bound)
			state->pinned = std::move(*db);
		else
			core_->give_back(std::move(*db));

		if (options.auto_renew)
			core_->track(state);
		detail::t_held.push_back(state);
		return Lease{core_, state};
	} catch (const std::exception &e) {
		return Error{Errc::internal, "", e.what()};
	}
}

Result<Lease>
Client::try_acquire(std::string_view resource, LeaseOptions options) noexcept
{
	options.wait = std::chrono::milliseconds{0};
	return acquire(resource, options);
}

Result<void>
Client::run_fenced(const Lease *lease, std::string_view, std::chrono::milliseconds, const TxFn &fn) noexcept
{
	if (auto ok = constructed(); !ok)
		return ok;
	if (!lease->state_)
		return Error{Errc::lost, "", "empty lease"};
	// no local pre-check: the fence in the server is the authority
	Result<void> r = core_->with_db<void>([&](detail::Db &db) {
		return detail::db_fenced(db, lease->resource(), lease->token(), core_->options().statement_grace, fn);
	});
	if (!r && r.error().code == Errc::lost)
		detail::ClientCore::mark_lost(*lease->state_, r.error());
	return r;
}

Result<void>
Client::run_advisory(const Lease *, std::string_view resource, std::chrono::milliseconds wait,
                     const TxFn &fn) noexcept
{
	if (auto ok = constructed(); !ok)
		return ok;
	return core_->with_db<void>([&](detail::Db &db) {
		return detail::db_with_advisory(db, resource, wait, wait + core_->options().statement_grace, fn);
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
	return core_->with_db<bool>([&](detail::Db &db) {
		return detail::db_renew(db, resource, token, ttl, core_->options().statement_grace);
	});
}

Result<bool>
Client::release(std::string_view resource, std::int64_t token) noexcept
{
	if (auto ok = constructed(); !ok)
		return ok.error();
	return core_->with_db<bool>([&](detail::Db &db) {
		return detail::db_release(db, resource, token, core_->options().statement_grace);
	});
}

Result<std::vector<LeaseInfo>>
Client::status() noexcept
{
	if (auto ok = constructed(); !ok)
		return ok.error();
	return core_->with_db<std::vector<LeaseInfo>>(
	    [&](detail::Db &db) { return detail::db_status(db, core_->options().statement_grace); });
}

} // namespace pglease
