// redis/connection.cpp -- every hiredis call of the Redis providers.
//
// hiredis 0.14's synchronous API: redisConnectWithTimeout bounds the connect,
// redisSetTimeout sets SO_RCVTIMEO/SO_SNDTIMEO for the commands after it.  A
// blocking read that times out is an I/O error to hiredis (REDIS_ERR_IO with
// EAGAIN) and poisons the context for good, so a command timeout ends the
// connection here too, and the subscriber never lets a read time out: it
// polls the socket for its own wait and reads only when data is there.
// hiredis writes with write(2), not send(MSG_NOSIGNAL): a write after the peer
// reset the connection raises SIGPIPE, which would kill the host service, so
// every command runs with SIGPIPE blocked in its thread (libpq's approach).
#include "redis/connection.hpp"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <new>
#include <sys/time.h>

#include "redis/sha1.hpp"

namespace pglease::detail::redis {

namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

struct ReplyDeleter {
	void operator()(redisReply *reply) const noexcept { freeReplyObject(reply); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

timeval
to_timeval(milliseconds d)
{
	if (d < milliseconds{1})
		d = milliseconds{1}; // a zero timeval would mean "no timeout" to the socket
	timeval tv{};
	tv.tv_sec = static_cast<time_t>(d.count() / 1000);
	tv.tv_usec = static_cast<suseconds_t>(d.count() % 1000 * 1000);
	return tv;
}

Error
out_of_memory()
{
	return Error{Errc::internal, "", "out of memory"};
}

// copy_reply -- an owned Reply from hiredis's reply tree
Reply
copy_reply(const redisReply &r)
{
	Reply out;
	switch (r.type) {
	case REDIS_REPLY_INTEGER:
		out.kind = Reply::Kind::integer;
		out.integer = r.integer;
		break;
	case REDIS_REPLY_STATUS:
		out.kind = Reply::Kind::status;
		out.text.assign(r.str, r.len);
		break;
	case REDIS_REPLY_ERROR:
		out.kind = Reply::Kind::error;
		out.text.assign(r.str, r.len);
		break;
	case REDIS_REPLY_STRING:
		out.kind = Reply::Kind::string;
		out.text.assign(r.str, r.len);
		break;
	case REDIS_REPLY_ARRAY:
		out.kind = Reply::Kind::array;
		out.elements.reserve(r.elements);
		for (std::size_t i = 0; i < r.elements; i++)
			out.elements.push_back(copy_reply(*r.element[i]));
		break;
	default: // REDIS_REPLY_NIL (RESP2 has no other types)
		break;
	}
	return out;
}

// SigpipeGuard -- SIGPIPE blocked in this thread for the guard's life; one
// raised meanwhile is consumed (unless one was already pending), so it is
// never delivered to the process.
class SigpipeGuard {
public:
	SigpipeGuard() noexcept
	{
		sigset_t pipe;
		sigemptyset(&pipe);
		sigaddset(&pipe, SIGPIPE);
		sigset_t pending;
		sigemptyset(&pending);
		sigpending(&pending);
		was_pending_ = sigismember(&pending, SIGPIPE) == 1;
		blocked_ = pthread_sigmask(SIG_BLOCK, &pipe, &old_) == 0;
	}
	~SigpipeGuard()
	{
		if (!blocked_)
			return;
		sigset_t pending;
		sigemptyset(&pending);
		sigpending(&pending);
		if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
			sigset_t pipe;
			sigemptyset(&pipe);
			sigaddset(&pipe, SIGPIPE);
			timespec zero{};
			int saved_errno = errno;
			while (sigtimedwait(&pipe, nullptr, &zero) < 0 && errno == EINTR) {
			}
			errno = saved_errno;
		}
		pthread_sigmask(SIG_SETMASK, &old_, nullptr);
	}
	SigpipeGuard(const SigpipeGuard &) = delete;
	SigpipeGuard &operator=(const SigpipeGuard &) = delete;

private:
	sigset_t old_{};
	bool was_pending_ = false;
	bool blocked_ = false;
};

bool
starts_with(std::string_view s, std::string_view prefix)
{
	return s.substr(0, prefix.size()) == prefix;
}

} // namespace

void
ContextDeleter::operator()(redisContext *context) const noexcept
{
	redisFree(context);
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

Script::Script(std::string source) : source_(std::move(source)), sha1_(sha1_hex(source_)) {}

Connection::Connection(Endpoint endpoint, Timeouts timeouts, int db, Credentials credentials) noexcept
    : endpoint_(std::move(endpoint)), timeouts_(timeouts), db_(db), credentials_(std::move(credentials))
{
}

Result<Connection>
Connection::open(Endpoint endpoint, Timeouts timeouts, int db, Credentials credentials) noexcept
{
	Connection connection(std::move(endpoint), timeouts, db, std::move(credentials));
	if (auto connected = connection.connect(); !connected)
		return connected.error();
	return connection;
}

bool
Connection::usable() const noexcept
{
	return context_ && context_->err == 0;
}

Result<void>
Connection::reconnect() noexcept
{
	return connect();
}

Result<void>
Connection::set_command_timeout(milliseconds timeout) noexcept
{
	if (timeout == timeouts_.command)
		return {};
	timeouts_.command = timeout;
	if (!usable())
		return io_error("connection unusable (reconnect first)");
	if (redisSetTimeout(context_.get(), to_timeval(timeout)) != REDIS_OK) {
		Error error = io_error("cannot set the command timeout");
		context_.reset();
		return error;
	}
	return {};
}

// connect -- a new context in place of the old one (which is freed either way)
Result<void>
Connection::connect() noexcept
{
	context_.reset();
	try {
		context_.reset(
		    redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port, to_timeval(timeouts_.connect)));
		if (!context_)
			return out_of_memory();
		if (context_->err) {
			Error error{Errc::unavailable, "",
			            "redis " + to_string(endpoint_) + ": cannot connect: " + context_->errstr};
			context_.reset();
			return error;
		}
		if (redisSetTimeout(context_.get(), to_timeval(timeouts_.command)) != REDIS_OK) {
			Error error = io_error("cannot set the command timeout");
			context_.reset();
			return error;
		}
		if (auto authenticated = authenticate(); !authenticated) {
			context_.reset();
			return authenticated.error();
		}
		if (auto selected = select(); !selected) {
			context_.reset();
			return selected.error();
		}
		return {};
	} catch (const std::bad_alloc &) {
		context_.reset();
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

// io_error -- the Error for the failure hiredis recorded in the context; a
// timed-out read or write says so instead of "Resource temporarily unavailable"
Error
Connection::io_error(std::string_view what) noexcept
{
	int saved_errno = errno;
	try {
		std::string message = "redis " + to_string(endpoint_) + ": " + std::string(what) + ": ";
		if (!context_)
			message += "not connected";
		else if (context_->err == REDIS_ERR_IO && (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK))
			message += "no reply within " + std::to_string(timeouts_.command.count()) + " ms";
		else
			message += context_->errstr;
		Errc code = Errc::unavailable;
		if (context_ && (context_->err == REDIS_ERR_PROTOCOL || context_->err == REDIS_ERR_OOM))
			code = Errc::internal;
		return Error{code, "", std::move(message)};
	} catch (const std::bad_alloc &) {
		return out_of_memory();
	}
}

Result<Reply>
Connection::run(const std::string_view *argv, std::size_t argc) noexcept
{
	if (!usable())
		return io_error("connection unusable (reconnect first)");
	try {
		std::vector<const char *> ptrs(argc);
		std::vector<size_t> lens(argc);
		for (std::size_t i = 0; i < argc; i++) {
			ptrs[i] = argv[i].data();
			lens[i] = argv[i].size();
		}
		ReplyPtr reply;
		int call_errno = 0;
		{
			SigpipeGuard no_sigpipe;
			errno = 0;
			reply.reset(static_cast<redisReply *>(
			    redisCommandArgv(context_.get(), static_cast<int>(argc), ptrs.data(), lens.data())));
			call_errno = errno;
		}
		if (!reply) {
			std::string what = argc ? std::string(argv[0]) : std::string("command");
			errno = call_errno; // io_error tells a timeout (EAGAIN) by it
			return io_error(what);
		}
		return copy_reply(*reply);
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
Subscriber::open(Endpoint endpoint, Timeouts timeouts, std::string_view channel,
                 Credentials credentials) noexcept
{
	auto connection = Connection::open(std::move(endpoint), timeouts, 0, std::move(credentials));
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
		return c.io_error("subscriber unusable (open a new one)");
	const auto deadline = Clock::now() + timeout;
	try {
		for (;;) {
			// first what is already buffered: one read may have brought several messages
			void *raw = nullptr;
			if (redisGetReplyFromReader(c.context_.get(), &raw) != REDIS_OK)
				return c.io_error("reading a message");
			if (raw) {
				ReplyPtr reply(static_cast<redisReply *>(raw));
				Reply r = copy_reply(*reply);
				// ["message", channel, payload]; anything else (a PONG, say) is skipped
				if (r.is_array() && r.elements.size() == 3 && r.elements[0].text == "message")
					return std::optional<Message>(
					    Message{std::move(r.elements[1].text), std::move(r.elements[2].text)});
				continue;
			}
			auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now());
			if (left <= milliseconds{0})
				return std::optional<Message>{};
			pollfd pfd{c.context_->fd, POLLIN, 0};
			int ready = ::poll(&pfd, 1, static_cast<int>(left.count()));
			if (ready < 0 && errno != EINTR)
				return Error{Errc::internal, "", "redis " + to_string(c.endpoint()) + ": poll failed"};
			// readable, or hung up / in error: the read says which
			if (ready > 0 && redisBufferRead(c.context_.get()) != REDIS_OK)
				return c.io_error("reading a message");
		}
	} catch (const std::bad_alloc &) {
		return out_of_memory();
	}
}

} // namespace pglease::detail::redis
