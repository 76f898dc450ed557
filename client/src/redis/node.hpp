// redis/node.hpp -- one Redis node as the Redis and Redlock providers use it:
// a small pool of Connections and reconnect backoff while the node is
// unreachable.
//
// No recipe lives here (see redis/locker.cpp and redlock/locker.cpp).
//
// Locking: Node::mu_ guards the idle connections, the backoff state and the
// random generator; a borrowed Connection belongs to one caller until it is
// given back, so no lock is held across a command.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "detail/backoff.hpp"
#include "pglease/options.hpp"
#include "redis/connection.hpp"

namespace pglease::detail::redis {

class Node {
public:
	/// command_timeout bounds each command unless a call names its own;
	/// every connection (the pool's and a subscriber's) AUTHs with
	/// credentials, over tls when it is set (rediss://, redlocks://).
	Node(Endpoint endpoint, int db, Credentials credentials, const ClientOptions &options,
	     std::chrono::milliseconds command_timeout, Tls tls = {});
	Node(const Node &) = delete;
	Node &operator=(const Node &) = delete;

	[[nodiscard]] const Endpoint &endpoint() const noexcept { return endpoint_; }

	/// Run a script on a pooled connection.  Errc::unavailable when the node
	/// cannot be reached (at once while in reconnect backoff); an error reply
	/// comes back as a Reply for the caller to judge.  The whole call (a
	/// connect, the retry on a fresh connection after a stale pooled one)
	/// ends within timeout, or the command timeout when timeout is 0.
	[[nodiscard]] Result<Reply> eval(const Script &script, const std::vector<std::string_view> &keys,
	                                 const std::vector<std::string_view> &args,
	                                 std::chrono::milliseconds timeout = {}) noexcept;

	/// A Subscriber on channel (its own connection), unless in backoff; its
	/// connect and SUBSCRIBE each take at most timeout (when not 0).
	[[nodiscard]] Result<Subscriber> subscribe(std::string_view channel,
	                                           std::chrono::milliseconds timeout = {}) noexcept;

private:
	Result<Connection> borrow(std::chrono::milliseconds timeout, bool &reused) noexcept;
	void give_back(Connection connection) noexcept;
	void connected() noexcept;
	void unreachable(const Error &error) noexcept;
	Result<void> in_backoff() noexcept;

	Endpoint endpoint_;
	int db_;
	Credentials credentials_;
	Tls tls_;
	ClientOptions options_;
	Timeouts timeouts_;

	std::mutex mu_;
	std::vector<Connection> idle_;
	std::chrono::steady_clock::time_point next_connect_{};
	Backoff backoff_;
	std::string last_error_;
};

} // namespace pglease::detail::redis
