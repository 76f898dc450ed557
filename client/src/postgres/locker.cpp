// postgres/locker.cpp -- the PostgreSQL provider: PgLocker, a
// LockerBase like every provider's locker, its grants, and its extras
// (status; fenced writes and advisory locks are in postgres.cpp), and its
// elections: a campaign is lease.acquire with a value, the Grant's proclaim
// lease.proclaim, leader() lease.leader, observe() lease.observe, which
// sleeps in the server until the election changes (one statement: it works
// through a transaction-mode pooler).
//
// The provider's recipe is the pg_lease extension's SQL API: lease.acquire
// waits in the server's FIFO queue, the token is the extension's token
// sequence (strictly increasing per resource, durable), renew and release
// act on the exact (resource, token) -- with a holder, only if the grant
// is that holder's.  What every provider shares (renewal
// thread, loss reporting, no-nested rule, argument checks) is in detail/;
// the connections are postgres/pool.cpp's, every SQL call connection.cpp's,
// the pqxx-typed extras postgres.cpp's.
//
// Renew and release act only on the exact grant (resource, token), so
// repeating one is safe: a try that fails for a reason that may pass
// (is_retryable) is made again, on a fresh connection when the old one broke
// (retried, within the call's own bound; a lease's release also until its
// local deadline, through Grant::release_again).
//
// Locking: a PgGrant's pinned connection is used under its
// LeaseState::op_mu; the pool locks itself.  No lock is held across a
// database call except op_mu.
#include "postgres/locker.hpp"

#include <algorithm>
#include <thread>

#include "detail/backoff.hpp"
#include "detail/provider.hpp"
#include "postgres/db.hpp"
#include "postgres/pool.hpp"

namespace pglease {
namespace detail {

namespace {

// The shortest statement_timeout a retry is made with: a renew or release
// that waits for no lock takes a millisecond or two.
constexpr milliseconds shortest_try{50};
// The pauses before retries: short, since a lock conflict or a failover is
// often over within milliseconds; jittered (detail/backoff.hpp).
constexpr milliseconds retry_pause_first{10};
constexpr milliseconds retry_pause_max{200};

// time_left -- until bound, 0 when past
milliseconds
time_left(Clock::time_point bound) noexcept
{
	auto now = Clock::now();
	if (bound <= now)
		return milliseconds{0};
	return std::chrono::duration_cast<milliseconds>(bound - now);
}

// retried -- call(db, statement_timeout) on a pooled connection, and again
// after a short pause while it fails for a reason that may pass
// (is_retryable) -- on a fresh connection when the old one broke (the pool
// dropped it) -- within the bound a call always had: statement_grace + the
// answer margin from the moment it has a connection, each retry's
// statement_timeout cut to end by then even if the server freezes.  A retry
// opens a connection only if no try of this call did (the time that takes
// extends the bound, as a first try's connect does); a try that gets no
// connection (the server unreachable, or in backoff) ends the call at once,
// as ever.  A call that succeeds makes the one round trip it always made.
// Only for calls that name one exact grant: repeating them is safe.
template <class T, class Call>
Result<T>
retried(PgPool &pool, Call &&call) noexcept
{
	const milliseconds grace = pool.options().statement_grace;
	bool opened = false;
	Result<DbPtr> db = *pool.borrow_by(Clock::time_point::max(), &opened);
	if (!db)
		return db.error();
	Clock::time_point bound = deadline_after(Clock::now(), saturating_add(grace, db_answer_margin));
	Result<T> r = call(**db, grace);
	pool.give_back(std::move(*db));
	Backoff pause{retry_pause_first, retry_pause_max};
	while (!r && is_retryable(r.error())) {
		milliseconds wait = pause.next();
		if (time_left(bound) <= wait + db_answer_margin + shortest_try)
			break;
		std::this_thread::sleep_for(wait);
		auto asked = Clock::now();
		bool opened_now = false;
		std::optional<Result<DbPtr>> next =
		    pool.borrow_by(opened ? Clock::time_point::min() : Clock::time_point::max(), &opened_now);
		if (!next)
			break; // no idle connection, and this call opened one already
		if (!*next) {
			// the server cannot be reached now: answered at once, as a
			// first try would be (a lease's renewal is tried again by the
			// renewal thread, its release by release_again)
			r = next->error();
			break;
		}
		if (opened_now) {
			opened = true;
			bound = deadline_after(bound, std::chrono::duration_cast<milliseconds>(Clock::now() - asked));
		}
		milliseconds left = time_left(bound) - db_answer_margin;
		if (left < shortest_try) {
			pool.give_back(std::move(**next));
			break;
		}
		r = call(***next, std::min(grace, left));
		pool.give_back(std::move(**next));
	}
	return r;
}

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
			return retried<bool>(*pool_, [&](Db &db, milliseconds timeout) {
				return db_renew(db, resource_, token_, ttl, timeout);
			});
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
			return retried<bool>(*pool_, [&](Db &db, milliseconds timeout) {
				return db_release(db, resource_, token_, timeout);
			});
		Result<bool> released = Error{Errc::unavailable, "", "no connection"};
		if (pinned_ && db_usable(*pinned_))
			released = db_release(*pinned_, resource_, token_, grace);
		// failed, the session is closed: its backend exits, and that ends
		// the grant (lease.session_alive), so no retry is needed
		if (released)
			pool_->give_back(std::move(pinned_));
		pinned_.reset();
		return released;
	}

	// a session-bound grant ends with its session, which release() closed
	bool repeats_release() const noexcept override { return !session_bound_; }

	// one more try, over by bound (the lease's local deadline): a new
	// connection only if opening it ends by then, the statement_timeout cut
	// to what is left less the answer margin
	std::optional<Result<bool>> release_again(Clock::time_point bound) noexcept override
	{
		if (session_bound_)
			return std::nullopt;
		std::optional<Result<DbPtr>> db = pool_->borrow_by(bound);
		if (!db)
			return std::nullopt;
		if (!*db)
			return Result<bool>{db->error()};
		milliseconds left = time_left(bound) - db_answer_margin;
		if (left < shortest_try) {
			pool_->give_back(std::move(**db));
			return std::nullopt;
		}
		Result<bool> released =
		    db_release(***db, resource_, token_, std::min(pool_->options().statement_grace, left));
		pool_->give_back(std::move(**db));
		return released;
	}

	// lease.proclaim: the server compares (election, term) in the same UPDATE
	Result<bool> proclaim(std::string_view value) noexcept override
	{
		milliseconds grace = pool_->options().statement_grace;
		if (!session_bound_)
			return pool_->with_db<bool>(
			    [&](Db &db) { return db_proclaim(db, resource_, token_, value, grace); });
		if (!pinned_ || !db_usable(*pinned_))
			return Error{Errc::lost, "",
			             "the connection holding session-bound leadership of \"" + resource_ + "\" ended"};
		return db_proclaim(*pinned_, resource_, token_, value, grace);
	}

private:
	std::shared_ptr<PgPool> pool_;
	std::string resource_;
	std::int64_t token_;
	DbPtr pinned_; // session-bound grants live as long as this session
	bool session_bound_;
};

} // namespace

Result<std::unique_ptr<Locker>>
connect_postgres(std::string_view dsn, const ClientOptions &options) noexcept
{
	// a malformed conninfo is refused here, before any I/O
	if (auto ok = postgres_conninfo(dsn, options.connect_timeout); !ok)
		return ok.error();
	try {
		return handed_out(std::make_unique<PgLocker>(std::string{dsn}, options));
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

} // namespace detail

// ---- the provider ------------------------------------------------------------

detail::PgLocker::PgLocker(std::string conninfo, ClientOptions options) noexcept
{
	try {
		pool_ = std::make_shared<detail::PgPool>(conninfo, options);
	} catch (const std::exception &e) {
		try {
			construction_error_ = std::string{"the PostgreSQL locker could not be constructed: "} + e.what();
		} catch (...) {
			// no memory for the message either: constructed() has a fixed one
		}
	}
}

// leases that outlive the client stay valid until their deadline, unrenewed
// (each grant keeps the pool it needs)
detail::PgLocker::~PgLocker() = default;

Result<void>
detail::PgLocker::constructed() const noexcept
{
	if (auto ok = LockerBase::constructed(); !ok)
		return ok;
	if (pool_)
		return {};
	try {
		return Error{Errc::internal, "",
		             construction_error_.empty() ? "the PostgreSQL locker could not be constructed"
		                                         : construction_error_};
	} catch (...) {
		return Error{};
	}
}

// Fencing tokens, fenced writes in the data's own transaction, FIFO waits,
// ephemeral grants, durable; survives failover to a synchronous standby.
Capabilities
detail::PgLocker::capabilities() const noexcept
{
	Capabilities c;
	c.distributed = true;
	c.fencing_token = true;
	c.fenced_write = true;
	c.fifo_wait = true;
	c.ephemeral = true;
	c.durable = true;
	c.survives_failover = true;
	c.election = true;    // lease.acquire with a value, lease.leader, lease.observe
	c.shared_mode = true; // lease.acquire_shared
	c.semaphore = true;   // lease.acquire_permit
	c.reclaim = true;     // the same holder asking again keeps its grant
	return c;
}

// lease.max_ttl's own maximum (INT_MAX seconds); the server's setting
// (default 1 day) may be lower, and refuses a longer TTL itself (22023)
std::chrono::milliseconds
detail::PgLocker::max_ttl() const noexcept
{
	return std::chrono::seconds{2147483647};
}

Result<detail::Granted>
detail::PgLocker::grant(std::string_view resource, const LeaseOptions &options, const std::string &holder,
              std::chrono::milliseconds)
{
	return take(resource, options, holder, nullptr);
}

// take -- lease.acquire (with value non-null: a campaign) on a pooled
// connection, the statement bounded by wait + grace; a session-bound grant
// keeps its connection
Result<detail::Granted>
detail::PgLocker::take(std::string_view resource, const LeaseOptions &options, const std::string &holder,
             const std::string *value)
{
	using detail::Clock;
	bool session_bound = options.session_bound || options.strategy == Strategy::ephemeral;
	Result<detail::DbPtr> db = pool_->borrow();
	if (!db)
		return db.error();
	auto sent = Clock::now();
	auto granted = detail::db_acquire(**db, resource, options.ttl, options.wait, holder, session_bound,
	                                  detail::saturating_add(options.wait, pool_->options().statement_grace),
	                                  value, options.mode, options.limit);
	if (!granted || !*granted) {
		pool_->give_back(std::move(*db));
		if (!granted)
			return granted.error();
		return Error{Errc::timeout, "",
		             "lease \"" + std::string{resource} + "\" not granted within " +
		                 format_duration(options.wait)};
	}
	detail::DbPtr pinned;
	if (session_bound)
		pinned = std::move(*db);
	else
		pool_->give_back(std::move(*db));
	detail::Granted g;
	g.token = **granted;
	g.deadline = detail::deadline_after(sent, options.ttl);
	g.grant = std::make_unique<detail::PgGrant>(pool_, std::string{resource}, g.token, std::move(pinned));
	return g;
}

Result<bool>
detail::PgLocker::renew_by_token(std::string_view resource, std::int64_t token, std::string_view holder,
                       std::chrono::milliseconds ttl)
{
	return detail::retried<bool>(*pool_, [&](detail::Db &db, std::chrono::milliseconds timeout) {
		return detail::db_renew(db, resource, token, ttl, timeout, holder);
	});
}

Result<bool>
detail::PgLocker::release_by_token(std::string_view resource, std::int64_t token, std::string_view holder)
{
	return detail::retried<bool>(*pool_, [&](detail::Db &db, std::chrono::milliseconds timeout) {
		return detail::db_release(db, resource, token, timeout, holder);
	});
}

// ---- elections ----------------------------------------------------------------

namespace {

// The longest single lease.observe: a longer wait is several calls, so a
// server that vanished is noticed within this plus the grace.
constexpr std::chrono::milliseconds observe_slice{std::chrono::seconds{30}};

LeaderView
view_of(const detail::PgLeader &l)
{
	LeaderView v;
	v.has_leader = l.found;
	if (l.found) {
		v.value = l.value.value_or(std::string{});
		v.term = l.term;
		v.since = std::chrono::system_clock::time_point{
		    std::chrono::duration_cast<std::chrono::system_clock::duration>(
		        std::chrono::microseconds{l.since_us})};
	}
	return v;
}

} // namespace

Result<detail::Granted>
detail::PgLocker::grant_leadership(std::string_view election, std::string_view value, const LeaseOptions &options,
                         const std::string &holder, std::chrono::milliseconds)
{
	const std::string kept{value};
	return take(election, options, holder, &kept);
}

Result<LeaderView>
detail::PgLocker::read_leader(std::string_view election)
{
	Result<detail::PgLeader> l = pool_->with_db<detail::PgLeader>(
	    [&](detail::Db &db) { return detail::db_leader(db, election, pool_->options().statement_grace); });
	if (!l)
		return l.error();
	return view_of(*l);
}

// next_leader -- lease.observe with the time left (at most observe_slice a
// call), each bounded by its wait + grace, until the view differs from seen
// or the deadline.  A call answered with a state that is no change to the
// caller (a value stored as '' where it saw none) is re-called from exactly
// that state, so it sleeps instead of spinning.
Result<LeaderView>
detail::PgLocker::next_leader(std::string_view election, const LeaderView &seen,
                    std::chrono::steady_clock::time_point deadline)
{
	using detail::Clock;
	std::int64_t after_term = seen.has_leader ? seen.term : 0;
	std::optional<std::string> after_value;
	if (seen.has_leader && !seen.value.empty())
		after_value = seen.value;
	const auto grace = pool_->options().statement_grace;
	for (;;) {
		auto now = Clock::now();
		std::chrono::milliseconds left{0};
		if (deadline > now)
			left = std::min(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now) +
			                    std::chrono::milliseconds{1},
			                observe_slice);
		Result<detail::PgLeader> l = pool_->with_db<detail::PgLeader>([&](detail::Db &db) {
			return detail::db_observe(db, election, after_term, after_value, left,
			                          detail::saturating_add(left, grace));
		});
		if (!l)
			return l.error();
		LeaderView view = view_of(*l);
		if (changed(seen, view) || Clock::now() >= deadline)
			return view;
		after_term = l->found ? l->term : 0;
		after_value = l->value;
	}
}

} // namespace pglease
