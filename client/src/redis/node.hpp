// redis/node.hpp -- one Redis node as the Redis and Redlock providers use it:
// a small pool of Connections and reconnect backoff while the node is
// unreachable.  Behind Sentinels (redis+sentinel://) the node is whichever
// is the master now: its address comes from redis/sentinel.hpp, every new
// connection checks ROLE, and a connection error or a READONLY reply
// forgets it, so the next connection asks the Sentinels again; and the
// Sentinels are asked again at most once a second (master_recheck) whether
// the master moved, since after SENTINEL FAILOVER the old master stays
// writable, with no error to its clients, until they reconfigure it.
//
// No recipe lives here (see redis/locker.cpp and redlock/locker.cpp).
//
// Locking: Node::mu_ guards the idle connections, the backoff state, the
// master's address and the random generator; a borrowed Connection belongs to one caller until it is
// given back, so no lock is held across a command.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "detail/backoff.hpp"
#include "pglease/options.hpp"
#include "redis/connection.hpp"
#include "redis/sentinel.hpp"

namespace pglease::detail::redis {

class Node {
public:
	/// command_timeout bounds each command unless a call names its own;
	/// every connection (the pool's and a subscriber's) AUTHs with
	/// credentials, over tls when it is set (rediss://, redlocks://).
	Node(Endpoint endpoint, int db, Credentials credentials, const ClientOptions &options,
	     std::chrono::milliseconds command_timeout, Tls tls = {});
	/// The master the Sentinels name (redis+sentinel://, no TLS), the same otherwise.
	Node(std::shared_ptr<Sentinels> sentinels, int db, Credentials credentials, const ClientOptions &options,
	     std::chrono::milliseconds command_timeout);
	Node(const Node &) = delete;
	Node &operator=(const Node &) = delete;

	/// The node's address (behind Sentinels: the master's last known one).
	[[nodiscard]] Endpoint endpoint() const;

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
	Result<Endpoint> target(Timeouts timeouts, std::chrono::steady_clock::time_point deadline) noexcept;
	Result<Connection> open_checked(const Endpoint &where, Timeouts timeouts) noexcept;
	void forget_master() noexcept;
	void recheck_master(std::chrono::milliseconds budget) noexcept;
	std::string where() const;

	std::shared_ptr<Sentinels> sentinels_;                 ///< null: a fixed node
	bool master_known_ = false;                            ///< behind Sentinels: endpoint_ is the master's
	std::chrono::steady_clock::time_point next_recheck_{}; ///< when to ask the Sentinels again
	Endpoint endpoint_;
	int db_;
	Credentials credentials_;
	Tls tls_;
	ClientOptions options_;
	Timeouts timeouts_;

	mutable std::mutex mu_;
	std::vector<Connection> idle_;
	std::chrono::steady_clock::time_point next_connect_{};
	Backoff backoff_;
	std::string last_error_;
};

} // namespace pglease::detail::redis
