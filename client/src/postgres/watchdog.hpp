// postgres/watchdog.hpp -- a client-side bound on one database call.
//
// statement_timeout bounds a call only while the server runs: a frozen
// (SIGSTOPped, swapped-out, partitioned) server never sends the timeout's
// error, and libpq waits for it forever.  A CallDeadline shuts the
// connection's socket down when its call outlives the deadline, so the call
// fails at once (the connection is then dropped, never reused).
#pragma once

#include <chrono>
#include <cstdint>

namespace pglease::detail {

class CallDeadline {
public:
	/// Watch socket fd until this object goes; shut it down at now + limit.
	CallDeadline(int fd, std::chrono::milliseconds limit) noexcept;
	~CallDeadline();
	CallDeadline(const CallDeadline &) = delete;
	CallDeadline &operator=(const CallDeadline &) = delete;

	/// True when the deadline passed and the socket was shut down.
	[[nodiscard]] bool fired() const noexcept;

private:
	std::uint64_t id_ = 0; // 0: not watched (no socket, or no memory)
};

} // namespace pglease::detail
