// pglease/election.hpp -- leader election on any provider: what an election
// shows (LeaderView), the leader's guard (Leadership: a Lease whose token is
// the term), and a follower's thread (ElectionObserver).
//
// An election is a lease with a value: campaigning is acquiring it (FIFO
// where the provider queues), the term is its fencing token, resigning is
// releasing it.  Locker::campaign / leader / observe (pglease/locker.hpp)
// are the calls; docs/election.md says how each provider keeps an election.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "pglease/error.hpp"
#include "pglease/lease.hpp"
#include "pglease/result.hpp"

namespace pglease {

class Locker;

/// The longest value a leader may publish, in bytes (the extension's
/// LEASE_MAX_VALUE_BYTES); valid UTF-8 without NUL bytes, like a holder.
inline constexpr std::size_t max_value_bytes = 1024;

/// What an election shows at one moment.
struct LeaderView {
	/// false: nobody leads (never elected, resigned, or expired with nobody
	/// taking over).
	bool has_leader = false;
	/// The leader's published value (campaign's, then proclaim's); empty
	/// when nobody leads.
	std::string value;
	/// The leader's term: its fencing token, strictly increasing per
	/// election within one epoch.  With no leader, the highest term this
	/// view knows of in its epoch (the one that ended; 0 when none), so a
	/// follower never goes back.
	std::int64_t term = 0;
	/// When the term began, by the provider's clock; the epoch where the
	/// provider does not record it (etcd).
	std::chrono::system_clock::time_point since{};
	/// Which life of the election's term counter the term belongs to: terms
	/// are ordered only within one epoch.  Redis names one when a campaign
	/// finds its counter new (a server restarted without its data starts
	/// counting at 1 again, in a new epoch); empty where terms never start
	/// again (PostgreSQL, etcd, ZooKeeper, memory) and on Redis before the
	/// first campaign.  Opaque text.
	std::string epoch;
};

/// Whether a follower holding `seen` must be told about `now`: a leader
/// against none or none against a leader, or another term, value or epoch.
[[nodiscard]] bool changed(const LeaderView &seen, const LeaderView &now) noexcept;

/// A won campaign.  It is a Lease in every respect (auto-renewal, the
/// conservative local deadline, on_lost exactly once, the cancel token) and
/// resigns in its destructor.  Move-only.
class Leadership {
public:
	Leadership(Leadership &&) noexcept = default;
	Leadership &operator=(Leadership &&) noexcept = default;
	Leadership(const Leadership &) = delete;
	Leadership &operator=(const Leadership &) = delete;
	~Leadership() = default;

	/// The term: the lease's fencing token.  Pass it with every write the
	/// leader makes (on PostgreSQL, lease.fence(election, term)).
	[[nodiscard]] std::int64_t term() const noexcept { return lease_.token(); }
	[[nodiscard]] const std::string &election() const noexcept { return lease_.resource(); }
	/// The value last published (campaign's, or the last successful proclaim's).
	[[nodiscard]] std::string value() const;
	/// Publish a new value, only while this term is the current one: the
	/// provider compares the term in the same step as the write.
	/// Errc::lost (and on_lost fires) when the term is over;
	/// Errc::invalid_argument for a value that is not a label of at most
	/// max_value_bytes.
	Result<void> proclaim(std::string_view value) noexcept;
	/// Give up leadership now (the destructor does the same).
	Result<void> resign() noexcept { return lease_.release(); }

	[[nodiscard]] bool valid() const noexcept { return lease_.valid(); }
	[[nodiscard]] std::chrono::milliseconds remaining() const noexcept { return lease_.remaining(); }
	Result<void> renew() noexcept { return lease_.renew(); }
	void on_lost(std::function<void(const Error &)> callback) noexcept
	{
		lease_.on_lost(std::move(callback));
	}
	[[nodiscard]] CancelToken cancel_token() const noexcept { return lease_.cancel_token(); }
	/// The lease itself, for code written against Lease.
	[[nodiscard]] Lease &lease() noexcept { return lease_; }
	[[nodiscard]] const Lease &lease() const noexcept { return lease_; }

private:
	friend struct detail::LeaseAccess;
	explicit Leadership(Lease lease) noexcept : lease_(std::move(lease)) {}
	Lease lease_;
};

/// How an ElectionObserver calls observe.
struct ObserverOptions {
	/// The longest single observe call: how soon the thread notices stop.
	std::chrono::milliseconds poll{std::chrono::seconds{1}};
	/// Wait after a failed observe before trying again.
	std::chrono::milliseconds retry{std::chrono::milliseconds{200}};
};

/// A follower's thread: calls on_change with every view that differs from
/// the last one it reported (the first call: the view at start), in order,
/// never a lower term of the same epoch; on_error with every failed observe
/// (it retries after a backoff).  Callbacks run on the observer's thread, one
/// at a time.  The destructor stops the thread within about `poll` and joins
/// it; call it from outside the callbacks.
class ElectionObserver {
public:
	/// Start observing.  The locker must outlive the observer.
	/// Errc::invalid_argument for a bad election name or empty on_change.
	static Result<std::unique_ptr<ElectionObserver>> start(Locker &locker, std::string_view election,
	                                                       std::function<void(const LeaderView &)> on_change,
	                                                       std::function<void(const Error &)> on_error = {},
	                                                       ObserverOptions options = {}) noexcept;
	~ElectionObserver();
	ElectionObserver(const ElectionObserver &) = delete;
	ElectionObserver &operator=(const ElectionObserver &) = delete;

	/// The last view reported to on_change.
	[[nodiscard]] LeaderView current() const;

	struct State;

private:
	explicit ElectionObserver(std::shared_ptr<State> state) noexcept : state_(std::move(state)) {}
	std::shared_ptr<State> state_;
};

} // namespace pglease
