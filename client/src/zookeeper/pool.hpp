// zookeeper/pool.hpp -- the sessions a locker's acquires run on: the idle
// sessions of released grants (SessionPool), and the one session an acquire
// owns until it becomes its grant's (Owned).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "zookeeper/session.hpp"

namespace pglease::detail::zookeeper {

/// The sessions of cleanly released grants, kept open for the next acquire
/// with the same TTL (a session's timeout is its lease's TTL): a grant then
/// costs no createSession and closeSession, two of the five writes to the
/// transaction log it cost otherwise.  A session is reused only while
/// connected and not expired; it holds no node when pooled.
class SessionPool {
public:
	explicit SessionPool(std::size_t max_idle) : max_idle_(max_idle) {}
	~SessionPool();
	SessionPool(const SessionPool &) = delete;
	SessionPool &operator=(const SessionPool &) = delete;

	/// An idle session with this TTL, still connected and not expired, or
	/// null; the stale ones met on the way are disposed of.
	std::unique_ptr<Session> take(milliseconds ttl) noexcept;
	/// Keep session for the next acquire (at most max_idle), else dispose of it.
	void give(std::unique_ptr<Session> session, milliseconds ttl) noexcept;

private:
	const std::size_t max_idle_;
	std::mutex mu_;
	std::vector<std::pair<milliseconds, std::unique_ptr<Session>>> idle_;
};

/// A session that is disposed of (closed without waiting) however the scope
/// ends, unless moved out.
struct Owned {
	std::unique_ptr<Session> session;
	Owned() = default;
	Owned(const Owned &) = delete;
	Owned &operator=(const Owned &) = delete;
	~Owned() { Session::dispose(std::move(session)); }
	Session *operator->() const noexcept { return session.get(); }
	Session &operator*() const noexcept { return *session; }
};

} // namespace pglease::detail::zookeeper
