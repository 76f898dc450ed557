// detail/backoff.hpp -- the jittered exponential backoff of every provider:
// how long to wait before the next connection attempt to an unreachable
// server (PostgreSQL's pool, a Redis node, an etcd endpoint) and between the
// tries of a waiting acquire (Redis, Redlock).
//
// Each delay is drawn uniformly from [d/2, d], d doubling from the first
// delay up to the cap, and is never below 1 ms: with a first delay of 0, an
// unreachable server would otherwise be retried in a tight loop.  The jitter
// spreads the retries of many clients that lost the same server at the same
// moment.  Not thread-safe: its owner holds its own lock around it.
#pragma once

#include <chrono>

namespace pglease::detail {

class Backoff {
public:
	Backoff(std::chrono::milliseconds first, std::chrono::milliseconds cap) noexcept;
	/// The delay to wait now, random in [d/2, d]; d then doubles up to the cap.
	[[nodiscard]] std::chrono::milliseconds next() noexcept;
	/// Back to the first delay (the server answered).
	void reset() noexcept;

private:
	std::chrono::milliseconds first_;
	std::chrono::milliseconds cap_;
	std::chrono::milliseconds current_;
};

} // namespace pglease::detail
