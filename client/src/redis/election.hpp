// redis/election.hpp -- what only an election does on Redis: a campaign, a
// leader's renewal, resignation and proclaim, reading the election's view,
// and waiting for it to change (redis/election.cpp).  The grant is the lock
// recipe's (redis/lock.cpp), with the value stored beside it.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <vector>
#include <string_view>

#include "pglease/election.hpp"
#include "pglease/result.hpp"
#include "redis/keys.hpp"
#include "redis/node.hpp"

namespace pglease::detail::redis {

/// One try of a campaign for holder (ttl in ms as text), value stored
/// beside the lock (campaign.lua); the answer as redis/recipes.hpp's.
[[nodiscard]] Result<Reply> ask_campaign(Node &node, const Keys &keys, std::string_view holder,
                                         std::string_view ttl, std::string_view value,
                                         std::chrono::milliseconds timeout) noexcept;

/// A leader's renewal (the lock and the value key) and resignation (both
/// deleted, candidates and observers told), of the grant "<term>:<holder>".
/// true: done; false: that grant is over.
[[nodiscard]] Result<bool> renew_leader(Node &node, const Keys &keys, std::string_view grant,
                                        std::chrono::milliseconds ttl,
                                        std::chrono::milliseconds timeout) noexcept;
[[nodiscard]] Result<bool> resign(Node &node, const Keys &keys, std::string_view grant,
                                  std::chrono::milliseconds timeout = {}) noexcept;

/// Set the election's value to `value` if the lock still holds `grant`
/// ("<term>:<holder>"), in one script, and publish the change.  true:
/// published; false: that grant is over.
[[nodiscard]] Result<bool> proclaim(Node &node, const Keys &keys, std::string_view grant,
                                    std::string_view value, std::chrono::milliseconds timeout) noexcept;

/// The election's view now, in one script (one round trip).
[[nodiscard]] Result<LeaderView> read_view(Node &node, const Keys &keys,
                                           std::chrono::milliseconds timeout) noexcept;

/// A subscription to an election's channel and when it was opened.
struct Subscription {
	Subscriber subscriber;
	std::chrono::steady_clock::time_point opened;
};

/// Subscriptions kept between observe calls, so a follower calling observe
/// in a loop reuses its channel's connection rather than opening one per
/// call.  At most max_idle are kept, none older than max_age (behind
/// Sentinel the master may have moved).  Thread-safe.
class Subscriptions {
public:
	static constexpr std::size_t max_idle = 16;
	static constexpr std::chrono::seconds max_age{30};

	/// A kept subscription to channel, or nullopt.
	[[nodiscard]] std::optional<Subscription> take(std::string_view channel) noexcept;
	/// Keep s for a later call (unless broken or too old).
	void keep(Subscription s) noexcept;

private:
	std::mutex mu_;
	std::vector<Subscription> idle_;
};

/// Block until the view differs from seen (pglease::changed) or deadline,
/// woken by the election's channel (a subscription from kept, or a new one),
/// the current grant's expiry, or a re-read every second; the view then.
/// Each read ends within grace.
[[nodiscard]] Result<LeaderView> next_view(Node &node, const Keys &keys, const LeaderView &seen,
                                           std::chrono::steady_clock::time_point deadline,
                                           std::chrono::milliseconds grace, Subscriptions &kept) noexcept;

} // namespace pglease::detail::redis
