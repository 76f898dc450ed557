// detail/locker_base.cpp -- LockerBase: the half of a Locker every
// provider shares: the argument checks of every call, holder labels, the
// per-thread no-nested rule, and acquire, which turns a provider's grant
// into a Lease (detail/locker_base.hpp).
#include <unistd.h>

#include <algorithm>

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

} // namespace

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
		// a provisional grant's deadline counts from its own request already
		if (!granted->provisional)
			if (auto ok = confirm_after_wait(resource, options.ttl, drift(options.ttl), heartbeat, *granted);
			    !ok)
				return ok.error();

		auto state = std::make_shared<LeaseState>();
		state->resource = std::string{resource};
		state->holder = std::move(*holder);
		state->token = granted->token;
		state->ttl = options.ttl;
		state->heartbeat = heartbeat;
		state->drift = drift(options.ttl);
		state->deadline = granted->deadline;
		auto now = Clock::now();
		state->next_renew = std::min(deadline_after(now, heartbeat), granted->deadline);
		state->provisional = granted->provisional;
		state->auto_renew = options.auto_renew;
		if (granted->provisional) // extended to the TTL at half the time left
			state->next_renew = std::min(state->next_renew, now + (granted->deadline - now) / 2);
		state->value = value;
		state->grant = std::move(granted->grant);
		if (options.auto_renew || granted->provisional)
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
} // namespace pglease
