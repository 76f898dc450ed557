// zookeeper/session.hpp -- one ZooKeeper session of the official C client
// (libzookeeper_mt), as the provider uses it: one per lease.
//
// Locking notes: the C client calls on_event from its own completion thread.
// Session::mu_ guards the event generation and the handle's closing; a
// watch or session event bumps the generation and wakes every waiter, who
// then looks at the state again (events carry no data this provider needs).
// close() joins the client's threads, so no callback runs after it and the
// Session may be freed; it must not be called from a callback.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <zookeeper/zookeeper.h>

#include "pglease/options.hpp"
#include "pglease/result.hpp"

namespace pglease::detail::zookeeper {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// The Error a ZooKeeper return code amounts to (what: the operation and path).
[[nodiscard]] Error error_of(int rc, const std::string &hosts, const std::string &what);

class Session {
public:
	/// Connect to hosts with a session timeout of ttl; Errc::unavailable if
	/// not connected within connect_timeout.
	static Result<std::unique_ptr<Session>> open(const std::string &hosts, milliseconds ttl,
	                                             milliseconds connect_timeout) noexcept;
	~Session() { close(); }
	Session(const Session &) = delete;
	Session &operator=(const Session &) = delete;

	/// End the session (the server deletes its ephemeral nodes at once when
	/// it hears of it; otherwise they go when the session expires).
	void close() noexcept;
	[[nodiscard]] bool closed() noexcept;
	/// The handle, for the zoo_* calls; null once closed.
	[[nodiscard]] zhandle_t *handle() noexcept { return zh_; }
	[[nodiscard]] const std::string &hosts() const noexcept { return hosts_; }
	[[nodiscard]] bool connected() noexcept;
	[[nodiscard]] bool expired() noexcept;
	/// The session timeout the server granted (zoo_recv_timeout).
	[[nodiscard]] milliseconds negotiated() noexcept;
	[[nodiscard]] std::int64_t id() noexcept;

	/// The count of events so far; wait_event waits for one more than seen.
	[[nodiscard]] std::uint64_t generation() noexcept;
	/// true: an event came after seen; false: until passed first.
	bool wait_event(std::uint64_t seen, Clock::time_point until) noexcept;
	/// Wait until connected (true) or expired or until passed (false).
	bool wait_connected(Clock::time_point until) noexcept;

	/// The watcher of the session and of every watch it sets (context: this).
	static void on_event(zhandle_t *zh, int type, int state, const char *path, void *context) noexcept;

private:
	explicit Session(std::string hosts) : hosts_(std::move(hosts)) {}

	std::string hosts_;
	zhandle_t *zh_ = nullptr; // set once in open(), cleared by close()
	std::mutex mu_;
	std::condition_variable cv_;
	std::uint64_t generation_ = 0;
};

/// The children of path (zoo_get_children).
[[nodiscard]] Result<std::vector<std::string>> children_of(Session &session, const std::string &path);

} // namespace pglease::detail::zookeeper
