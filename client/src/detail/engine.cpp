// detail/engine.cpp -- LeaseEngine: the renewal thread of a locker's
// leases, their renewals (each in a thread of its own), releases, and the
// loss of a lease at its local deadline; and Grant's defaults.
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
#include <algorithm>

#include "detail/backoff.hpp"
#include "detail/provider.hpp"

namespace pglease {
namespace detail {

void
LeaseEngine::track(const std::shared_ptr<LeaseState> &state)
{
	Clock::time_point due;
	{
		std::lock_guard<std::mutex> slk(state->mu);
		due = state->next_renew;
	}
	std::lock_guard<std::mutex> lk(mu_);
	leases_.push_back(state);
	if (!renewer_.joinable() && !stopping_)
		renewer_ = std::thread([this] { renew_loop(); });
	else if (due >= sleeps_until_)
		return; // the loop wakes before it is due: no wake-up per acquire
	cv_.notify_all();
}

// stop -- end the renewal thread, and wait for the renewals in flight: each
// ends by its provider's bound, as when the one thread made them itself, and
// none is left running while the process exits
void
LeaseEngine::stop() noexcept
{
	std::vector<Worker> workers;
	std::vector<std::weak_ptr<LeaseState>> leases;
	{
		std::lock_guard<std::mutex> lk(mu_);
		if (!stopping_)
			leases = leases_;
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
	confirm_provisional(leases);
}

// confirm_provisional -- the extension to the TTL of the provisional grants
// left (Granted::provisional) when the engine stops: leases that outlive
// their locker stay valid until their TTL's deadline, unrenewed
void
LeaseEngine::confirm_provisional(const std::vector<std::weak_ptr<LeaseState>> &leases) noexcept
{
	for (const auto &w : leases) {
		auto st = w.lock();
		if (!st)
			continue;
		{
			std::lock_guard<std::mutex> lk(st->mu);
			if (!st->provisional || st->lost || st->released)
				continue;
		}
		(void)renew_now(*st);
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
				st.next_renew = st.auto_renew ? deadline_after(sent, st.heartbeat) : Clock::time_point::max();
				st.provisional = false;
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
				keep = !st->lost && !st->released && (st->auto_renew || st->provisional);
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
		sleeps_until_ = wake;
		cv_.wait_until(lk, wake);
		sleeps_until_ = Clock::time_point::min();
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

} // namespace detail
} // namespace pglease
