// redis/connection.hpp -- one synchronous connection to a Redis node, and a
// subscriber connection for pub/sub wake-ups: the plumbing the Redis and
// Redlock providers stand on (docs/design.md#wire-formats).  RESP2 through
// hiredis's reader and formatter over a stream of our own (redis/transport.hpp:
// TCP, or TLS for rediss:// and redlocks://), one code path for both.
//
// No recipe lives here.  The providers implement the Redis distlock page's
// recipes (https://redis.io/docs/latest/develop/clients/patterns/distributed-locks/:
// SET NX PX with a random value, compare-and-delete release in Lua, Redlock's
// majority over N independent nodes) with Connection::eval; where their token
// comes from is said in their own banners.
//
// Nothing throws out of this folder: every call returns a Result.  An Error is
// Errc::unavailable when the node could not be reached or answered nothing in
// time (I/O error, timeout, EOF; the connection is then unusable until
// reconnect()), Errc::permission when TLS refused a certificate (the
// server's, or ours by the server), Errc::internal for what should not
// happen (protocol error, out of memory).  A Redis error reply ("-ERR ...") is not an Error: it is a Reply
// of kind error, for the caller to judge (error_from_reply maps it).
#pragma once

#include <chrono>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pglease/result.hpp"
#include "redis/endpoint.hpp"
#include "redis/transport.hpp"

struct redisReader; // hiredis; only connection.cpp includes its headers

namespace pglease::detail::redis {

/// How long a connect, and then each command, may take.  A command past its
/// timeout leaves the connection unusable (its reply may still be on the way).
struct Timeouts {
	std::chrono::milliseconds connect{1000};
	std::chrono::milliseconds command{1000};
};

/// An owned copy of one Redis reply (RESP2).
struct Reply {
	enum class Kind { nil, integer, status, error, string, array };

	Kind kind = Kind::nil;
	long long integer = 0;       ///< Kind::integer
	std::string text;            ///< Kind::status, Kind::error, Kind::string (binary-safe)
	std::vector<Reply> elements; ///< Kind::array

	[[nodiscard]] bool is_nil() const noexcept { return kind == Kind::nil; }
	[[nodiscard]] bool is_integer() const noexcept { return kind == Kind::integer; }
	[[nodiscard]] bool is_status() const noexcept { return kind == Kind::status; }
	[[nodiscard]] bool is_error() const noexcept { return kind == Kind::error; }
	[[nodiscard]] bool is_string() const noexcept { return kind == Kind::string; }
	[[nodiscard]] bool is_array() const noexcept { return kind == Kind::array; }
};

/// The Error for an error reply of endpoint: Errc::unavailable for the
/// transient ones (LOADING, BUSY, READONLY, MASTERDOWN, TRYAGAIN, CLUSTERDOWN),
/// Errc::permission for NOAUTH / WRONGPASS / NOPERM and for a script whose
/// user may not run one of its commands or reach one of its keys (Redis 7
/// answers those "ERR The user executing the script can't ..."),
/// Errc::internal otherwise.
[[nodiscard]] Error error_from_reply(const Reply &reply, const Endpoint &endpoint);

/// A Lua script and its SHA-1 (computed locally with OpenSSL: the same name
/// on every node, known before any server has seen the script).
class Script {
public:
	explicit Script(std::string source);
	[[nodiscard]] const std::string &source() const noexcept { return source_; }
	[[nodiscard]] const std::string &sha1() const noexcept { return sha1_; }

private:
	std::string source_;
	std::string sha1_;
};

struct ReaderDeleter {
	void operator()(redisReader *reader) const noexcept;
};

/// One blocking connection to one node.  Not thread-safe: one user at a time.
class Connection {
public:
	/// Connect (bounded by timeouts.connect; with tls, the handshake too),
	/// AUTH when credentials are given, then SELECT db when it is not 0.  A
	/// refused AUTH (any error reply: WRONGPASS, or a server without a
	/// password) is Errc::permission, whose message shows the server's words,
	/// never the password; so is a refused certificate (transport.hpp).  With
	/// tls and nothing to send, a PING: a server refusing our certificate
	/// under TLS 1.3 says so only after the handshake, and open() must tell.
	[[nodiscard]] static Result<Connection> open(Endpoint endpoint, Timeouts timeouts, int db = 0,
	                                             Credentials credentials = {}, Tls tls = {}) noexcept;

	/// False after an I/O error, timeout or EOF: reconnect() before the next command.
	[[nodiscard]] bool usable() const noexcept;
	[[nodiscard]] const Endpoint &endpoint() const noexcept { return endpoint_; }

	/// A fresh connection to the same node, same timeouts, credentials and db.
	[[nodiscard]] Result<void> reconnect() noexcept;

	/// Bound each later command by timeout instead (Redlock's per-node
	/// timeout depends on the TTL asked for); kept across reconnect().
	[[nodiscard]] Result<void> set_command_timeout(std::chrono::milliseconds timeout) noexcept;

	/// Run one command; every argument is binary-safe.
	[[nodiscard]] Result<Reply> command(std::initializer_list<std::string_view> argv) noexcept;
	[[nodiscard]] Result<Reply> command(const std::vector<std::string_view> &argv) noexcept;

	/// EVALSHA the script; on NOSCRIPT (never loaded, or SCRIPT FLUSH, or a
	/// restart) EVAL it, which also caches it on the server for the next time.
	/// Both together end by deadline (each command gets what is left;
	/// time_point::max(): each gets the command timeout).
	[[nodiscard]] Result<Reply> eval(const Script &script, const std::vector<std::string_view> &keys,
	                                 const std::vector<std::string_view> &args,
	                                 std::chrono::steady_clock::time_point deadline =
	                                     std::chrono::steady_clock::time_point::max()) noexcept;

private:
	friend class Subscriber;
	Connection(Endpoint endpoint, Timeouts timeouts, int db, Credentials credentials, Tls tls) noexcept;
	Result<void> connect() noexcept;
	Result<void> greet(Deadline connect_deadline) noexcept;
	Result<void> authenticate() noexcept;
	Result<void> select() noexcept;
	Result<Reply> run(const std::string_view *argv, std::size_t argc) noexcept;
	Result<std::optional<Reply>> next_reply(Deadline deadline) noexcept;
	Result<void> until(std::chrono::steady_clock::time_point deadline) noexcept;
	Error broken(std::string_view what, const Error &cause) noexcept;

	Endpoint endpoint_;
	Timeouts timeouts_;
	int db_ = 0;
	Credentials credentials_;
	Tls tls_;
	std::unique_ptr<Transport> stream_; ///< null: unusable (never connected, or broken)
	std::unique_ptr<redisReader, ReaderDeleter> reader_;
	bool answered_ = false; ///< a reply came on this stream (else an EOF hints at a TLS port)
};

/// A message published on a subscribed channel; or, when subscribed is
/// true, the server's confirmation of a SUBSCRIBE sent later (send()).
struct Message {
	std::string channel;
	std::string payload;
	bool subscribed = false;
};

/// A second connection, SUBSCRIBEd to one channel, to be woken when a holder
/// publishes a release instead of polling until the next retry.
class Subscriber {
public:
	/// (With credentials and tls: as Connection::open does; no SELECT,
	/// pub/sub channels belong to no database.)
	[[nodiscard]] static Result<Subscriber> open(Endpoint endpoint, Timeouts timeouts,
	                                             std::string_view channel, Credentials credentials = {},
	                                             Tls tls = {}) noexcept;

	/// The next message, or std::nullopt when none came within timeout (not an
	/// error: the subscription stays usable).  An I/O error or EOF is
	/// Errc::unavailable, and the subscriber must then be opened again.
	[[nodiscard]] Result<std::optional<Message>> wait(std::chrono::milliseconds timeout) noexcept;

	/// Send SUBSCRIBE or UNSUBSCRIBE for more channels, without waiting: the
	/// confirmations come through wait() (a Message with subscribed set for
	/// each SUBSCRIBE).  An I/O error leaves the subscriber unusable.
	[[nodiscard]] Result<void> send(const std::vector<std::string_view> &argv) noexcept;

	[[nodiscard]] bool usable() const noexcept { return connection_.usable(); }
	[[nodiscard]] const std::string &channel() const noexcept { return channel_; }

private:
	Subscriber(Connection connection, std::string channel) noexcept
	    : connection_(std::move(connection)), channel_(std::move(channel))
	{
	}

	Connection connection_;
	std::string channel_;
};

} // namespace pglease::detail::redis
