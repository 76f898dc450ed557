// election.cpp -- what every provider's elections share: the argument checks
// and the rules of observe (LockerBase), the Leadership guard's proclaim, and
// the follower's thread (ElectionObserver).  A provider supplies only
// grant_leadership, read_leader, next_leader and its grant's proclaim
// (detail/locker_base.hpp).
#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "detail/provider.hpp"
#include "pglease/election.hpp"
#include "pglease/locker.hpp"

namespace pglease {

bool
changed(const LeaderView &seen, const LeaderView &now) noexcept
{
	if (seen.has_leader != now.has_leader)
		return true;
	if (!now.has_leader)
		return false; // "no leader" is one state, whatever term ended
	return seen.term != now.term || seen.value != now.value || seen.epoch != now.epoch;
}

namespace {

Error
no_elections(std::string_view provider)
{
	return Error{Errc::invalid_argument, "",
	             "the " + std::string{provider} + " provider offers no leader election"};
}

} // namespace

// ---- Locker: a Locker of its own without elections ------------------------------

Result<Leadership>
Locker::campaign(std::string_view, std::string_view, const LeaseOptions &) noexcept
{
	return no_elections(provider());
}

Result<LeaderView>
Locker::leader(std::string_view) noexcept
{
	return no_elections(provider());
}

Result<LeaderView>
Locker::observe(std::string_view, const LeaderView &, std::chrono::milliseconds) noexcept
{
	return no_elections(provider());
}

namespace detail {

Result<bool>
Grant::proclaim(std::string_view) noexcept
{
	return Error{Errc::invalid_argument, "", "only an election's lease has a value to proclaim"};
}

Result<void>
LeaseEngine::proclaim(LeaseState &st, std::string_view value) noexcept
{
	try {
		bool expired = false;
		{
			std::lock_guard<std::mutex> lk(st.mu);
			if (st.lost || st.released)
				return Error{Errc::lost, "", "leadership of \"" + st.resource + "\" is over"};
			expired = Clock::now() >= st.deadline;
		}
		if (expired) { // past the local deadline: over, whatever the server says now
			Error e{Errc::lost, "", "leadership of \"" + st.resource + "\" passed its local deadline"};
			mark_lost(st, e);
			return e;
		}
		Result<bool> done = Error{Errc::internal, "", "no grant"};
		{
			std::lock_guard<std::mutex> lk(st.op_mu);
			if (st.grant)
				done = st.grant->proclaim(value);
		}
		if (!done)
			return done.error();
		if (!*done) {
			Error e{Errc::lost, "",
			        "leadership of \"" + st.resource + "\" term " + std::to_string(st.token) +
			            " is over: another term began, or it was resigned, broken or expired"};
			mark_lost(st, e);
			return e;
		}
		std::lock_guard<std::mutex> lk(st.mu);
		st.value = std::string{value};
		return {};
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

Result<Granted>
LockerBase::grant_leadership(std::string_view, std::string_view, const LeaseOptions &, const std::string &,
                             milliseconds)
{
	return no_elections(provider());
}

Result<LeaderView>
LockerBase::read_leader(std::string_view)
{
	return no_elections(provider());
}

Result<LeaderView>
LockerBase::next_leader(std::string_view, const LeaderView &, Clock::time_point)
{
	return no_elections(provider());
}

Result<Leadership>
LockerBase::campaign(std::string_view election, std::string_view value, const LeaseOptions &options) noexcept
{
	if (auto ok = check_label("value", value, max_value_bytes); !ok)
		return ok.error();
	if (options.mode != Mode::exclusive || options.limit != 0)
		return Error{Errc::invalid_argument, "22023", "an election has one leader: campaign with Mode::exclusive and limit 0"};
	try {
		std::string kept{value};
		Result<Lease> lease = lease_from(
		    election, options,
		    [&](const std::string &holder, milliseconds heartbeat) {
			    return grant_leadership(election, value, options, holder, heartbeat);
		    },
		    kept);
		if (!lease)
			return lease.error();
		return LeaseAccess::lead(std::move(*lease));
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

Result<LeaderView>
LockerBase::leader(std::string_view election) noexcept
{
	if (auto ok = constructed(); !ok)
		return ok.error();
	if (auto ok = check_resource(election); !ok)
		return ok.error();
	try {
		return read_leader(election);
	} catch (const std::exception &e) {
		return Error{Errc::internal, "", e.what()};
	} catch (...) {
		return Error{Errc::internal, "", "unknown exception"};
	}
}

// observe -- the provider's next_leader, with the rules every provider
// keeps: an unchanged view is a timeout, a lower term than seen is a stale
// read and never reported, and "no leader" carries the highest term known;
// terms compare only within an epoch (a view of another epoch counts anew)
Result<LeaderView>
LockerBase::observe(std::string_view election, const LeaderView &seen, milliseconds wait) noexcept
{
	if (auto ok = constructed(); !ok)
		return ok.error();
	if (auto ok = check_resource(election); !ok)
		return ok.error();
	if (wait < milliseconds{0})
		return Error{Errc::invalid_argument, "22023", "wait must not be negative"};
	try {
		const auto deadline = deadline_after(Clock::now(), wait);
		for (;;) {
			Result<LeaderView> view = next_leader(election, seen, deadline);
			if (!view)
				return view.error();
			const bool same_epoch = view->epoch == seen.epoch;
			bool stale = same_epoch && view->has_leader && view->term < seen.term;
			if (same_epoch && !view->has_leader)
				view->term = std::max(view->term, seen.term);
			if (!stale && changed(seen, *view))
				return view;
			if (Clock::now() >= deadline)
				return Error{Errc::timeout, "",
				             "election \"" + std::string{election} + "\" did not change within the wait"};
			if (stale) // a lagging replica: let it catch up rather than spin
				std::this_thread::sleep_for(std::min(milliseconds{50}, wait));
		}
	} catch (const std::exception &e) {
		return Error{Errc::internal, "", e.what()};
	} catch (...) {
		return Error{Errc::internal, "", "unknown exception"};
	}
}

} // namespace detail

// ---- Leadership -----------------------------------------------------------------

std::string
Leadership::value() const
{
	if (!lease_.state_)
		return {};
	std::lock_guard<std::mutex> lk(lease_.state_->mu);
	return lease_.state_->value;
}

Result<void>
Leadership::proclaim(std::string_view value) noexcept
{
	if (auto ok = detail::check_label("value", value, max_value_bytes); !ok)
		return ok.error();
	if (!lease_.state_ || !lease_.engine_)
		return Error{Errc::lost, "", "empty leadership"};
	return lease_.engine_->proclaim(*lease_.state_, value);
}

// ---- ElectionObserver -----------------------------------------------------------

struct ElectionObserver::State {
	Locker *locker = nullptr;
	std::string election;
	std::function<void(const LeaderView &)> on_change;
	std::function<void(const Error &)> on_error;
	ObserverOptions options;

	mutable std::mutex mu;
	std::condition_variable stop_cv;
	bool stopping = false;
	LeaderView current;
	std::thread thread;

	void run() noexcept;
	// sleep up to d; false when stopping
	bool pause(std::chrono::milliseconds d)
	{
		std::unique_lock<std::mutex> lk(mu);
		stop_cv.wait_for(lk, d, [&] { return stopping; });
		return !stopping;
	}
	bool stopped() const
	{
		std::lock_guard<std::mutex> lk(mu);
		return stopping;
	}
	void report(const LeaderView &view)
	{
		{
			std::lock_guard<std::mutex> lk(mu);
			current = view;
		}
		try {
			on_change(view);
		} catch (...) {
			// a throwing callback must not end the follower
		}
	}
	void fail(const Error &error)
	{
		if (!on_error)
			return;
		try {
			on_error(error);
		} catch (...) {
		}
	}
};

// run -- the first view from leader(), then one observe after another
void
ElectionObserver::State::run() noexcept
{
	bool reported = false;
	LeaderView seen;
	while (!stopped()) {
		Result<LeaderView> view =
		    reported ? locker->observe(election, seen, options.poll) : locker->leader(election);
		if (view) {
			seen = *view;
			reported = true;
			report(seen);
			continue;
		}
		if (view.error().code == Errc::timeout)
			continue;
		fail(view.error());
		if (!pause(options.retry))
			break;
	}
}

Result<std::unique_ptr<ElectionObserver>>
ElectionObserver::start(Locker &locker, std::string_view election,
                        std::function<void(const LeaderView &)> on_change,
                        std::function<void(const Error &)> on_error, ObserverOptions options) noexcept
{
	if (auto ok = detail::check_resource(election); !ok)
		return ok.error();
	if (!on_change)
		return Error{Errc::invalid_argument, "", "on_change must be a callable"};
	if (options.poll.count() <= 0 || options.retry.count() <= 0)
		return Error{Errc::invalid_argument, "", "poll and retry must be positive"};
	try {
		auto state = std::make_shared<State>();
		state->locker = &locker;
		state->election = std::string{election};
		state->on_change = std::move(on_change);
		state->on_error = std::move(on_error);
		state->options = options;
		state->thread = std::thread([state] { state->run(); });
		return std::unique_ptr<ElectionObserver>{new ElectionObserver(state)};
	} catch (const std::exception &e) {
		return Error{Errc::internal, "", e.what()};
	}
}

ElectionObserver::~ElectionObserver()
{
	if (!state_)
		return;
	{
		std::lock_guard<std::mutex> lk(state_->mu);
		state_->stopping = true;
	}
	state_->stop_cv.notify_all();
	if (state_->thread.joinable())
		state_->thread.join();
}

LeaderView
ElectionObserver::current() const
{
	std::lock_guard<std::mutex> lk(state_->mu);
	return state_->current;
}

} // namespace pglease
