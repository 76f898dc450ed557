// redis/node.cpp -- a Redis node's connection pool and reconnect backoff
// (node.hpp), the same rules as the PostgreSQL provider's pool: connection
// trouble is Errc::unavailable, the next connection attempt waits the
// providers' backoff (detail/backoff.hpp, from ClientOptions::backoff_initial
// to backoff_max), and while it waits every call answers unavailable at once.
// Behind Sentinels the same backoff also paces the questions to the
// Sentinels while no master is known or reachable (a failover under way).
#include "redis/node.hpp"

#include <algorithm>

#include "detail/provider.hpp"

namespace pglease::detail::redis {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// How often a Node behind Sentinels asks them whether the master moved
// (recheck_master): one question a second bounds how long a client keeps
// using a master the Sentinels replaced while it still answers.
constexpr milliseconds master_recheck{1000};

// demoted -- an error reply that says the node is not a writable master
// (a replica since a failover; a script's write on it says so too)
bool
demoted(const Reply &reply) noexcept
{
	std::string_view text = reply.text;
	return text.rfind("READONLY", 0) == 0 || text.rfind("MASTERDOWN", 0) == 0 ||
	       text.find("READONLY You can't write") != std::string_view::npos;
}

} // namespace

Node::Node(Endpoint endpoint, int db, Credentials credentials, const ClientOptions &options,
           milliseconds command_timeout, Tls tls)
    : endpoint_(std::move(endpoint)), db_(db), credentials_(std::move(credentials)), tls_(std::move(tls)),
      options_(options), timeouts_{options.connect_timeout, command_timeout},
      backoff_(options.backoff_initial, options.backoff_max)
{
}

Node::Node(std::shared_ptr<Sentinels> sentinels, int db, Credentials credentials,
           const ClientOptions &options, milliseconds command_timeout)
    : Node(Endpoint{}, db, std::move(credentials), options, command_timeout)
{
	sentinels_ = std::move(sentinels);
}

Endpoint
Node::endpoint() const
{
	std::lock_guard<std::mutex> lk(mu_);
	return endpoint_;
}

// where -- the node as messages name it (mu_ held)
std::string
Node::where() const
{
	if (!sentinels_)
		return "redis " + to_string(endpoint_);
	return "redis master \"" + sentinels_->master_name() + "\"" +
	       (endpoint_.port != 0 ? " (last at " + to_string(endpoint_) + ")" : "");
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
		             where() + " unreachable, next connection attempt in " + std::to_string(ms) +
		                 " ms (last error: " + last_error_ + ")"};
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
// most likely dead too, and behind Sentinels the master may have moved
void
Node::unreachable(const Error &error) noexcept
{
	std::lock_guard<std::mutex> lk(mu_);
	idle_.clear();
	master_known_ = false;
	next_connect_ = Clock::now() + backoff_.next();
	try {
		last_error_ = error.message;
	} catch (...) {
		last_error_.clear();
	}
}

// forget_master -- the master named last is not (or no longer) one: drop
// its connections and ask the Sentinels again at the next connect
void
Node::forget_master() noexcept
{
	if (!sentinels_)
		return;
	std::lock_guard<std::mutex> lk(mu_);
	idle_.clear();
	master_known_ = false;
}

// recheck_master -- behind Sentinels, at most once per master_recheck: do
// they still name the known master?  If not, its connections go and the
// next one asks again.  The question takes at most half of budget; a
// failed one keeps the master (a connection error will ask again).
void
Node::recheck_master(milliseconds budget) noexcept
{
	if (!sentinels_)
		return;
	Endpoint known;
	const auto now = Clock::now();
	try {
		std::lock_guard<std::mutex> lk(mu_);
		if (!master_known_ || now < next_recheck_)
			return;
		next_recheck_ = now + master_recheck;
		known = endpoint_;
	} catch (...) {
		return;
	}
	const milliseconds limit = std::max(budget / 2, milliseconds{1});
	Timeouts t{std::min(timeouts_.connect, limit), std::min(timeouts_.command, limit)};
	auto master = sentinels_->master(t, deadline_after(now, limit));
	if (master && !(*master == known))
		forget_master();
}

// target -- where the next connection goes: the fixed node, or the master
// (the Sentinels are asked when none is known)
Result<Endpoint>
Node::target(Timeouts timeouts, Clock::time_point deadline) noexcept
{
	try {
		{
			std::lock_guard<std::mutex> lk(mu_);
			if (!sentinels_ || master_known_)
				return endpoint_;
		}
		auto master = sentinels_->master(timeouts, deadline);
		if (!master)
			return master.error();
		std::lock_guard<std::mutex> lk(mu_);
		if (!(endpoint_ == *master))
			idle_.clear();
		endpoint_ = *master;
		master_known_ = true;
		next_recheck_ = Clock::now() + master_recheck;
		return master;
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

// open_checked -- a new connection to where; behind Sentinels only if ROLE
// says it is the master (a Sentinel may name a node demoted since)
Result<Connection>
Node::open_checked(const Endpoint &where, Timeouts timeouts) noexcept
{
	auto c = Connection::open(where, timeouts, db_, credentials_, tls_);
	if (!c || !sentinels_)
		return c;
	if (auto master = Sentinels::is_master(*c); !master)
		return master.error();
	return c;
}

Result<Connection>
Node::borrow(milliseconds timeout, bool &reused) noexcept
{
	reused = false;
	recheck_master(timeout);
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
	auto where = target(t, deadline_after(Clock::now(), std::max(timeout, milliseconds{1})));
	Result<Connection> c = where ? open_checked(*where, t) : Result<Connection>{where.error()};
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
	if (sentinels_ && (!master_known_ || !(connection.endpoint() == endpoint_)))
		return; // a master since forgotten or replaced
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
		if (reply && reply->is_error() && demoted(*reply))
			forget_master(); // the caller gets the reply: READONLY is Errc::unavailable
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
	// behind Sentinels: the master known now (a release is published there);
	// after a failover the old one's subscription ends or stays silent, and
	// the waiter's retries (redis/locker.cpp) still find the lock free
	auto where = target(t, deadline_after(Clock::now(), t.connect + t.command));
	if (!where)
		return where.error();
	return Subscriber::open(*where, t, channel, credentials_, tls_);
}

} // namespace pglease::detail::redis
