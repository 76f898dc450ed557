// redis/grant.hpp -- what the Redis recipes share (redis/lock.cpp,
// shared.cpp, permits.cpp, election.cpp, and the locker that runs them,
// locker.cpp): a script's answer as an integer or an Error, a grant's
// renewal and release by its value, the grant object, and the bounds.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "detail/provider.hpp"
#include "redis/keys.hpp"
#include "redis/node.hpp"

namespace pglease::detail::redis {

/// The longest TTL: 2^53-1 ms (about 285,000 years).  PX takes a signed
/// 64-bit count of ms, but the acquire script answers a holder's PTTL
/// through a Lua number, exact only up to 2^53-1; and every deadline of a
/// lease is computed with deadline_after, so even this one never overflows.
inline constexpr milliseconds max_ttl{(std::int64_t{1} << 53) - 1};
/// The largest token (the acquire script's limit): 2^53-1.
inline constexpr std::int64_t max_token = (std::int64_t{1} << 53) - 1;

/// What each local deadline leaves out of ttl (grant.cpp says why).
[[nodiscard]] milliseconds margin_of(milliseconds ttl) noexcept;
/// What is left before deadline, at most cap (<= 0: nothing).
[[nodiscard]] milliseconds left_of(Clock::time_point deadline, milliseconds cap) noexcept;
/// A grant kind of the scripts ("lock", "shared", "limit:<N>") in words.
[[nodiscard]] std::string describe_kind(std::string_view kind);
/// A request's grant kind, as the scripts name it.
[[nodiscard]] std::string kind_of(const LeaseOptions &options);

/// The integer a lock script answered, or the Error it amounts to (its
/// own refusals: a damaged counter or lock, a mismatched mode or limit).
[[nodiscard]] Result<long long> integer_of(const Result<Reply> &reply, const Node &node, const Keys &keys);
/// A compare-and-act script's answer (integer_of): true when it acted (1).
[[nodiscard]] Result<bool> acted(const Result<Reply> &reply, const Node &node, const Keys &keys);

/// Renew a lock's, reader's or permit's grant by (resource, token): match is
/// "<token>:<holder>", compared whole (by_value) or by its "<token>:" part.
[[nodiscard]] Result<bool> renew_by_match(Node &node, const Keys &keys, std::string_view match, bool by_value,
                                          milliseconds ttl, milliseconds timeout = {}) noexcept;
/// Release likewise; waiters are told on the release channel.
[[nodiscard]] Result<bool> release_by_match(Node &node, const Keys &keys, std::string_view match,
                                            bool by_value, milliseconds timeout = {}) noexcept;

/// A grant's renewal or release by its whole value: a lock's with the lock
/// scripts, an election's with the scripts that extend or delete the value
/// key with the lock (and tell observers: redis/election.cpp).
[[nodiscard]] Result<bool> renew_grant(Node &node, const Keys &keys, bool election, std::string_view value,
                                       milliseconds ttl, milliseconds timeout) noexcept;
[[nodiscard]] Result<bool> release_grant(Node &node, const Keys &keys, bool election, std::string_view value,
                                         milliseconds timeout = {}) noexcept;

/// One grant, named by its value "<token>:<holder>"; valid_until is its
/// local deadline, and grace bounds each of its calls.
[[nodiscard]] std::unique_ptr<Grant> make_grant(std::shared_ptr<Node> node, Keys keys, bool election,
                                                std::string value, milliseconds grace,
                                                Clock::time_point valid_until);

} // namespace pglease::detail::redis
