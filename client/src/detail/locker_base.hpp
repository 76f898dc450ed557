// detail/locker_base.hpp -- LockerBase: the half of a Locker every provider
// shares (argument checks, holder labels, turning a grant into a Lease); the
// provider contract every locker implements, PostgreSQL's as the others'.
// Private to the library, like the machinery behind it (Grant, the lease
// engine: detail/provider.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "pglease/lease.hpp"
#include "pglease/locker.hpp"
#include "pglease/options.hpp"
#include "pglease/result.hpp"

namespace pglease::detail {

struct Granted;
struct LeaseState;
class LeaseEngine;

/// The one friend of Lease and Leadership (pglease/lease.hpp): how the
/// library makes them and reaches a lease's state.
struct LeaseAccess {
	static Lease make(std::shared_ptr<LeaseEngine> engine, std::shared_ptr<LeaseState> state) noexcept
	{
		return Lease{std::move(engine), std::move(state)};
	}
	static Leadership lead(Lease lease) noexcept { return Leadership{std::move(lease)}; }
	static LeaseState *state(const Lease &lease) noexcept { return lease.state_.get(); }
};

/// The common half of every Locker: acquire() checks the options and the
/// no-nested rule, resolves the heartbeat, calls the provider's grant(), and
/// hands out the Lease.
class LockerBase : public Locker {
public:
	Result<Lease> acquire(std::string_view resource, const LeaseOptions &options = {}) noexcept override;
	Result<Lease> try_acquire(std::string_view resource, LeaseOptions options = {}) noexcept override;
	/// The token-level calls: the arguments are checked here, once for every
	/// provider (resource as for acquire, token positive, ttl positive and at
	/// most max_ttl(), holder a label as for acquire and not empty), then
	/// renew_by_token / release_by_token run.
	Result<bool> renew(std::string_view resource, std::int64_t token, std::string_view holder,
	                   std::chrono::milliseconds ttl) noexcept final;
	Result<bool> release(std::string_view resource, std::int64_t token,
	                     std::string_view holder) noexcept final;
	Result<bool> renew(std::string_view resource, std::int64_t token,
	                   std::chrono::milliseconds ttl) noexcept final;
	Result<bool> release(std::string_view resource, std::int64_t token) noexcept final;
	/// The election calls: arguments checked here, once for every provider
	/// (the election as a resource, the value as a label of at most
	/// max_value_bytes, the options as acquire's), then grant_leadership /
	/// read_leader / next_leader run.  observe turns an unchanged view into
	/// Errc::timeout and never reports a term below seen.term.
	Result<Leadership> campaign(std::string_view election, std::string_view value,
	                            const LeaseOptions &options = {}) noexcept final;
	Result<LeaderView> leader(std::string_view election) noexcept final;
	Result<LeaderView> observe(std::string_view election, const LeaderView &seen,
	                           std::chrono::milliseconds wait) noexcept final;

	/// Errc::internal when construction failed, else success.  Every call
	/// above answers it first; a provider with state of its own adds to it.
	[[nodiscard]] virtual Result<void> constructed() const noexcept;

protected:
	/// Holder labels of this locker are "pglease@host:pid:RANDOM:k" (64 random bits).
	LockerBase() noexcept;
	~LockerBase() override;

	/// Take the resource within options.wait (Errc::timeout if not granted);
	/// holder is the label to store (holder_for: options.holder with 64
	/// random bits, as given with reclaim, or a fresh label); heartbeat is
	/// how often the grant will be renewed (options.heartbeat, or TTL/3 when
	/// that is 0), for a provider that must keep a queued claim alive.  May
	/// throw: acquire() turns an exception into Errc::internal, in one place
	/// for every provider.
	virtual Result<Granted> grant(std::string_view resource, const LeaseOptions &options,
	                              const std::string &holder, std::chrono::milliseconds heartbeat) = 0;
	/// The clock-drift allowance subtracted from each renewal's deadline.
	[[nodiscard]] virtual std::chrono::milliseconds drift(std::chrono::milliseconds ttl) const noexcept;
	/// The longest TTL this provider can hold (default: no limit).  A longer
	/// one is refused before any I/O, with a message naming this maximum.
	[[nodiscard]] virtual std::chrono::milliseconds max_ttl() const noexcept;
	/// renew / release of the grant (resource, token) after the checks of
	/// renew() / release(); true: done, false: not the current grant, or (a
	/// holder given) not that holder's.  holder empty: any holder's (the
	/// token-only calls); else it is matched atomically with the change.
	/// Only the current holder's grant may be renewed or released.  May throw
	/// (turned into Errc::internal).  Default: Errc::invalid_argument, the
	/// provider cannot name a grant by its token.
	virtual Result<bool> renew_by_token(std::string_view resource, std::int64_t token,
	                                    std::string_view holder, std::chrono::milliseconds ttl);
	virtual Result<bool> release_by_token(std::string_view resource, std::int64_t token,
	                                      std::string_view holder);
	/// Elections (docs/election.md), for a provider with
	/// capabilities().election.  grant_leadership: grant() with `value` stored
	/// with the grant, so read_leader sees it; the Grant's proclaim() changes
	/// it while the grant is current.  read_leader: the current view, one
	/// round trip.  next_leader: block until the election's view differs
	/// from `seen` (changed()) or `deadline`, by the provider's push
	/// mechanism, and return the view then (unchanged at the deadline).  All
	/// may throw (Errc::internal).  Defaults: Errc::invalid_argument, "no
	/// elections".
	virtual Result<Granted> grant_leadership(std::string_view election, std::string_view value,
	                                         const LeaseOptions &options, const std::string &holder,
	                                         std::chrono::milliseconds heartbeat);
	virtual Result<LeaderView> read_leader(std::string_view election);
	virtual Result<LeaderView> next_leader(std::string_view election, const LeaderView &seen,
	                                       std::chrono::steady_clock::time_point deadline);
	/// Errc::invalid_argument when ttl is not positive or above max_ttl().
	[[nodiscard]] Result<void> check_ttl(std::chrono::milliseconds ttl) const;

	[[nodiscard]] const std::string &holder_prefix() const noexcept { return holder_prefix_; }
	[[nodiscard]] const std::shared_ptr<LeaseEngine> &engine() const noexcept { return engine_; }
	/// The state behind a Lease (null for an empty one), for a provider's own
	/// calls on a lease, such as PostgreSQL's fenced writes.
	[[nodiscard]] static LeaseState *state_of(const Lease &lease) noexcept;

private:
	/// acquire's checks and bookkeeping around a grant: options, the
	/// no-nested rule, the holder label; `take` is grant() or
	/// grant_leadership(), called with the holder and the heartbeat.
	using Take =
	    std::function<Result<Granted>(const std::string &holder, std::chrono::milliseconds heartbeat)>;
	Result<Lease> lease_from(std::string_view resource, const LeaseOptions &options, const Take &take,
	                         const std::string &value = {}) noexcept;
	/// LeaseOptions::mode and limit: valid together, and what capabilities() has.
	[[nodiscard]] Result<void> check_sharing(const LeaseOptions &options) const;
	/// LeaseOptions::strategy and session_bound: what capabilities() has.
	[[nodiscard]] Result<void> check_strategy(const LeaseOptions &options) const;
	/// The label a grant of these options is stored under (LeaseOptions::reclaim).
	Result<std::string> holder_for(const LeaseOptions &options);
	[[nodiscard]] Result<void> check_token_call(std::string_view resource, std::int64_t token) const;
	Result<bool> renew_checked(std::string_view resource, std::int64_t token, std::string_view holder,
	                           std::chrono::milliseconds ttl) noexcept;
	Result<bool> release_checked(std::string_view resource, std::int64_t token,
	                             std::string_view holder) noexcept;

	std::shared_ptr<LeaseEngine> engine_; // null when construction failed
	std::string holder_prefix_;
	std::atomic<unsigned long long> acquires_{0};
};

} // namespace pglease::detail
