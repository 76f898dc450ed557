// redis/node.cpp -- a Redis node's connection pool and reconnect backoff
// (node.hpp), the same rules as the PostgreSQL provider's pool: connection
// trouble is Errc::unavailable, the next connection attempt waits the
// providers' backoff (detail/backoff.hpp, from ClientOptions::backoff_initial
// to backoff_max), and while it waits every call answers unavailable at once.
#include "redis/node.hpp"

#include <algorithm>

#include "detail/provider.hpp"

namespace pglease::detail::redis {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

Node::Node(Endpoint endpoint, int db, Credentials credentials, const ClientOptions &options,
           milliseconds command_timeout, Tls tls)
    : endpoint_(std::move(endpoint)), db_(db), credentials_(std::move(credentials)), tls_(std::move(tls)),
      options_(options), timeouts_{options.connect_timeout, command_timeout},
      backoff_(options.backoff_initial, options.backoff_max)
{
}

// in_backoff -- Errc::unavailable while the next connection attempt must wait
Result<void>
Node::in_backoff() noexcept
{
	auto now = Clock::now();
	if (now >= next_connect_)
		return {};
	try {
		auto ms = std::chrono::ceil<milliseconds>(next_connect_ - now).count();
		return Error{Errc::unavailable, "",
		             "redis " + to_string(endpoint_) + " unreachable, next connection attempt in " +
		                 std::to_string(ms) + " ms (last error: " + last_error_ + ")"};
	} catch (...) {
		return Error{Errc::unavailable, "", ""};
	}
}

void
Node::connected() noexcept
{
	std::lock_guard<std::mutex> lk(mu_);
	backoff_.reset();
	next_connect_ = Clock::time_point{};
}

// unreachable -- start (or lengthen) the backoff; the idle connections are
// most likely dead too
void
Node::unreachable(const Error &error) noexcept
{
	std::lock_guard<std::mutex> lk(mu_);
	idle_.clear();
	next_connect_ = Clock::now() + backoff_.next();
	try {
		last_error_ = error.message;
	} catch (...) {
		last_error_.clear();
	}
}

Result<Connection>
Node::borrow(milliseconds timeout, bool &reused) noexcept
{
	reused = false;
	{
		std::lock_guard<std::mutex> lk(mu_);
		while (!idle_.empty()) {
			Connection c = std::move(idle_.back());
			idle_.pop_back();
			if (c.usable()) {
				reused = true;
				return c;
			}
		}
		if (auto ok = in_backoff(); !ok)
			return ok.error();
	}
	Timeouts t = timeouts_;
	if (timeout > milliseconds{0}) {
		t.connect = std::min(t.connect, timeout);
		t.command = timeout;
	} else {
		t.connect = t.command = milliseconds{1}; // the call's deadline has passed: fail fast
	}
	auto c = Connection::open(endpoint_, t, db_, credentials_, tls_);
	if (c)
		connected();
	else if (c.error().code == Errc::unavailable)
		unreachable(c.error());
	return c;
}

void
Node::give_back(Connection connection) noexcept
{
	if (!connection.usable())
		return;
	std::lock_guard<std::mutex> lk(mu_);
	if (idle_.size() < options_.max_idle_connections) {
		try {
			idle_.push_back(std::move(connection));
		} catch (...) {
			// dropped: the next call opens another
		}
	}
}

Result<Reply>
Node::eval(const Script &script, const std::vector<std::string_view> &keys,
           const std::vector<std::string_view> &args, milliseconds timeout) noexcept
{
	// One deadline for the whole call, connects and retries included: a
	// frozen server (SIGSTOP) still accepts connections, so a second attempt
	// with a timeout of its own would double the call's time.
	const auto deadline =
	    deadline_after(Clock::now(), timeout > milliseconds{0} ? timeout : timeouts_.command);
	// An idle connection may have died with a server restart: one failure on
	// a reused connection buys one attempt on a fresh one, in the time left
	// (every script of the providers can be repeated: acquire is idempotent
	// per holder, renew and release compare the value).
	for (int attempt = 0;; attempt++) {
		bool reused = false;
		auto c = borrow(std::chrono::ceil<milliseconds>(deadline - Clock::now()), reused);
		if (!c)
			return c.error();
		Result<Reply> reply = c->eval(script, keys, args, deadline);
		if (reply) {
			give_back(std::move(*c));
			return reply;
		}
		if (reply.error().code != Errc::unavailable)
			return reply;
		if (c->usable()) { // no time was left to send it: not the node's fault
			give_back(std::move(*c));
			return reply;
		}
		if (reused && attempt == 0 && deadline - Clock::now() >= milliseconds{1}) {
			std::lock_guard<std::mutex> lk(mu_);
			idle_.clear();
			continue;
		}
		unreachable(reply.error());
		return reply;
	}
}

Result<Subscriber>
Node::subscribe(std::string_view channel, milliseconds timeout) noexcept
{
	{
		std::lock_guard<std::mutex> lk(mu_);
		if (auto ok = in_backoff(); !ok)
			return ok.error();
	}
	Timeouts t = timeouts_;
	if (timeout > milliseconds{0}) {
		t.connect = std::min(t.connect, timeout);
		t.command = std::min(t.command, timeout);
	}
	return Subscriber::open(endpoint_, t, channel, credentials_, tls_);
}

} // namespace pglease::detail::redis
