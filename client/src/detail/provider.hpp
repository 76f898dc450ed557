// detail/provider.hpp -- what a provider implements, and the machinery every
// provider shares: the lease engine (renewal thread, loss reporting, the
// per-thread no-nested rule) and LockerBase (argument checks, holder labels,
// turning a grant into a Lease).
//
// A provider derives from LockerBase (detail/locker_base.hpp) and implements
// grant(): take
// the resource (waiting at most options.wait), returning a Grant object that
// knows how to renew and release exactly that grant.  Everything else a
// Lease does is here, in locker_base.cpp, engine.cpp and lease.cpp, once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "detail/locker_base.hpp"
#include "pglease/lease.hpp"
#include "pglease/locker.hpp"

namespace pglease::detail {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// from + d, saturating at Clock::time_point::max(): a wait or TTL of
/// milliseconds::max() means "as long as the clock goes", never a deadline in
/// the past.  Every provider computes its deadlines with it.
[[nodiscard]] Clock::time_point deadline_after(Clock::time_point from, milliseconds d) noexcept;
/// a + b for non-negative durations, saturating at milliseconds::max().
[[nodiscard]] milliseconds saturating_add(milliseconds a, milliseconds b) noexcept;

/// A resource name or holder label every provider can carry unchanged:
/// at most max_bytes bytes of valid UTF-8 without NUL bytes (and, for a
/// resource, not empty).  Errc::invalid_argument (22023) naming `what`.
[[nodiscard]] Result<void> check_label(std::string_view what, std::string_view value,
                                       std::size_t max_bytes) noexcept;
/// check_label for a resource name (max_resource_bytes, not empty).
[[nodiscard]] Result<void> check_resource(std::string_view resource) noexcept;

/// One grant, as its provider holds it.  renew and release may be called from
/// different threads, never at the same time for one grant (LeaseState::op_mu).
class Grant {
public:
	virtual ~Grant() = default;
	/// Extend the grant to ttl from now.  true: extended; false: definitely
	/// no longer held (lost at once); an error: unknown (retried until the
	/// local deadline; Errc::lost also ends it at once).
	virtual Result<bool> renew(milliseconds ttl) noexcept = 0;
	/// End the grant.  true: ended; false: it was no longer held.
	virtual Result<bool> release() noexcept = 0;
	/// Whether a release that failed for a reason that may pass
	/// (is_retryable) is tried again (release_again): only where a release
	/// names one exact grant, so that repeating it is safe.  Default: no.
	[[nodiscard]] virtual bool repeats_release() const noexcept;
	/// Try again a release that failed for a reason that may pass, returning
	/// by bound (the lease's local deadline) even if the server freezes.
	/// nullopt: no try can end by bound (or repeats_release() is false).
	virtual std::optional<Result<bool>> release_again(Clock::time_point bound) noexcept;
	/// An election's grant: publish value while this grant is the current
	/// one, compared in the same server-side step.  true: published; false:
	/// not current (lost at once); an error: unknown.  Default (a lock's
	/// grant): Errc::invalid_argument.
	virtual Result<bool> proclaim(std::string_view value) noexcept;
};

/// What grant() returns: the token (0 when the provider has none), the grant,
/// and the local deadline: the send time of the request that won, plus the
/// TTL, minus the provider's clock-drift allowance (Redlock).  provisional:
/// the server holds the grant for less than the TTL (Redis: min(ttl, grace),
/// so that a grant nobody received ends soon), deadline counting that; one
/// renewal extends it to the TTL, which the engine sends at half the time
/// left -- with auto_renew or not, and at the latest when the lease is
/// detached or its locker ends -- so a short lease never pays for it.
struct Granted {
	std::int64_t token = 0;
	std::unique_ptr<Grant> grant;
	Clock::time_point deadline;
	bool provisional = false;
};

/// The state of one Lease, shared by the guard and the renewal thread.
struct LeaseState {
	std::string resource;
	std::string holder; // the label the grant is stored under (LockerBase::holder_for)
	std::int64_t token = 0;
	milliseconds ttl{0};
	milliseconds heartbeat{0};
	milliseconds drift{0}; // subtracted from every renewal's deadline

	std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);

	std::mutex mu; // guards the fields below
	Clock::time_point deadline;
	Clock::time_point next_renew;
	bool lost = false;
	bool released = false;
	bool renewing = false; // the renewal thread's call is in flight
	bool provisional = false; // held for less than the TTL until a renewal (Granted::provisional)
	bool auto_renew = true;   // renewed every heartbeat; without it, tracked only while provisional
	Error last_failure;    // the last renewal's error, for the loss at the deadline
	std::string value;     // an election's published value
	std::function<void(const Error &)> on_lost;

	std::mutex op_mu; // one renew or release of the grant at a time
	std::unique_ptr<Grant> grant;
};

/// The renewal thread of one Locker and what a Lease does to its state.
/// The thread only schedules: each renewal runs in a thread of its own, so
/// a call stuck on one grant (a silent server, a connect waiting out its
/// timeout) delays no other lease, and the thread declares a lease lost at
/// its local deadline whatever its renewal in flight is doing.  Always
/// owned by a shared_ptr (a renewal's thread keeps its engine).
class LeaseEngine : public std::enable_shared_from_this<LeaseEngine> {
public:
	LeaseEngine() = default;
	~LeaseEngine() { stop(); }
	LeaseEngine(const LeaseEngine &) = delete;
	LeaseEngine &operator=(const LeaseEngine &) = delete;

	void track(const std::shared_ptr<LeaseState> &state);
	void stop() noexcept;
	Result<void> renew_now(LeaseState &st) noexcept;
	Result<void> release(LeaseState &st) noexcept;
	/// An election's proclaim: false from the grant is a loss.
	Result<void> proclaim(LeaseState &st, std::string_view value) noexcept;
	/// Report a lost lease once: flag, cancel token, callback.
	static void mark_lost(LeaseState &st, const Error &error) noexcept;

private:
	// A renewal's thread; done once it no longer needs the engine's lock.
	struct Worker {
		std::thread thread;
		std::shared_ptr<std::atomic<bool>> done;
	};

	void renew_loop() noexcept;
	void confirm_provisional(const std::vector<std::weak_ptr<LeaseState>> &leases) noexcept;
	void start_renewal(const std::shared_ptr<LeaseState> &st) noexcept;
	void reap_workers() noexcept;
	static void lose_if_expired(LeaseState &st) noexcept;

	std::mutex mu_;
	std::condition_variable cv_;
	std::vector<std::weak_ptr<LeaseState>> leases_;
	bool stopping_ = false;
	std::thread renewer_;
	Clock::time_point sleeps_until_ = Clock::time_point::min(); // the loop's next wake, while it sleeps
	std::vector<Worker> workers_; // renewals' threads not joined yet (under mu_)
};

/// A new locker as a provider's factory returns it: Errc::internal when its
/// construction failed.
template <class L>
Result<std::unique_ptr<Locker>>
handed_out(std::unique_ptr<L> locker)
{
	if (auto ok = locker->constructed(); !ok)
		return ok.error();
	return std::unique_ptr<Locker>{std::move(locker)};
}

/// A provider linked in as a component registers its URL scheme here (from a
/// static initializer of its library); connect() looks schemes up.  A factory
/// may throw: connect() turns an exception into Errc::internal, in one place
/// for every provider.
using ProviderFactory = Result<std::unique_ptr<Locker>> (*)(std::string_view url,
                                                            const ClientOptions &options);
bool register_provider(std::string_view scheme, ProviderFactory factory) noexcept;

} // namespace pglease::detail
