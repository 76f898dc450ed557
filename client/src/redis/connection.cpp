// redis/connection.cpp -- every hiredis call of the Redis providers.
//
// hiredis 0.14 (Debian's) has no TLS, so its connection (redisContext) is
// not used: only its protocol reader (redisReaderCreate / Feed / GetReply)
// and formatter (redisFormatCommandArgv), over a stream of our own
// (redis/transport.hpp), the same for TCP and TLS.  Each command is written
// and its reply read by one deadline, the command timeout; a command past it
// leaves the connection unusable (the reply may still come and would answer
// the next command), and the subscriber's wait, whose read may find nothing
// by its deadline, keeps the stream usable then.
#include "redis/connection.hpp"

#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "detail/provider.hpp"
#include "redis/resp.hpp"

namespace pglease::detail::redis {

namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

bool
starts_with(std::string_view s, std::string_view prefix)
{
	return s.substr(0, prefix.size()) == prefix;
}

} // namespace

void
ReaderDeleter::operator()(redisReader *reader) const noexcept
{
	redisReaderFree(reader);
}

Error
error_from_reply(const Reply &reply, const Endpoint &endpoint)
{
	std::string_view text = reply.text;
	std::string_view code = text.substr(0, text.find(' '));
	Errc errc = Errc::internal;
	if (code == "LOADING" || code == "BUSY" || code == "READONLY" || code == "MASTERDOWN" ||
	    code == "TRYAGAIN" || code == "CLUSTERDOWN")
		errc = Errc::unavailable;
	else if (code == "NOAUTH" || code == "WRONGPASS" || code == "NOPERM" ||
	         text.find("The user executing the script can't") != std::string_view::npos)
		errc = Errc::permission;
	return Error{errc, "", "redis " + to_string(endpoint) + ": " + std::string(text)};
}

namespace {

// sha1_hex -- the 40 lowercase hex digits of SHA-1(data) (OpenSSL's EVP),
// the name SCRIPT LOAD gives a script; empty if OpenSSL fails, and then
// every EVALSHA is answered NOSCRIPT and the script is sent whole (EVAL)
std::string
sha1_hex(std::string_view data)
{
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned int size = 0;
	if (EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha1(), nullptr) != 1)
		return {};
	static const char digits[] = "0123456789abcdef";
	std::string hex;
	for (unsigned int i = 0; i < size; i++) {
		hex.push_back(digits[digest[i] >> 4]);
		hex.push_back(digits[digest[i] & 0xf]);
	}
	return hex;
}

} // namespace

Script::Script(std::string source) : source_(std::move(source)), sha1_(sha1_hex(source_)) {}

Connection::Connection(Endpoint endpoint, Timeouts timeouts, int db, Credentials credentials,
                       Tls tls) noexcept
    : endpoint_(std::move(endpoint)), timeouts_(timeouts), db_(db), credentials_(std::move(credentials)),
      tls_(std::move(tls))
{
}

Result<Connection>
Connection::open(Endpoint endpoint, Timeouts timeouts, int db, Credentials credentials, Tls tls) noexcept
{
	Connection connection(std::move(endpoint), timeouts, db, std::move(credentials), std::move(tls));
	if (auto connected = connection.connect(); !connected)
		return connected.error();
	return connection;
}

bool
Connection::usable() const noexcept
{
	return stream_ != nullptr;
}

Result<void>
Connection::reconnect() noexcept
{
	return connect();
}

// set_command_timeout -- each command takes its deadline from the timeout
// when it starts: nothing to tell the socket
Result<void>
Connection::set_command_timeout(milliseconds timeout) noexcept
{
	if (timeout == timeouts_.command)
		return {};
	timeouts_.command = timeout;
	if (!usable())
		return broken("connection unusable (reconnect first)", Error{Errc::unavailable, "", "not connected"});
	return {};
}

// connect -- a new stream and reader in place of the old ones (dropped
// either way), then what the server must hear first
Result<void>
Connection::connect() noexcept
{
	stream_.reset();
	answered_ = false;
	try {
		reader_.reset(redisReaderCreate());
		if (!reader_)
			return out_of_memory();
		const Deadline deadline = deadline_after(Clock::now(), timeouts_.connect);
		auto stream = Transport::open(endpoint_, tls_, deadline);
		if (!stream)
			return Error{stream.error().code, "",
			             "redis " + to_string(endpoint_) + ": cannot connect: " + stream.error().message};
		stream_ = std::make_unique<Transport>(std::move(*stream));
		if (auto greeted = greet(deadline); !greeted) {
			stream_.reset();
			return greeted.error();
		}
		return {};
	} catch (const std::bad_alloc &) {
		stream_.reset();
		return out_of_memory();
	}
}

// greet -- AUTH, SELECT; with TLS at least one round trip (a PING when
// neither is needed), so that a server refusing our certificate after a TLS
// 1.3 handshake is heard now.  Its refusal may come as a reset rather than
// an alert: a stream that broke before any reply is asked again with a TLS
// 1.2 handshake, which hears the verdict within the handshake, in what is
// left of the connect's own deadline (so open() still ends within the
// connect timeout plus the command timeout).
Result<void>
Connection::greet(Deadline connect_deadline) noexcept
{
	Result<void> done = authenticate();
	if (done)
		done = select();
	if (done && tls_ && !credentials_.given() && db_ == 0) {
		auto pong = command({"PING"});
		if (!pong)
			done = pong.error();
		else if (pong->is_error())
			done = error_from_reply(*pong, endpoint_);
	}
	if (done || !tls_ || answered_ || done.error().code != Errc::unavailable)
		return done;
	auto refusal = Transport::tls12_refusal(endpoint_, tls_, connect_deadline);
	if (!refusal)
		return done;
	try {
		return Error{Errc::permission, "", "redis " + to_string(endpoint_) + ": " + refusal->message};
	} catch (const std::bad_alloc &) {
		return out_of_memory();
	}
}

// authenticate -- AUTH [user] password when credentials are given.  Every
// error reply is a refusal of the credentials (WRONGPASS; "ERR AUTH <password>
// called without any password configured" from a server without one): no
// retry can help, so Errc::permission, and the message quotes the server's
// reply, which never repeats the password.
Result<void>
Connection::authenticate() noexcept
{
	if (!credentials_.given())
		return {};
	auto reply = credentials_.user.empty() ? command({"AUTH", credentials_.password})
	                                       : command({"AUTH", credentials_.user, credentials_.password});
	if (!reply)
		return reply.error();
	if (!reply->is_error())
		return {};
	try {
		std::string who =
		    credentials_.user.empty() ? "the default user" : "user \"" + credentials_.user + "\"";
		return Error{Errc::permission, "",
		             "redis " + to_string(endpoint_) + ": authentication as " + who +
		                 " refused: " + reply->text};
	} catch (const std::bad_alloc &) {
		return out_of_memory();
	}
}

// select -- SELECT db when it is not 0
Result<void>
Connection::select() noexcept
{
	if (db_ == 0)
		return {};
	try {
		std::string db = std::to_string(db_);
		auto selected = command({"SELECT", db});
		if (!selected)
			return selected.error();
		if (!selected->is_error())
			return {};
		// the URL's /db is not a database of this server (databases in
		// redis.conf, 16 by default): the request is wrong, retrying will
		// not help
		if (selected->text.find("out of range") != std::string::npos)
			return Error{Errc::invalid_argument, "",
			             "redis " + to_string(endpoint_) + ": database " + db +
			                 " does not exist on this server (" + selected->text +
			                 "; see databases in redis.conf)"};
		return error_from_reply(*selected, endpoint_);
	} catch (const std::bad_alloc &) {
		return out_of_memory();
	}
}

// broken -- the Error for an I/O failure while doing what; the connection is
// unusable from now on.  A plain connection closed or reset before any reply
// most likely reached a TLS port (which drops what is no TLS record).
Error
Connection::broken(std::string_view what, const Error &cause) noexcept
{
	const bool first = stream_ != nullptr && !answered_;
	const bool plain = stream_ != nullptr && !stream_->tls();
	stream_.reset();
	try {
		std::string message =
		    "redis " + to_string(endpoint_) + ": " + std::string(what) + ": " + cause.message;
		if (first && plain &&
		    (cause.message == "the server closed the connection" ||
		     cause.message == std::strerror(ECONNRESET)))
			message += " before any reply (a TLS port? then rediss://)";
		return Error{cause.code, "", std::move(message)};
	} catch (const std::bad_alloc &) {
		return out_of_memory();
	}
}

// next_reply -- the next complete reply, reading until deadline for it;
// nullopt when none came by then (the stream stays usable: the caller says
// whether that is a failure).  An Error is the bare cause, for broken().
Result<std::optional<Reply>>
Connection::next_reply(Deadline deadline) noexcept
{
	for (;;) {
		void *raw = nullptr;
		if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK)
			return Error{Errc::internal, "", std::string("protocol error: ") + reader_->errstr};
		if (raw != nullptr) {
			ReplyPtr reply(static_cast<redisReply *>(raw));
			answered_ = true;
			return std::optional<Reply>(copy_reply(*reply));
		}
		char buf[16 * 1024];
		auto n = stream_->read_some(buf, sizeof buf, deadline);
		if (!n)
			return n.error();
		if (*n == 0)
			return std::optional<Reply>{};
		if (redisReaderFeed(reader_.get(), buf, *n) != REDIS_OK)
			return out_of_memory();
	}
}

Result<Reply>
Connection::run(const std::string_view *argv, std::size_t argc) noexcept
{
	const std::string what = argc ? std::string(argv[0]) : std::string("command");
	if (!usable())
		return broken(what, Error{Errc::unavailable, "", "connection unusable (reconnect first)"});
	try {
		std::string cmd;
		if (!append_command(cmd, std::vector<std::string_view>(argv, argv + argc)))
			return out_of_memory();
		const Deadline deadline = deadline_after(Clock::now(), timeouts_.command);
		if (auto sent = stream_->write_all({cmd.data(), cmd.size()}, deadline); !sent)
			return broken(what, sent.error());
		auto reply = next_reply(deadline);
		if (!reply)
			return broken(what, reply.error());
		if (!*reply)
			return broken(what,
			              Error{Errc::unavailable, "",
			                    "no reply within " + std::to_string(timeouts_.command.count()) + " ms"});
		return std::move(**reply);
	} catch (const std::bad_alloc &) {
		return out_of_memory();
	}
}

Result<Reply>
Connection::command(std::initializer_list<std::string_view> argv) noexcept
{
	return run(argv.begin(), argv.size());
}

Result<Reply>
Connection::command(const std::vector<std::string_view> &argv) noexcept
{
	return run(argv.data(), argv.size());
}

// until -- bound the next command by what is left before deadline (no bound
// for time_point::max()); Errc::unavailable when nothing is left
Result<void>
Connection::until(Clock::time_point deadline) noexcept
{
	if (deadline == Clock::time_point::max())
		return {};
	auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now());
	if (left <= milliseconds{0}) {
		try {
			return Error{Errc::unavailable, "",
			             "redis " + to_string(endpoint_) + ": no time left for the command"};
		} catch (const std::bad_alloc &) {
			return out_of_memory();
		}
	}
	return set_command_timeout(left);
}

Result<Reply>
Connection::eval(const Script &script, const std::vector<std::string_view> &keys,
                 const std::vector<std::string_view> &args, Clock::time_point deadline) noexcept
{
	try {
		std::string numkeys = std::to_string(keys.size());
		std::vector<std::string_view> argv;
		argv.reserve(3 + keys.size() + args.size());
		argv.push_back("EVALSHA");
		argv.push_back(script.sha1());
		argv.push_back(numkeys);
		argv.insert(argv.end(), keys.begin(), keys.end());
		argv.insert(argv.end(), args.begin(), args.end());
		if (auto ok = until(deadline); !ok)
			return ok.error();
		auto reply = command(argv);
		if (!reply || !reply->is_error() || !starts_with(reply->text, "NOSCRIPT"))
			return reply;
		// the EVAL gets what the EVALSHA left of the deadline, not a
		// second full timeout
		if (auto ok = until(deadline); !ok)
			return ok.error();
		argv[0] = "EVAL";
		argv[1] = script.source();
		return command(argv);
	} catch (const std::bad_alloc &) {
		return out_of_memory();
	}
}

Result<Subscriber>
Subscriber::open(Endpoint endpoint, Timeouts timeouts, std::string_view channel, Credentials credentials,
                 Tls tls) noexcept
{
	auto connection =
	    Connection::open(std::move(endpoint), timeouts, 0, std::move(credentials), std::move(tls));
	if (!connection)
		return connection.error();
	auto confirmed = connection->command({"SUBSCRIBE", channel});
	if (!confirmed)
		return confirmed.error();
	if (confirmed->is_error())
		return error_from_reply(*confirmed, connection->endpoint());
	// ["subscribe", channel, number of subscriptions]
	if (!confirmed->is_array() || confirmed->elements.size() != 3 ||
	    confirmed->elements[0].text != "subscribe")
		return Error{Errc::internal, "",
		             "redis " + to_string(connection->endpoint()) + ": unexpected reply to SUBSCRIBE"};
	try {
		return Subscriber(std::move(*connection), std::string(channel));
	} catch (const std::bad_alloc &) {
		return out_of_memory();
	}
}

Result<std::optional<Message>>
Subscriber::wait(milliseconds timeout) noexcept
{
	Connection &c = connection_;
	if (!c.usable())
		return c.broken("reading a message",
		                Error{Errc::unavailable, "", "subscriber unusable (open a new one)"});
	const Deadline deadline = deadline_after(Clock::now(), timeout);
	try {
		for (;;) {
			auto reply = c.next_reply(deadline);
			if (!reply)
				return c.broken("reading a message", reply.error());
			if (!*reply)
				return std::optional<Message>{};
			Reply &r = **reply;
			// ["message", channel, payload], ["subscribe", channel, count] (of
			// a SUBSCRIBE sent later); anything else (a PONG, say) is skipped
			if (r.is_array() && r.elements.size() == 3 && r.elements[0].text == "message")
				return std::optional<Message>(
				    Message{std::move(r.elements[1].text), std::move(r.elements[2].text)});
			if (r.is_array() && r.elements.size() == 3 && r.elements[0].text == "subscribe")
				return std::optional<Message>(Message{std::move(r.elements[1].text), "", true});
		}
	} catch (const std::bad_alloc &) {
		return out_of_memory();
	}
}

Result<void>
Subscriber::send(const std::vector<std::string_view> &argv) noexcept
{
	Connection &c = connection_;
	const std::string what = argv.empty() ? std::string("command") : std::string(argv[0]);
	if (!c.usable())
		return c.broken(what, Error{Errc::unavailable, "", "subscriber unusable (open a new one)"});
	try {
		std::string cmd;
		if (!append_command(cmd, argv))
			return out_of_memory();
		const Deadline deadline = deadline_after(Clock::now(), c.timeouts_.command);
		if (auto sent = c.stream_->write_all({cmd.data(), cmd.size()}, deadline); !sent)
			return c.broken(what, sent.error());
		return {};
	} catch (const std::bad_alloc &) {
		return out_of_memory();
	}
}

} // namespace pglease::detail::redis
