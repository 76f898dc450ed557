// lease.cpp -- what every provider's leases share: the Lease guard, the
// renewal thread (LeaseEngine), loss reporting, the per-thread no-nested
// rule, and LockerBase::acquire, which turns a provider's grant into a Lease.
//
// Locking: LeaseEngine::mu_ guards the list of tracked leases; each
// LeaseState::mu guards its deadline, schedule and lost/released state, and
// LeaseState::op_mu serializes the provider calls on its grant.  The
// renewal thread makes no provider call: each renewal runs in a thread of
// its own (at most one per lease: LeaseState::renewing), and the loss at the
// deadline is declared by the renewal thread.  No lock but op_mu is held
// across a provider call (one try of it: a release's retries
// take it again for each), mu may be taken while holding op_mu but never the
// other way round, mu is never taken while holding the engine's mu_ for
// long, and callbacks run with no lock held.
#include <unistd.h>

#include <algorithm>

#include "detail/backoff.hpp"
#include "detail/provider.hpp"
#include "detail/random.hpp"
#include "pglease/options.hpp"

namespace pglease {
namespace detail {

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

// utf8_error_at -- the offset of the first byte that is not part of valid
// UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above
// U+10FFFF), or npos
std::size_t
utf8_error_at(std::string_view s) noexcept
{
	std::size_t i = 0;
	while (i < s.size()) {
		auto b = static_cast<unsigned char>(s[i]);
		std::size_t n;
		unsigned char lo = 0x80, hi = 0xBF; // allowed range of the second byte
		if (b < 0x80)
			n = 1;
		else if (b >= 0xC2 && b <= 0xDF)
			n = 2;
		else if (b >= 0xE0 && b <= 0xEF) {
			n = 3;
			if (b == 0xE0)
				lo = 0xA0; // overlong
			else if (b == 0xED)
				hi = 0x9F; // surrogates
		} else if (b >= 0xF0 && b <= 0xF4) {
			n = 4;
			if (b == 0xF0)
				lo = 0x90; // overlong
			else if (b == 0xF4)
				hi = 0x8F; // above U+10FFFF
		} else
			return i;
		if (i + n > s.size())
			return i;
		for (std::size_t k = 1; k < n; k++) {
			auto c = static_cast<unsigned char>(s[i + k]);
			if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF))
				return i;
		}
		i += n;
	}
	return std::string_view::npos;
}

} // namespace

Clock::time_point
deadline_after(Clock::time_point from, milliseconds d) noexcept
{
	if (d <= milliseconds{0})
		return from + d; // not reached with the checked values; kept exact
	auto room = std::chrono::duration_cast<milliseconds>(Clock::time_point::max() - from);
	if (d >= room)
		return Clock::time_point::max();
	return from + d;
}

milliseconds
saturating_add(milliseconds a, milliseconds b) noexcept
{
	if (b > milliseconds::zero() && a > milliseconds::max() - b)
		return milliseconds::max();
	return a + b;
}

Result<void>
check_label(std::string_view what, std::string_view value, std::size_t max_bytes) noexcept
{
	try {
		std::string name{what};
		if (value.size() > max_bytes)
			return Error{Errc::invalid_argument, "22023",
			             name + " is too long: " + std::to_string(value.size()) + " bytes, the limit is " +
			                 std::to_string(max_bytes)};
		if (auto nul = value.find('\0'); nul != std::string_view::npos)
			return Error{Errc::invalid_argument, "22023",
			             name + " contains a NUL byte (at byte " + std::to_string(nul) +
			                 "): names are UTF-8 text without NUL bytes"};
		if (auto bad = utf8_error_at(value); bad != std::string_view::npos)
			return Error{Errc::invalid_argument, "22021",
			             name + " is not valid UTF-8 (at byte " + std::to_string(bad) + ")"};
		return {};
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

Result<void>
check_resource(std::string_view resource) noexcept
{
	if (resource.empty())
		return Error{Errc::invalid_argument, "22023", "resource must not be empty"};
	return check_label("resource", resource, max_resource_bytes);
}

// ---- LeaseEngine --------------------------------------------------------------

void
LeaseEngine::track(const std::shared_ptr<LeaseState> &state)
{
	std::lock_guard<std::mutex> lk(mu_);
	leases_.push_back(state);
	if (!renewer_.joinable() && !stopping_)
		renewer_ = std::thread([this] { renew_loop(); });
	cv_.notify_all();
}

// stop -- end the renewal thread, and wait for the renewals in flight: each
// ends by its provider's bound, as when the one thread made them itself, and
// none is left running while the process exits
void
LeaseEngine::stop() noexcept
{
	std::vector<Worker> workers;
	{
		std::lock_guard<std::mutex> lk(mu_);
		stopping_ = true;
		workers.swap(workers_);
	}
	cv_.notify_all();
	if (renewer_.joinable() && renewer_.get_id() != std::this_thread::get_id())
		renewer_.join();
	for (auto &w : workers) {
		if (w.thread.get_id() == std::this_thread::get_id())
			w.thread.detach(); // a renewal's callback ended the locker: its thread ends next
		else if (w.thread.joinable())
			w.thread.join();
	}
}

// reap_workers -- join the renewals' threads that are done (under mu_)
void
LeaseEngine::reap_workers() noexcept
{
	for (auto it = workers_.begin(); it != workers_.end();) {
		if (!it->done->load()) {
			++it;
			continue;
		}
		if (it->thread.joinable())
			it->thread.join();
		it = workers_.erase(it);
	}
}

namespace {

// report_lost -- what follows setting lost: the cancel token, then the
// callback, with no lock held
void
report_lost(LeaseState &st, const std::function<void(const Error &)> &callback, const Error &error) noexcept
{
	st.cancelled->store(true);
	if (callback) {
		try {
			callback(error);
		} catch (...) {
			// a throwing callback must not take the renewal thread down
		}
	}
}

} // namespace

void
LeaseEngine::mark_lost(LeaseState &st, const Error &error) noexcept
{
	std::function<void(const Error &)> callback;
	{
		std::lock_guard<std::mutex> lk(st.mu);
		if (st.lost || st.released)
			return;
		st.lost = true;
		callback = st.on_lost;
	}
	report_lost(st, callback, error);
}

// lose_if_expired -- the loss at the local deadline, declared without waiting
// for a renewal in flight: when that one returns, it finds the lease lost
// (a late success does not revive it), and it is left to end by its own
// bound (the provider's timeouts)
void
LeaseEngine::lose_if_expired(LeaseState &st) noexcept
{
	std::function<void(const Error &)> callback;
	Error error{Errc::lost, "", ""};
	{
		std::lock_guard<std::mutex> lk(st.mu);
		if (st.lost || st.released || Clock::now() < st.deadline)
			return;
		st.lost = true;
		callback = st.on_lost;
		std::string why = st.renewing ? "its renewal is still unanswered" : "no renewal succeeded";
		if (!st.last_failure.message.empty())
			why += std::string{st.renewing ? " (the try before: " : " (the last: "} +
			       st.last_failure.message + ")";
		error.sqlstate = st.last_failure.sqlstate;
		error.message =
		    "lease \"" + st.resource + "\" could not be renewed before its local deadline: " + why;
	}
	report_lost(st, callback, error);
}

namespace {

// ended -- released or lost: no call may act on the grant any more
bool
ended(LeaseState &st) noexcept
{
	std::lock_guard<std::mutex> lk(st.mu);
	return st.lost || st.released;
}

// The pauses between the tries of a release: short, since a lock conflict or
// a failover is often over in milliseconds, and jittered (detail/backoff.hpp).
constexpr milliseconds release_pause_first{10};
constexpr milliseconds release_pause_max{200};

} // namespace

bool
Grant::repeats_release() const noexcept
{
	return false;
}

std::optional<Result<bool>>
Grant::release_again(Clock::time_point) noexcept
{
	return std::nullopt;
}

// renew_now -- one renewal; a definite "no" or a missed deadline is a loss.
// Past the local deadline nothing is sent, and a renewal answered only then
// extends nothing: the lease was lost at the deadline (lose_if_expired).
Result<void>
LeaseEngine::renew_now(LeaseState &st) noexcept
{
	lose_if_expired(st);
	if (ended(st))
		return Error{Errc::lost, "", "lease \"" + st.resource + "\" is no longer held"};
	auto sent = Clock::now();
	Result<bool> renewed = Error{Errc::internal, "", "no grant"};
	{
		std::lock_guard<std::mutex> lk(st.op_mu);
		// a release may have begun while this call waited for op_mu: the
		// grant is its now (it may still be trying, between its tries)
		if (ended(st))
			return Error{Errc::lost, "", "lease \"" + st.resource + "\" is no longer held"};
		if (st.grant)
			renewed = st.grant->renew(st.ttl);
	}

	if (renewed && *renewed) {
		{
			std::lock_guard<std::mutex> lk(st.mu);
			if (!st.lost && !st.released && Clock::now() < st.deadline) {
				st.deadline = deadline_after(sent, st.ttl - st.drift);
				st.next_renew = deadline_after(sent, st.heartbeat);
				st.last_failure = Error{};
				return {};
			}
		}
		lose_if_expired(st); // answered after the deadline
		return Error{Errc::lost, "",
		             "lease \"" + st.resource +
		                 "\" is no longer held: its renewal was answered after its local deadline, or it "
		                 "was released meanwhile"};
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
		st.last_failure = renewed.error();
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

// release -- end the grant; a release that failed for a reason that may pass
// (is_retryable: a statement or lock timeout, a serialization failure or
// deadlock, a broken connection, a server shutting down) is tried again after
// a short pause, as long as the provider repeats releases
// (Grant::release_again), until it is answered, fails for good, or the
// lease's local deadline passes.  The deadline is the bound because past it
// the holder no longer counts on the grant and the server ends it by its own
// expiry anyway (within the latency of the last renewal): a later try would
// free the resource no sooner, and only keep the caller -- often a
// destructor -- waiting.  op_mu is held for each try, not across the pauses,
// so the renewal thread never waits for more than one try.
Result<void>
LeaseEngine::release(LeaseState &st) noexcept
{
	Clock::time_point bound;
	{
		std::lock_guard<std::mutex> lk(st.mu);
		if (st.released)
			return {};
		if (st.lost)
			return Error{Errc::lost, "", "lease \"" + st.resource + "\" was lost before release"};
		st.released = true;
		bound = st.deadline;
	}
	Result<bool> released = Error{Errc::internal, "", "no grant"};
	bool repeats = false;
	{
		std::lock_guard<std::mutex> lk(st.op_mu);
		if (st.grant) {
			released = st.grant->release();
			repeats = st.grant->repeats_release();
		}
	}
	Backoff pause{release_pause_first, release_pause_max};
	bool outcome_lost = false; // a try may have ended the grant, its answer lost
	while (repeats && !released && is_retryable(released.error())) {
		milliseconds wait = pause.next();
		auto now = Clock::now();
		if (bound <= now || bound - now <= wait)
			break;
		std::this_thread::sleep_for(wait);
		outcome_lost = outcome_lost || released.error().code == Errc::unavailable;
		std::optional<Result<bool>> again;
		{
			std::lock_guard<std::mutex> lk(st.op_mu);
			if (st.grant)
				again = st.grant->release_again(bound);
		}
		if (!again)
			break;
		released = std::move(*again);
	}
	if (!released)
		return released.error();
	if (!*released)
		return Error{Errc::lost, "",
		             "lease \"" + st.resource + "\" was no longer held at release" +
		                 (outcome_lost ? " (or an earlier try, whose answer was lost with its connection, "
		                                 "had released it)"
		                               : "")};
	return {};
}

// renew_loop -- the renewal thread: it starts each lease's renewal when due
// (start_renewal: one in flight per lease) and declares a lease lost at its
// local deadline (lose_if_expired), never waiting for a provider call
void
LeaseEngine::renew_loop() noexcept
{
	std::unique_lock<std::mutex> lk(mu_);
	while (!stopping_) {
		auto now = Clock::now();
		auto wake = now + std::chrono::seconds{1};
		reap_workers();
		std::vector<std::shared_ptr<LeaseState>> due, expired;
		for (auto it = leases_.begin(); it != leases_.end();) {
			std::shared_ptr<LeaseState> st = it->lock();
			bool keep = false;
			if (st) {
				std::lock_guard<std::mutex> slk(st->mu);
				keep = !st->lost && !st->released;
				if (keep && st->deadline <= now)
					expired.push_back(st);
				else if (keep && !st->renewing && st->next_renew <= now) {
					st->renewing = true;
					due.push_back(st);
				} else if (keep) {
					wake = std::min(wake, st->deadline);
					if (!st->renewing)
						wake = std::min(wake, st->next_renew);
				}
			}
			it = keep ? std::next(it) : leases_.erase(it);
		}
		if (!due.empty() || !expired.empty()) {
			lk.unlock();
			for (auto &st : expired)
				lose_if_expired(*st);
			for (auto &st : due)
				start_renewal(st);
			lk.lock();
			continue;
		}
		cv_.wait_until(lk, wake);
	}
}

// start_renewal -- one renewal of st in a thread of its own (kept in
// workers_ until the loop or stop() joins it), which wakes the loop when it
// ends, taking mu_ first so the wake-up cannot fall between the loop's look at
// the leases and its wait; without a thread, here
void
LeaseEngine::start_renewal(const std::shared_ptr<LeaseState> &st) noexcept
{
	auto renew = [](LeaseEngine &engine, LeaseState &lease) noexcept {
		(void)engine.renew_now(lease);
		std::lock_guard<std::mutex> lk(lease.mu);
		lease.renewing = false;
	};
	try {
		std::lock_guard<std::mutex> lk(mu_);
		if (stopping_) {
			std::lock_guard<std::mutex> slk(st->mu);
			st->renewing = false;
			return;
		}
		workers_.reserve(workers_.size() + 1); // so that the push_back below cannot throw
		auto done = std::make_shared<std::atomic<bool>>(false);
		std::thread thread([renew, self = shared_from_this(), st, done] {
			renew(*self, *st);
			{
				std::lock_guard<std::mutex> wlk(self->mu_);
			}
			self->cv_.notify_all();
			done->store(true);
		});
		workers_.push_back(Worker{std::move(thread), done});
	} catch (...) {
		renew(*this, *st); // no thread to be had: the loop waits for this one
	}
}

// ---- LockerBase -----------------------------------------------------------------

LockerBase::LockerBase() noexcept
{
	try {
		engine_ = std::make_shared<LeaseEngine>();
		char host[256] = "localhost";
		(void)gethostname(host, sizeof(host) - 1);
		// host and PID alone repeat: containers have their own PID 1 and
		// often one host name; 64 random bits per locker keep them apart
		holder_prefix_ = "pglease@" + std::string{host} + ":" + std::to_string(getpid()) + ":" + random_hex();
	} catch (...) {
		engine_.reset(); // constructed() reports it
	}
}

LockerBase::~LockerBase()
{
	// leases that outlive their locker stay valid until their deadline, unrenewed
	if (engine_)
		engine_->stop();
}

Result<void>
LockerBase::constructed() const noexcept
{
	if (engine_)
		return {};
	return Error{Errc::internal, "", "the locker could not be constructed (out of memory)"};
}

LeaseState *
LockerBase::state_of(const Lease &lease) noexcept
{
	return LeaseAccess::state(lease);
}

milliseconds
LockerBase::drift(milliseconds) const noexcept
{
	return milliseconds{0};
}

milliseconds
LockerBase::max_ttl() const noexcept
{
	return milliseconds::max();
}

Result<void>
LockerBase::check_ttl(milliseconds ttl) const
{
	if (ttl <= milliseconds{0})
		return Error{Errc::invalid_argument, "22023", "ttl must be positive"};
	if (ttl > max_ttl())
		return Error{Errc::invalid_argument, "22023",
		             "ttl " + format_duration(ttl) + " is longer than the " + std::string{provider()} +
		                 " provider can hold: its maximum is " + format_duration(max_ttl())};
	return {};
}

Result<bool>
LockerBase::renew_by_token(std::string_view, std::int64_t, std::string_view, milliseconds)
{
	return Error{Errc::invalid_argument, "",
	             "the " + std::string{provider()} + " provider cannot renew a lease by its token"};
}

Result<bool>
LockerBase::release_by_token(std::string_view, std::int64_t, std::string_view)
{
	return Error{Errc::invalid_argument, "",
	             "the " + std::string{provider()} + " provider cannot release a lease by its token"};
}

// check_token_call -- what renew and release check before anything else:
// the locker, the resource as acquire checks it, a positive token
Result<void>
LockerBase::check_token_call(std::string_view resource, std::int64_t token) const
{
	if (auto ok = constructed(); !ok)
		return ok;
	if (auto ok = check_resource(resource); !ok)
		return ok;
	if (token <= 0)
		return Error{Errc::invalid_argument, "22023", "token must be positive"};
	return {};
}

// renew_checked -- renew with every argument checked; holder empty: any holder
Result<bool>
LockerBase::renew_checked(std::string_view resource, std::int64_t token, std::string_view holder,
                          milliseconds ttl) noexcept
{
	try {
		if (auto ok = check_token_call(resource, token); !ok)
			return ok.error();
		if (auto ok = check_label("holder", holder, max_holder_bytes); !ok)
			return ok.error();
		if (auto ok = check_ttl(ttl); !ok)
			return ok.error();
		return renew_by_token(resource, token, holder, ttl);
	} catch (const std::exception &e) {
		return Error{Errc::internal, "", e.what()};
	} catch (...) {
		return Error{Errc::internal, "", "unknown exception"};
	}
}

// release_checked -- release with every argument checked; holder empty: any holder
Result<bool>
LockerBase::release_checked(std::string_view resource, std::int64_t token, std::string_view holder) noexcept
{
	try {
		if (auto ok = check_token_call(resource, token); !ok)
			return ok.error();
		if (auto ok = check_label("holder", holder, max_holder_bytes); !ok)
			return ok.error();
		return release_by_token(resource, token, holder);
	} catch (const std::exception &e) {
		return Error{Errc::internal, "", e.what()};
	} catch (...) {
		return Error{Errc::internal, "", "unknown exception"};
	}
}

// the holder forms refuse an empty holder: "any holder" is the token-only call
Result<bool>
LockerBase::renew(std::string_view resource, std::int64_t token, std::string_view holder,
                  milliseconds ttl) noexcept
{
	if (holder.empty())
		return Error{Errc::invalid_argument, "22023", "holder must not be empty"};
	return renew_checked(resource, token, holder, ttl);
}

Result<bool>
LockerBase::release(std::string_view resource, std::int64_t token, std::string_view holder) noexcept
{
	if (holder.empty())
		return Error{Errc::invalid_argument, "22023", "holder must not be empty"};
	return release_checked(resource, token, holder);
}

Result<bool>
LockerBase::renew(std::string_view resource, std::int64_t token, milliseconds ttl) noexcept
{
	return renew_checked(resource, token, {}, ttl);
}

Result<bool>
LockerBase::release(std::string_view resource, std::int64_t token) noexcept
{
	return release_checked(resource, token, {});
}

Result<Lease>
LockerBase::acquire(std::string_view resource, const LeaseOptions &options) noexcept
{
	return lease_from(resource, options, [&](const std::string &holder, milliseconds heartbeat) {
		return grant(resource, options, holder, heartbeat);
	});
}

// holder_for -- the label a grant is stored under (LeaseOptions::reclaim):
// the label as given only with reclaim; otherwise the label and 64 random
// bits, "LABEL~RANDOM", so that no two acquires share one (a provider gives a
// holder asking again its own grant: two processes of one label would both
// hold); without a label, a new one of this locker, unique the same way.
Result<std::string>
LockerBase::holder_for(const LeaseOptions &options)
{
	if (options.holder.empty()) {
		if (options.reclaim)
			return Error{Errc::invalid_argument, "22023",
			             "reclaim needs a holder label: it takes back the grant held under that label"};
		return holder_prefix_ + ":" + std::to_string(acquires_.fetch_add(1));
	}
	if (options.reclaim) {
		if (!capabilities().reclaim)
			return Error{Errc::invalid_argument, "22023",
			             std::string{provider()} + " cannot take back a grant by its label: its grants belong to "
			                                       "the session that took them (capabilities().reclaim is false)"};
		return options.holder;
	}
	// keep within max_holder_bytes: shorten the label, at a character's start
	constexpr std::size_t suffix = 17; // "~" and 16 hex digits
	std::size_t keep = std::min(options.holder.size(), max_holder_bytes - suffix);
	while (keep > 0 && keep < options.holder.size() && (options.holder[keep] & 0xC0) == 0x80)
		--keep;
	return options.holder.substr(0, keep) + "~" + random_hex();
}

// check_strategy -- a strategy this provider has, refused here once for
// every provider, before any I/O: no acquire holds an advisory lock (that is
// PostgreSQL's pglease::with_advisory, a transaction, no lease object), and
// a grant that ends with the client's session only where
// capabilities().ephemeral says so
Result<void>
LockerBase::check_strategy(const LeaseOptions &options) const
{
	if (options.strategy != Strategy::lease && options.strategy != Strategy::ephemeral &&
	    options.strategy != Strategy::advisory)
		return Error{Errc::invalid_argument, "22023", "strategy must be lease, ephemeral or advisory"};
	const bool ephemeral = capabilities().ephemeral;
	if (options.strategy == Strategy::lease && !options.session_bound)
		return {};
	const std::string offers = "the " + std::string{provider()} + " provider offers Strategy::lease" +
	                           (ephemeral ? " and ephemeral" : " only (no sessions)");
	if (options.strategy == Strategy::advisory)
		return Error{Errc::invalid_argument, "22023",
		             "Strategy::advisory holds no lease object (an advisory lock is PostgreSQL's "
		             "pglease::with_advisory): " +
		                 offers};
	if (!ephemeral)
		return Error{Errc::invalid_argument, "22023", offers};
	return {};
}

// check_sharing -- a mode and a limit this provider has, together only as
// the contract allows (docs/shared-leases.md), before any I/O
Result<void>
LockerBase::check_sharing(const LeaseOptions &options) const
{
	if (options.mode != Mode::exclusive && options.mode != Mode::shared)
		return Error{Errc::invalid_argument, "22023", "mode must be exclusive or shared"};
	if (options.mode == Mode::shared && options.limit > 0)
		return Error{
		    Errc::invalid_argument, "22023",
		    "a lease is shared (mode) or counted (limit), not both: a semaphore's permits are exclusive"};
	if (options.limit > max_limit)
		return Error{Errc::invalid_argument, "22023",
		             "limit " + std::to_string(options.limit) + " is over the maximum, " +
		                 std::to_string(max_limit)};
	if (options.mode == Mode::exclusive && options.limit == 0)
		return {};
	if (options.strategy == Strategy::advisory)
		return Error{Errc::invalid_argument, "22023", "Strategy::advisory takes exclusive locks only"};
	Capabilities c = capabilities();
	if (options.mode == Mode::shared && !c.shared_mode)
		return Error{Errc::invalid_argument, "22023",
		             "the " + std::string{provider()} +
		                 " provider has no shared leases (capabilities().shared_mode is false)"};
	if (options.limit > 0 && !c.semaphore)
		return Error{Errc::invalid_argument, "22023",
		             "the " + std::string{provider()} +
		                 " provider has no semaphores (capabilities().semaphore is false)"};
	return {};
}

namespace {

// confirm_after_wait -- a grant's local deadline counts from the request's
// start, since the server may have granted it at any instant of the wait: after
// a wait longer than ttl - heartbeat little or nothing of it is left, and the
// lease would start (nearly) lost though the server holds it for a whole TTL.
// One renewal now proves the grant current on the server's clock (the same
// token, never expired in between, or the renewal is refused) and starts a
// full conservative deadline from its own sending.
Result<void>
confirm_after_wait(std::string_view resource, milliseconds ttl, milliseconds drift, milliseconds heartbeat,
                   Granted &granted)
{
	if (granted.deadline >= Clock::now() + heartbeat)
		return {};
	auto sent = Clock::now();
	Result<bool> confirmed = granted.grant->renew(ttl);
	if (confirmed && *confirmed) {
		granted.deadline = deadline_after(sent, ttl - drift);
		return {};
	}
	if (confirmed || Clock::now() >= granted.deadline) {
		(void)granted.grant->release(); // best effort: it may be gone already
		return Error{
		    Errc::lost, confirmed ? "" : confirmed.error().sqlstate,
		    "lease \"" + std::string{resource} + "\" token " + std::to_string(granted.token) +
		        " was granted at the end of a long wait and had expired before it could be confirmed" +
		        (confirmed ? std::string{} : ": " + confirmed.error().message)};
	}
	return {}; // not confirmed yet, time left: the renewal thread goes on trying
}

} // namespace

Result<Lease>
LockerBase::lease_from(std::string_view resource, const LeaseOptions &options, const Take &take,
                       const std::string &value) noexcept
{
	if (auto ok = constructed(); !ok)
		return ok.error();
	try {
		// the SQLSTATE the extension gives the same mistakes (22023), for
		// every provider, before any I/O
		if (auto ok = check_resource(resource); !ok)
			return ok.error();
		if (auto ok = check_label("holder", options.holder, max_holder_bytes); !ok)
			return ok.error();
		if (auto ok = check_ttl(options.ttl); !ok)
			return ok.error();
		if (options.wait < milliseconds{0})
			return Error{Errc::invalid_argument, "22023", "wait must not be negative"};
		if (auto ok = check_sharing(options); !ok)
			return ok.error();
		if (auto ok = check_strategy(options); !ok)
			return ok.error();
		auto heartbeat = options.heartbeat.count() > 0 ? options.heartbeat : options.ttl / 3;
		if (heartbeat > options.ttl / 2 || heartbeat.count() <= 0)
			return Error{Errc::invalid_argument, "22023", "heartbeat must be positive and at most ttl/2"};
		if (thread_holds_lease() && !(options.wait.count() == 0 && options.allow_nested_try))
			return Error{Errc::nested, "LS002",
			             "this thread already holds a lease; release it before acquiring another"};

		auto holder = holder_for(options);
		if (!holder)
			return holder.error();
		Result<Granted> granted = take(*holder, heartbeat);
		if (!granted)
			return granted.error();
		if (auto ok = confirm_after_wait(resource, options.ttl, drift(options.ttl), heartbeat, *granted); !ok)
			return ok.error();

		auto state = std::make_shared<LeaseState>();
		state->resource = std::string{resource};
		state->holder = std::move(*holder);
		state->token = granted->token;
		state->ttl = options.ttl;
		state->heartbeat = heartbeat;
		state->drift = drift(options.ttl);
		state->deadline = granted->deadline;
		state->next_renew = std::min(deadline_after(Clock::now(), heartbeat), granted->deadline);
		state->value = value;
		state->grant = std::move(granted->grant);
		if (options.auto_renew)
			engine_->track(state);
		t_held.push_back(state);
		return LeaseAccess::make(engine_, state);
	} catch (const std::exception &e) {
		return Error{Errc::internal, "", e.what()};
	} catch (...) {
		return Error{Errc::internal, "", "unknown exception"};
	}
}

Result<Lease>
LockerBase::try_acquire(std::string_view resource, LeaseOptions options) noexcept
{
	options.wait = milliseconds{0};
	return acquire(resource, options);
}

} // namespace detail

using detail::Clock;

// ---- Lease ----------------------------------------------------------------------

Lease::Lease(std::shared_ptr<detail::LeaseEngine> engine, std::shared_ptr<detail::LeaseState> state) noexcept
    : engine_(std::move(engine)), state_(std::move(state))
{
}

Lease::Lease(Lease &&) noexcept = default;

Lease &
Lease::operator=(Lease &&other) noexcept
{
	if (this != &other) {
		if (state_ && engine_)
			(void)engine_->release(*state_);
		engine_ = std::move(other.engine_);
		state_ = std::move(other.state_);
	}
	return *this;
}

Lease::~Lease()
{
	if (state_ && engine_)
		(void)engine_->release(*state_);
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

const std::string &
Lease::holder() const noexcept
{
	static const std::string none;
	return state_ ? state_->holder : none;
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
	if (!state_ || !engine_)
		return Error{Errc::lost, "", "empty lease"};
	return engine_->renew_now(*state_);
}

Result<void>
Lease::release() noexcept
{
	if (!state_ || !engine_)
		return Error{Errc::lost, "", "empty lease"};
	return engine_->release(*state_);
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
	engine_.reset();
	return token;
}

CancelToken
Lease::cancel_token() const noexcept
{
	return state_ ? CancelToken{state_->cancelled} : CancelToken{};
}

} // namespace pglease
