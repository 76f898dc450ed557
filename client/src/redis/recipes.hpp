// redis/recipes.hpp -- one try of each Redis recipe's request, as the
// locker's wait loop (redis/locker.cpp) runs it: an exclusive lock
// (redis/lock.cpp), a reader (redis/shared.cpp), a permit
// (redis/permits.cpp); a campaign is redis/election.hpp's.  Each is one
// script, one round trip; its answer (integer_of): > 0 the token granted,
// <= 0 -(ms until the resource may be free).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "redis/keys.hpp"
#include "redis/node.hpp"

namespace pglease::detail::redis {

/// How long a waiting writer's mark holds later readers back after its last
/// poll: a few of its polls (at most a second apart), so a writer that
/// died waiting stops blocking readers soon.
inline constexpr std::chrono::milliseconds writer_mark{3000};

/// How long a waiter keeps its place in a lock's queue after its last poll
/// (lib/queue.lua's queue_beat, the same value): a waiter that died holds a
/// free lock back at most this long.  A queued waiter polls at least every queue_poll, so a live one
/// never loses its place to a slow wake-up.
inline constexpr std::chrono::milliseconds queue_beat{1500};
inline constexpr std::chrono::milliseconds queue_poll{400};

/// An exclusive lock for holder, ttl in ms as text.  mark: the writer's
/// mark to leave when refused (0: none, it will not wait); marked: this
/// request left one before.  A request that marks also keeps its place in
/// the lock's queue (queue_beat).
[[nodiscard]] Result<Reply> ask_lock(Node &node, const Keys &keys, std::string_view holder,
                                     std::string_view ttl, std::chrono::milliseconds mark, bool marked,
                                     std::chrono::milliseconds timeout) noexcept;
/// A writer that stops waiting takes its mark and its place back (best effort).
void withdraw_mark(Node &node, const Keys &keys, std::string_view holder,
                   std::chrono::milliseconds timeout) noexcept;

/// A reader's grant (Mode::shared); limit as the request gave it.
[[nodiscard]] Result<Reply> ask_shared(Node &node, const Keys &keys, std::string_view holder,
                                       std::string_view ttl, std::uint32_t limit,
                                       std::chrono::milliseconds timeout) noexcept;

/// A permit of a semaphore of limit.
[[nodiscard]] Result<Reply> ask_permit(Node &node, const Keys &keys, std::string_view holder,
                                       std::string_view ttl, std::uint32_t limit,
                                       std::chrono::milliseconds timeout) noexcept;

} // namespace pglease::detail::redis
