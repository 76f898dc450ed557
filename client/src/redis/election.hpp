// redis/election.hpp -- what only an election does on Redis: a leader's
// proclaim, reading the election's view, and waiting for it to change
// (redis/election.cpp).  The grant itself (campaign, renew, resign) is the
// lock recipe's, with the value stored beside it (redis/locker.cpp).
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

/// A Lua function term_value(key, p, v) for the scripts that write an
/// election's value key (the campaign's, proclaim's): the key's new content
/// "<term>:<since>:<v>" for the term whose prefix is p ("<term>:"), keeping
/// that term's since, and the key's old content.
[[nodiscard]] const std::string &term_value_lua();

/// A Lua function keep_epoch(key, counter) for the campaign's script: a new
/// epoch (LeaderView::epoch) at key when the counter is about to start
/// from 1 or key is missing; else nothing.
[[nodiscard]] const std::string &epoch_lua();

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
