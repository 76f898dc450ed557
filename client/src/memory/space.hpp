// memory/space.hpp -- the in-memory provider's lock table (`memory:` URLs):
// a process-local LockSpace with the semantics of a lease server, and the
// process-wide registry of named spaces.
//
// Recipe: the PostgreSQL extension's, kept in one process.  A resource has
// grants, each with its own holder, token and expiry (steady_clock): one
// exclusive grant, or any number of shared ones, or up to `limit` permits of
// a semaphore (docs/shared-leases.md).  The same holder asking again gets the
// same token and a new expiry; others wait in one FIFO queue per resource,
// bounded by their wait (so a waiting writer holds back later readers);
// renew and release act only on the exact current, unexpired grant
// (resource, token).
//
// Tokens come from a process-local counter, one per space (see space.cpp):
// monotonic per resource and never reused while the process lives, and
// nothing more.  No durability and no distribution: durable = false,
// survives_failover = false, and only threads of this process exclude each
// other.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pglease/election.hpp"
#include "pglease/options.hpp"
#include "pglease/result.hpp"

namespace pglease::detail::memory {

/// How a request shares its resource: LeaseOptions::mode and limit.
struct Sharing {
	Mode mode = Mode::exclusive;
	std::uint32_t limit = 0;
};

/// A lock table shared by every memory Locker of one space.  Thread-safe;
/// no member throws.
class LockSpace {
public:
	LockSpace() = default;
	LockSpace(const LockSpace &) = delete;
	LockSpace &operator=(const LockSpace &) = delete;

	/// The token of a grant to holder, within wait (0: try once).  The same
	/// holder's current grant is extended and keeps its token.  Errc::timeout
	/// when not granted in time; Errc::invalid_argument for an empty resource
	/// or holder, ttl <= 0 or wait < 0, and (SQLSTATE LS003) for a limit
	/// other than the resource's grants' and waiters', or the same holder
	/// asking in another mode or limit than its grant's.
	Result<std::int64_t> acquire(std::string_view resource, std::string_view holder, Sharing sharing,
	                             std::chrono::milliseconds ttl, std::chrono::milliseconds wait) noexcept;
	/// acquire of an exclusive lock.
	Result<std::int64_t> acquire(std::string_view resource, std::string_view holder,
	                             std::chrono::milliseconds ttl, std::chrono::milliseconds wait) noexcept
	{
		return acquire(resource, holder, Sharing{}, ttl, wait);
	}
	/// acquire for an election: the grant carries value (a new grant, or the
	/// same holder's again, takes it), which leader() shows.
	Result<std::int64_t> campaign(std::string_view resource, std::string_view holder, std::string_view value,
	                              std::chrono::milliseconds ttl, std::chrono::milliseconds wait) noexcept;
	/// Set the value of (resource, token) if it is the current unexpired
	/// grant; false otherwise, nothing changed.
	Result<bool> proclaim(std::string_view resource, std::int64_t token, std::string_view value) noexcept;
	/// The election's view now.
	Result<LeaderView> leader(std::string_view resource) const noexcept;
	/// The view once it differs from seen (changed()), or at deadline; an
	/// unreleased grant's expiry counts as a change to "no leader".
	Result<LeaderView> next_leader(std::string_view resource, const LeaderView &seen,
	                               std::chrono::steady_clock::time_point deadline) noexcept;
	/// True, with expiry now + ttl, if (resource, token) is the current
	/// unexpired grant; false otherwise (an expired grant stays over).
	Result<bool> renew(std::string_view resource, std::int64_t token, std::chrono::milliseconds ttl) noexcept;
	/// True if this ended the current unexpired grant (the first waiter is
	/// woken); false otherwise.
	Result<bool> release(std::string_view resource, std::int64_t token) noexcept;
	/// Admin: end every current grant of resource whoever holds it
	/// (lease.break of the extension); true if there was one.  Its holder learns it at its
	/// next renew.
	bool break_grant(std::string_view resource) noexcept;
	/// Is (resource, token) the current unexpired grant?  For tests and
	/// introspection.
	[[nodiscard]] bool held(std::string_view resource, std::int64_t token) const noexcept;
	/// How many acquires wait for resource now.  For tests and introspection.
	[[nodiscard]] std::size_t waiters(std::string_view resource) const noexcept;

private:
	using Clock = std::chrono::steady_clock;

	/// One queued acquire, on its caller's stack; woken alone, so a release
	/// wakes exactly the next waiter and no herd.
	struct Waiter {
		std::condition_variable wake;
		Sharing sharing;
	};
	struct Grant {
		std::string holder;
		std::int64_t token = 0;
		Clock::time_point expiry;
		std::string value; // an election's published value
		std::chrono::system_clock::time_point since;
		Sharing sharing;
	};
	struct Entry {
		std::vector<Grant> grants; // in token order; one is over once its expiry has passed
		std::deque<Waiter *> queue; // arrival order; the front is the only one granted
	};
	using Entries = std::map<std::string, Entry, std::less<>>;
	class QueueSlot;

	static bool current(const Entry &entry, Clock::time_point now) noexcept;
	static void prune(Entry &entry, Clock::time_point now) noexcept;
	static bool admits(const Entry &entry, Sharing sharing) noexcept;
	static Grant *find(Entry &entry, std::int64_t token, Clock::time_point now) noexcept;
	static const char *conflict(const Entry &entry, std::string_view holder, Sharing sharing) noexcept;
	Result<std::int64_t> take(std::string_view resource, std::string_view holder, const std::string *value,
	                          Sharing sharing, std::chrono::milliseconds ttl,
	                          std::chrono::milliseconds wait) noexcept;
	LeaderView view_of(std::string_view resource, Clock::time_point now) const;
	std::int64_t granted(Entry &entry, std::string_view holder, const std::string *value, Sharing sharing,
	                     Clock::time_point now, std::chrono::milliseconds ttl);
	void wake_front(Entry &entry) noexcept;
	void drop_if_idle(Entries::iterator it, Clock::time_point now) noexcept;
	void sweep(Clock::time_point now) noexcept;

	mutable std::mutex mu_; // guards everything below
	/// Observers of elections (next_leader) sleep here; every grant,
	/// release, break and proclaim wakes them all.
	std::condition_variable changed_;
	/// An entry with no current grant and no waiter is idle: dropped when next
	/// touched, or by a sweep; one with a waiter is never dropped.
	Entries entries_;
	std::int64_t last_token_ = 0;
	/// Entries whose grant expired unreleased are dropped by a sweep once the
	/// table doubles (amortised O(1) per acquire), and never below this size.
	static constexpr std::size_t sweep_min = 1024;
	std::size_t sweep_at_ = sweep_min;
};

/// The process-wide space of that name: every `memory:` Locker of a process
/// shares the space "" (as every client of one Redis does), `memory:NAME`
/// names another.  A space lives as long as the process, so its tokens never
/// restart (space.cpp).  nullptr only when memory runs out.
[[nodiscard]] std::shared_ptr<LockSpace> lock_space(std::string_view name) noexcept;

} // namespace pglease::detail::memory
