// redlock/link.cpp -- a Redlock node's pipelined connection (link.hpp):
// hiredis's formatter and reader (redisFormatCommandArgv, redisReaderFeed /
// GetReply) over redis/transport.hpp's stream, as redis/connection.cpp uses
// them, but with the write and the read of a request apart.
#include "redlock/link.hpp"

#include <hiredis/hiredis.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "detail/provider.hpp"
#include "redis/resp.hpp"

namespace pglease::detail::redlock {

using redis::copy_reply;
using redis::out_of_memory;
using redis::ReplyDeleter;

// ---- Node ---------------------------------------------------------------------------

Node::Node(redis::Endpoint endpoint, int db, redis::Credentials credentials, redis::Tls tls,
           const ClientOptions &options)
    : endpoint_(std::move(endpoint)), db_(db), credentials_(std::move(credentials)), tls_(std::move(tls)),
      connect_timeout_(options.connect_timeout), backoff_(options.backoff_initial, options.backoff_max)
{
}

Result<void>
Node::may_connect() noexcept
{
	std::lock_guard<std::mutex> lk(mu_);
	auto now = Clock::now();
	if (now >= next_connect_)
		return {};
	try {
		auto ms = std::chrono::ceil<milliseconds>(next_connect_ - now).count();
		return Error{Errc::unavailable, "",
		             "redis " + to_string(endpoint_) + " unreachable, next connection attempt in " +
		                 std::to_string(ms) + " ms (last error: " + last_error_ + ")"};
	} catch (...) {
		return out_of_memory();
	}
}

void
Node::answered() noexcept
{
	std::lock_guard<std::mutex> lk(mu_);
	backoff_.reset();
	next_connect_ = Clock::time_point{};
}

void
Node::unreachable(const Error &error) noexcept
{
	std::lock_guard<std::mutex> lk(mu_);
	next_connect_ = Clock::now() + backoff_.next();
	try {
		last_error_ = error.message;
	} catch (...) {
		last_error_.clear();
	}
}

// ---- Link ---------------------------------------------------------------------------

Link::Link(std::shared_ptr<Node> node) noexcept : node_(std::move(node)) {}

void
Link::close() noexcept
{
	stream_.reset();
	owed_.clear();
	out_.clear();
}

Result<void>
Link::send(const Script &script, std::string_view key, const std::vector<std::string_view> &args,
           Deadline deadline) noexcept
{
	try {
		script_ = &script;
		key_.assign(key);
		args_.assign(args.begin(), args.end());
		due_ = deadline;
		fresh_ = false;
		if (auto settled = settle(deadline); !settled)
			return settled;
		if (!stream_) {
			if (auto connected = connect(deadline); !connected)
				return connected;
		}
		append_request();
		if (auto written = write(deadline); written)
			return written;
		else if (fresh_)
			return failed("sending", written.error(), deadline);
		// a pooled connection the node dropped (a restart): one fresh one
		if (auto connected = connect(deadline); !connected)
			return connected;
		append_request();
		if (auto written = write(deadline); !written)
			return failed("sending", written.error(), deadline);
		return {};
	} catch (const std::bad_alloc &) {
		close();
		return out_of_memory();
	}
}

// settle -- the replies an earlier round left owed: those that came are
// read (an AUTH refused among them fails this round); one past its round's
// deadline means the node did not answer in time
Result<void>
Link::settle(Deadline deadline)
{
	if (!stream_ || owed_.empty())
		return {};
	// (a TLS handshake a round left unfinished: what it queued is still in
	// out_, and goes with this round's request once the handshake is done)
	if (!stream_->handshaking()) {
		if (auto r = read_replies(deadline); !r) {
			if (r.error().code == Errc::unavailable && !stream_)
				return {}; // the connection died meanwhile: a fresh one
			return r.error();
		}
	}
	if (!owed_.empty() && Clock::now() >= owed_.front().due) {
		Error late{Errc::unavailable, "", "redis " + to_string(endpoint()) + ": no reply in time"};
		close();
		node_->unreachable(late);
		return late;
	}
	return {};
}

// connect -- a new connection, AUTH and SELECT queued ahead of the request
Result<void>
Link::connect(Deadline deadline)
{
	close();
	if (auto ok = node_->may_connect(); !ok)
		return ok;
	reader_.reset(redisReaderCreate());
	if (!reader_)
		return out_of_memory();
	auto by = std::min(deadline, deadline_after(Clock::now(), node_->connect_timeout()));
	auto stream = redis::Transport::connect_only(endpoint(), node_->tls(), by);
	if (!stream) {
		Error e{stream.error().code, "",
		        "redis " + to_string(endpoint()) + ": cannot connect: " + stream.error().message};
		if (e.code == Errc::unavailable)
			node_->unreachable(e);
		return e;
	}
	stream_ = std::make_unique<redis::Transport>(std::move(*stream));
	answered_ = false;
	fresh_ = true;
	loaded_.clear();
	if (auto shaken = shake_hands(); !shaken) // the ClientHello goes now
		return shaken.error();
	const auto &who = node_->credentials();
	if (who.given()) {
		if (who.user.empty())
			append({"AUTH", who.password});
		else
			append({"AUTH", who.user, who.password});
		owed_.push_back({What::auth, deadline});
	}
	if (node_->db() != 0) {
		std::string db = std::to_string(node_->db());
		append({"SELECT", db});
		owed_.push_back({What::select, deadline});
	}
	return {};
}

void
Link::append(const std::vector<std::string_view> &argv)
{
	if (!redis::append_command(out_, argv))
		throw std::bad_alloc();
}

// append_request -- EVAL the first time on this connection, EVALSHA after
void
Link::append_request()
{
	const bool loaded = std::find(loaded_.begin(), loaded_.end(), script_->sha1()) != loaded_.end();
	const std::string numkeys = "1";
	std::vector<std::string_view> argv{loaded ? "EVALSHA" : "EVAL",
	                                   loaded ? script_->sha1() : script_->source(), numkeys, key_};
	argv.insert(argv.end(), args_.begin(), args_.end());
	append(argv);
	if (!loaded)
		loaded_.push_back(script_->sha1());
	owed_.push_back({What::request, due_});
}

// write -- what is queued, once the TLS handshake is done (until then it
// waits in out_: receive() sends it)
Result<void>
Link::write(Deadline deadline)
{
	if (stream_->handshaking())
		return {};
	auto sent = stream_->write_all(out_, deadline);
	out_.clear();
	return sent;
}

// shake_hands -- the TLS handshake of a new connection, as far as it goes
// without waiting; true when done
Result<bool>
Link::shake_hands()
{
	auto done = stream_->continue_handshake(endpoint());
	if (done)
		return done;
	Error e{done.error().code, "",
	        "redis " + to_string(endpoint()) + ": cannot connect: " + done.error().message};
	close();
	if (e.code == Errc::unavailable)
		node_->unreachable(e);
	return e;
}

short
Link::events() const noexcept
{
	return stream_ && stream_->handshaking() && stream_->handshake_wants_write() ? POLLOUT : POLLIN;
}

Result<std::optional<Reply>>
Link::receive(Deadline deadline) noexcept
{
	try {
		if (!stream_)
			return Error{Errc::unavailable, "", "redis " + to_string(endpoint()) + ": not connected"};
		if (stream_->handshaking()) {
			auto done = shake_hands();
			if (!done)
				return done.error();
			if (!*done)
				return std::optional<Reply>{};
			if (auto sent = write(deadline); !sent)
				return failed("sending", sent.error(), deadline);
		}
		return read_replies(deadline);
	} catch (const std::bad_alloc &) {
		close();
		return out_of_memory();
	}
}

// read_replies -- every reply that came, in order; the request's ends it
Result<std::optional<Reply>>
Link::read_replies(Deadline deadline)
{
	for (;;) {
		void *raw = nullptr;
		if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK) {
			Error e{Errc::internal, "",
			        "redis " + to_string(endpoint()) + ": protocol error: " + reader_->errstr};
			close();
			return e;
		}
		if (raw != nullptr) {
			std::unique_ptr<redisReply, ReplyDeleter> reply(static_cast<redisReply *>(raw));
			auto taken = take(copy_reply(*reply));
			if (!taken || *taken)
				return taken;
			continue;
		}
		if (owed_.empty())
			return std::optional<Reply>{};
		char buf[16 * 1024];
		auto n = stream_->read_some(buf, sizeof buf, Deadline{}); // a deadline passed: no wait
		if (!n && !owes_request()) { // left owed by an earlier round: a fresh connection
			close();
			return n.error();
		}
		if (!n)
			return retry_or_fail("reading the reply", n.error(), deadline);
		if (*n == 0)
			return std::optional<Reply>{};
		if (redisReaderFeed(reader_.get(), buf, *n) != REDIS_OK)
			throw std::bad_alloc();
	}
}

bool
Link::owes_request() const noexcept
{
	return std::any_of(owed_.begin(), owed_.end(), [](const Owed &o) { return o.what == What::request; });
}

// take -- one reply, judged by what it answers
Result<std::optional<Reply>>
Link::take(Reply reply)
{
	if (owed_.empty()) {
		close();
		return Error{Errc::internal, "", "redis " + to_string(endpoint()) + ": a reply to nothing asked"};
	}
	const What what = owed_.front().what;
	owed_.pop_front();
	if (!answered_)
		node_->answered();
	answered_ = true;
	if (what == What::stale || !reply.is_error())
		return what == What::request ? std::optional<Reply>(std::move(reply)) : std::nullopt;
	if (what == What::request) {
		if (reply.text.rfind("NOSCRIPT", 0) != 0)
			return std::optional<Reply>(std::move(reply));
		loaded_.clear(); // SCRIPT FLUSH: every script goes whole again
		append_request();
		if (auto sent = write(due_); !sent)
			return retry_or_fail("sending", sent.error(), due_);
		return std::optional<Reply>{};
	}
	// AUTH or SELECT refused: no retry helps (see redis/connection.cpp)
	close();
	const auto &who = node_->credentials();
	if (what == What::auth)
		return Error{Errc::permission, "",
		             "redis " + to_string(endpoint()) + ": authentication as " +
		                 (who.user.empty() ? "the default user" : "user \"" + who.user + "\"") +
		                 " refused: " + reply.text};
	if (reply.text.find("out of range") != std::string::npos)
		return Error{Errc::invalid_argument, "",
		             "redis " + to_string(endpoint()) + ": database " + std::to_string(node_->db()) +
		                 " does not exist on this server (" + reply.text + "; see databases in redis.conf)"};
	return redis::error_from_reply(reply, endpoint());
}

// retry_or_fail -- a pooled connection that broke before this round's reply
// came (the node restarted meanwhile): the request again on a fresh one;
// else the node failed
Result<std::optional<Reply>>
Link::retry_or_fail(std::string_view what, const Error &cause, Deadline deadline)
{
	if (fresh_ || !owes_request() || Clock::now() >= deadline)
		return failed(what, cause, deadline);
	if (auto connected = connect(deadline); !connected)
		return connected.error();
	append_request();
	if (auto sent = write(deadline); !sent)
		return failed("sending", sent.error(), deadline);
	return std::optional<Reply>{};
}

// failed -- the Error for an I/O failure of this node, which now backs off.
// A plain connection closed before any reply most likely reached a TLS port;
// a TLS one may be a server refusing our certificate after a TLS 1.3
// handshake, which a TLS 1.2 handshake hears (redis/transport.hpp).
Error
Link::failed(std::string_view what, const Error &cause, Deadline deadline)
{
	const bool first = stream_ != nullptr && !answered_;
	const bool tls = node_->tls() != nullptr;
	close();
	std::string message = "redis " + to_string(endpoint()) + ": " + std::string(what) + ": " + cause.message;
	if (first && tls && cause.code == Errc::unavailable) {
		if (auto refusal = redis::Transport::tls12_refusal(endpoint(), node_->tls(), deadline))
			return Error{Errc::permission, "", "redis " + to_string(endpoint()) + ": " + refusal->message};
	}
	if (first && !tls &&
	    (cause.message == "the server closed the connection" || cause.message == std::strerror(ECONNRESET)))
		message += " before any reply (a TLS port? then rediss://)";
	Error e{cause.code, "", std::move(message)};
	if (e.code == Errc::unavailable)
		node_->unreachable(e);
	return e;
}

void
Link::abandon(bool late) noexcept
{
	if (late) {
		try {
			Error e{Errc::unavailable, "", "redis " + to_string(endpoint()) + ": no reply in time"};
			node_->unreachable(e);
		} catch (...) {
			node_->unreachable(Error{Errc::unavailable, "", ""});
		}
		close();
		return;
	}
	for (auto &o : owed_)
		if (o.what == What::request)
			o.what = What::stale;
}

} // namespace pglease::detail::redlock
