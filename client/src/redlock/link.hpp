// redlock/link.hpp -- one Redlock node as a round asks it (redlock/round.hpp):
// a pipelined connection whose request is written at once and whose reply
// is read when poll(2) says it came, so that one thread asks every node at
// the same time (no thread per node, per call); and the node's reconnect
// backoff, which every link to it shares.
//
// Pipelined: a round may end before a node answered (a majority answered
// first).  Its reply then stays owed on the link, and is read and dropped
// ahead of the next one (Redis answers a connection's commands in order).
// A reply owed past the deadline of the round that asked for it means the
// node did not answer in time: the link closes and the node backs off, as
// when a round's deadline passes without its reply.
//
// On a new connection the TLS handshake (redlocks://) goes step by step in
// the round's poll, every node's at once; AUTH and SELECT (when the URL asks
// for them) go in the same write as the request, and a script goes whole (EVAL) the first
// time on each connection, EVALSHA after; a NOSCRIPT (SCRIPT FLUSH) is
// answered with the EVAL within the round.  A pooled connection found dead
// (a restarted node) buys one fresh connection within the round, as
// redis/node.hpp does.  Errors name the node; never the password.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "detail/backoff.hpp"
#include "pglease/options.hpp"
#include "redis/connection.hpp"
#include "redis/endpoint.hpp"

namespace pglease::detail::redlock {

using redis::Deadline;
using redis::Reply;
using redis::Script;

/// One node of a redlock:// URL: where and how to log in, and its reconnect
/// backoff (ClientOptions::backoff_initial to backoff_max): while it runs,
/// a round gets Errc::unavailable from this node at once.
class Node {
public:
	Node(redis::Endpoint endpoint, int db, redis::Credentials credentials, redis::Tls tls,
	     const ClientOptions &options);
	Node(const Node &) = delete;
	Node &operator=(const Node &) = delete;

	[[nodiscard]] const redis::Endpoint &endpoint() const noexcept { return endpoint_; }
	[[nodiscard]] int db() const noexcept { return db_; }
	[[nodiscard]] const redis::Credentials &credentials() const noexcept { return credentials_; }
	[[nodiscard]] const redis::Tls &tls() const noexcept { return tls_; }
	[[nodiscard]] std::chrono::milliseconds connect_timeout() const noexcept { return connect_timeout_; }

	/// Errc::unavailable (naming the last error) while the backoff runs.
	[[nodiscard]] Result<void> may_connect() noexcept;
	/// The node answered on a new connection: the backoff starts over.
	void answered() noexcept;
	/// The node could not be reached or did not answer in time.
	void unreachable(const Error &error) noexcept;

private:
	const redis::Endpoint endpoint_;
	const int db_;
	const redis::Credentials credentials_;
	const redis::Tls tls_;
	const std::chrono::milliseconds connect_timeout_;

	std::mutex mu_; // guards what follows
	Backoff backoff_;
	std::chrono::steady_clock::time_point next_connect_{};
	std::string last_error_;
};

/// One pipelined connection to a Node; one round at a time uses it.
class Link {
public:
	explicit Link(std::shared_ptr<Node> node) noexcept;
	Link(Link &&) = default;
	Link &operator=(Link &&) = default;

	/// Write the script's call on key with args, connecting first when there
	/// is no connection; by deadline.  A reply still owed from a round that
	/// ended early is taken first (see the banner).
	[[nodiscard]] Result<void> send(const Script &script, std::string_view key,
	                                const std::vector<std::string_view> &args, Deadline deadline) noexcept;

	/// The reply to what send wrote, once all of it came: reads what is
	/// there, never waits.  nullopt: not yet (poll fd()).  An error reply is a
	/// Reply; an Error is the node's failure (the link is closed then).
	[[nodiscard]] Result<std::optional<Reply>> receive(Deadline deadline) noexcept;

	/// The socket the reply comes on (-1: none), and what to poll it for
	/// (POLLOUT while a TLS handshake waits to write, else POLLIN).
	[[nodiscard]] int fd() const noexcept { return stream_ ? stream_->fd() : -1; }
	[[nodiscard]] short events() const noexcept;
	/// A new TLS connection is still shaking hands.
	[[nodiscard]] bool handshaking() const noexcept { return stream_ && stream_->handshaking(); }

	/// The round ends without the reply.  late: its deadline passed, so the
	/// node failed it (the link closes, the node backs off); else the reply
	/// is dropped when it comes.
	void abandon(bool late) noexcept;

	[[nodiscard]] const redis::Endpoint &endpoint() const noexcept { return node_->endpoint(); }

private:
	enum class What { auth, select, stale, request };
	struct Owed {
		What what;
		Deadline due; // the deadline of the round that asked
	};

	Result<void> settle(Deadline deadline);
	Result<void> connect(Deadline deadline);
	Result<void> write(Deadline deadline);
	Result<bool> shake_hands();
	void append(const std::vector<std::string_view> &argv);
	void append_request();
	[[nodiscard]] bool owes_request() const noexcept;
	Result<std::optional<Reply>> take(Reply reply);
	Result<std::optional<Reply>> read_replies(Deadline deadline);
	Result<std::optional<Reply>> retry_or_fail(std::string_view what, const Error &cause, Deadline deadline);
	Error failed(std::string_view what, const Error &cause, Deadline deadline);
	void close() noexcept;

	std::shared_ptr<Node> node_;
	std::unique_ptr<redis::Transport> stream_; // null: no connection
	std::unique_ptr<redisReader, redis::ReaderDeleter> reader_;
	std::deque<Owed> owed_;           // the replies still to come, in order
	std::vector<std::string> loaded_; // SHA-1s of the scripts EVALed on this connection
	std::string out_;                 // what the next write sends
	bool answered_ = false;           // a reply came on this connection
	bool fresh_ = false;              // connected within this round (no retry then)

	// the round's request, for the EVAL after a NOSCRIPT and a retry
	const Script *script_ = nullptr;
	std::string key_;
	std::vector<std::string> args_;
	Deadline due_{};
};

} // namespace pglease::detail::redlock
