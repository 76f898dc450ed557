// redis/locker.cpp -- the redis:// provider: leases on one Redis node.
//
// Recipe: the single-instance lock of the Redis distlock page
// (https://redis.io/docs/latest/develop/clients/patterns/distributed-locks/):
// SET key value NX PX ttl to take, compare-and-PEXPIRE to extend,
// compare-and-DEL to release, each one Lua script so the compare and the
// write are atomic.
//
// Token: the acquire script does the SET NX PX and, only when it succeeds,
// INCR of a per-resource counter that is never deleted; the value of the
// lock key is "<token>:<holder>".  The counter is as durable as the node's
// data: monotonic across restarts only with AOF and appendfsync always (a
// node restarted without its data starts counting again at 1).
//
// Keys (not hash-tagged: one node, no Redis Cluster):
//   pglease:lock:<resource>      the grant, "<token>:<holder>", PX ttl
//   pglease:token:<resource>     the token counter (a plain integer, no TTL)
//   pglease:released:<resource>  the pub/sub channel a release publishes on
//
// Re-acquire: a holder asking for a key it holds already gets its token back
// with a new expiry (as the PostgreSQL provider does), so an acquire retried
// after a lost reply does not wait for itself.  Waiting: retries with
// jittered backoff, woken early by the release's PUBLISH; not FIFO.
#include <optional>
#include <thread>

#include "detail/provider.hpp"
#include "redis/component.hpp"
#include "redis/node.hpp"

namespace pglease::detail {

namespace {

using redis::Node;
using redis::Reply;
using redis::Script;

// KEYS: lock, counter.  ARGV: holder, ttl (ms).
// > 0: the token granted (or the holder's own, renewed); <= 0: held by
// another holder, -(its PTTL in ms).
const Script acquire_script{R"lua(
local current = redis.call('GET', KEYS[1])
if current then
	local sep = string.find(current, ':', 1, true)
	if sep and string.sub(current, sep + 1) == ARGV[1] then
		redis.call('PEXPIRE', KEYS[1], ARGV[2])
		return tonumber(string.sub(current, 1, sep - 1))
	end
	return -math.max(redis.call('PTTL', KEYS[1]), 1)
end
local token = (tonumber(redis.call('GET', KEYS[2])) or 0) + 1
if not redis.call('SET', KEYS[1], string.format('%d:%s', token, ARGV[1]), 'NX', 'PX', ARGV[2]) then
	return 0
end
redis.call('INCR', KEYS[2])
return token
)lua"};

// The compare of renew and release: ARGV[1] is the whole value
// "<token>:<holder>" (ARGV[2] = 'value') or its token part "<token>:"
// (ARGV[2] = 'token', the token-level calls).
constexpr const char *match_lua = R"lua(
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
if ARGV[2] == 'value' then
	if current ~= ARGV[1] then return 0 end
elseif string.sub(current, 1, #ARGV[1]) ~= ARGV[1] then
	return 0
end
)lua";

// KEYS: lock.  ARGV: match, mode, ttl (ms).  1: extended; 0: not held.
const Script renew_script{std::string{match_lua} + "redis.call('PEXPIRE', KEYS[1], ARGV[3])\nreturn 1\n"};

// KEYS: lock.  ARGV: match, mode, channel.  1: deleted (and waiters told); 0: not held.
const Script release_script{std::string{match_lua} + "redis.call('DEL', KEYS[1])\n"
                                                     "redis.call('PUBLISH', ARGV[3], 'released')\n"
                                                     "return 1\n"};

struct Keys {
	std::string lock;
	std::string counter;
	std::string channel;
};

Keys
keys_of(std::string_view resource)
{
	std::string r{resource};
	return Keys{"pglease:lock:" + r, "pglease:token:" + r, "pglease:released:" + r};
}

// integer_of -- the integer a script answered, or the Error it amounts to
Result<long long>
integer_of(const Result<Reply> &reply, const Node &node)
{
	if (!reply)
		return reply.error();
	if (reply->is_error())
		return redis::error_from_reply(*reply, node.endpoint());
	if (!reply->is_integer())
		return Error{Errc::internal, "",
		             "redis " + to_string(node.endpoint()) + ": a lock script answered no integer"};
	return reply->integer;
}

// compare_and -- run renew_script or release_script for one grant; true: done
Result<bool>
compare_and(Node &node, const Script &script, std::string_view lock_key, std::string_view match,
            std::string_view mode, std::string_view last_arg) noexcept
{
	try {
		auto done = integer_of(node.eval(script, {lock_key}, {match, mode, last_arg}), node);
		if (!done)
			return done.error();
		return *done == 1;
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

// RedisGrant -- one grant: its value names it
class RedisGrant final : public Grant {
public:
	RedisGrant(std::shared_ptr<Node> node, Keys keys, std::string value)
	    : node_(std::move(node)), keys_(std::move(keys)), value_(std::move(value))
	{
	}

	Result<bool> renew(milliseconds ttl) noexcept override
	{
		try {
			return compare_and(*node_, renew_script, keys_.lock, value_, "value",
			                   std::to_string(ttl.count()));
		} catch (...) {
			return Error{Errc::internal, "", "out of memory"};
		}
	}
	Result<bool> release() noexcept override
	{
		return compare_and(*node_, release_script, keys_.lock, value_, "value", keys_.channel);
	}

private:
	std::shared_ptr<Node> node_;
	Keys keys_;
	std::string value_;
};

// RedisLocker -- acquire with the acquire script, wait on the release channel
class RedisLocker final : public LockerBase {
public:
	explicit RedisLocker(std::shared_ptr<Node> node) noexcept : node_(std::move(node)) {}

	Capabilities capabilities() const noexcept override
	{
		Capabilities c;
		c.distributed = true;
		c.fencing_token = true; // while the node keeps its data (AOF, appendfsync always)
		return c;
	}
	std::string_view provider() const noexcept override { return "Redis"; }

	Result<bool> renew_by_token(std::string_view resource, std::int64_t token, milliseconds ttl) override
	{
		return compare_and(*node_, renew_script, keys_of(resource).lock, std::to_string(token) + ":", "token",
		                   std::to_string(ttl.count()));
	}

	Result<bool> release_by_token(std::string_view resource, std::int64_t token) override
	{
		Keys keys = keys_of(resource);
		return compare_and(*node_, release_script, keys.lock, std::to_string(token) + ":", "token",
		                   keys.channel);
	}

	using LockerBase::constructed;

protected:
	Result<Granted> grant(std::string_view resource, const LeaseOptions &options,
	                      const std::string &holder) override
	{
		if (options.strategy != Strategy::lease || options.session_bound)
			return Error{Errc::invalid_argument, "",
			             "the Redis provider offers Strategy::lease only (no sessions, no advisory locks)"};
		return take(resource, options, holder); // acquire() turns a throw into Errc::internal
	}

private:
	// take -- the acquire script until granted or options.wait is over
	Result<Granted> take(std::string_view resource, const LeaseOptions &options, const std::string &holder)
	{
		Keys keys = keys_of(resource);
		const std::string ttl = std::to_string(options.ttl.count());
		const auto give_up = Clock::now() + options.wait;
		std::optional<redis::Subscriber> woken_by_release;
		bool subscribed = false;
		redis::RetryDelay delay{milliseconds{25}, milliseconds{1000}};
		for (;;) {
			auto sent = Clock::now();
			auto answer =
			    integer_of(node_->eval(acquire_script, {keys.lock, keys.counter}, {holder, ttl}), *node_);
			if (!answer)
				return answer.error();
			if (*answer > 0) {
				Granted g;
				g.token = *answer;
				g.deadline = sent + options.ttl;
				std::string value = std::to_string(*answer) + ":" + holder;
				g.grant = std::make_unique<RedisGrant>(node_, std::move(keys), std::move(value));
				return g;
			}
			auto now = Clock::now();
			if (now >= give_up)
				return Error{Errc::timeout, "",
				             "lease \"" + std::string{resource} + "\" not granted within " +
				                 format_duration(options.wait)};
			if (!subscribed) {
				// subscribe, then ask again at once: a release published
				// between the first try and the subscription is not missed
				subscribed = true;
				if (auto sub = node_->subscribe(keys.channel))
					woken_by_release.emplace(std::move(*sub));
				continue;
			}
			// wake for the release, the holder's expiry, or the next retry
			auto holder_left = milliseconds{-*answer} + milliseconds{1};
			auto pause =
			    std::min({delay.next(*node_), holder_left, std::chrono::ceil<milliseconds>(give_up - now)});
			auto wake = now + pause;
			if (woken_by_release && woken_by_release->usable()) {
				if (!woken_by_release->wait(pause))
					woken_by_release.reset(); // polling from now on
			}
			std::this_thread::sleep_until(woken_by_release ? now : wake);
		}
	}

	std::shared_ptr<Node> node_;
};

} // namespace

Result<std::unique_ptr<Locker>>
connect_redis(std::string_view url, const ClientOptions &options)
{
	auto target = redis::parse_url(url);
	if (!target)
		return target.error();
	if (target->redlock || target->nodes.size() != 1)
		return Error{Errc::invalid_argument, "", "redis:// names exactly one node: redis://host:port[/db]"};
	auto node = std::make_shared<Node>(target->nodes[0], target->db, options, options.statement_grace);
	auto locker = std::make_unique<RedisLocker>(std::move(node));
	return handed_out(std::move(locker));
}

} // namespace pglease::detail
