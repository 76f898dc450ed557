// redis/locker.cpp -- the redis:// provider: leases on one Redis node; and
// redis+sentinel://, the same on whichever node Sentinel names the master.
//
// Recipe: the single-instance lock of the Redis distlock page
// (https://redis.io/docs/latest/develop/clients/patterns/distributed-locks/):
// SET key value NX PX ttl to take, compare-and-PEXPIRE to extend,
// compare-and-DEL to release, each one Lua script so the compare and the
// write are atomic.  This file is the locker: the wait loop and the grant's
// confirmation every request shares; each request is one script of its
// room -- redis/lock.cpp, shared.cpp, permits.cpp, election.cpp -- and the
// scripts are redis/lua/*.lua, embedded at build time (redis/lua.hpp).
//
// Token: the acquire script checks everything first (the lock is free, the
// counter is sound) and only then INCRs a per-resource counter that is never
// deleted and SETs the lock key to "<token>:<holder>"; a refusal writes
// nothing.  Tokens are exact integers up to 2^53-1 (the script's numbers are
// Lua doubles): a counter that is not an integer from 0 to 2^53-2 is damaged
// server state, refused with Errc::internal naming the key, never a token
// that repeats or goes down.  The counter is as durable as the node's data:
// monotonic across restarts only with AOF and appendfsync always (a node
// restarted without its data starts counting again at 1).
//
// Bounds: TTLs up to 2^53-1 ms (max_ttl); acquire returns within wait +
// statement_grace, renew and release within statement_grace; an acquire
// whose reply is lost leaves a lock of at most min(ttl, statement_grace)
// (see RedisLocker).
//
// Keys (not hash-tagged: one node, no Redis Cluster; redis/keys.hpp):
//   pglease:lock:<resource>      the grant, "<token>:<holder>", PX ttl; or
//                                the shared grants or permits, a sorted set
//   pglease:lock:<resource>\0writers  the waiting writers' marks, a sorted
//                                set (\0: a NUL byte, in no resource's name)
//   pglease:lock:<resource>\0queue, \0beats  the waiting writers in order,
//                                and their beats' ends (sorted sets)
//   pglease:token:<resource>     the token counter (a plain integer, no TTL)
//   pglease:released:<resource>  the pub/sub channel a release publishes on
// and for an election (redis/election.cpp, docs/election.md):
//   pglease:value:<election>     "<term>:<since ms>:<value>", PX the grant's ttl
//   pglease:token:<election>\0epoch  the epoch of its terms, the counter's
//                                life (a new one when the counter starts again)
//   pglease:election:<election>  the pub/sub channel every change publishes on
//
// Access: with the URL's credentials every connection AUTHs first; an ACL
// user needs the keys pglease:lock:* and pglease:token:*, the channel
// pglease:released:*, and the commands EVALSHA, EVAL, SUBSCRIBE (the waiters'
// wake-up; without it they poll), SELECT for a /db other than 0, and those
// the scripts call: GET, SET, PEXPIRE, PTTL, INCR, DEL, PUBLISH (the
// ACL SETUSER line: tests/client/redis_auth_test.cpp).  Shared leases and
// permits add TIME, ZADD, ZRANGE, ZRANGEBYSCORE, ZREMRANGEBYSCORE, ZSCORE
// and ZREM (the lock scripts call them only on a resource that has shared
// grants, and a waiting writer's mark through pcall, so a lock-only user
// keeps working: its writers wait unmarked).  The waiters' queue calls
// those and EXISTS, each through pcall: a lock-only user waits unqueued.
// Elections add the key pglease:value:*, the channel pglease:election:*
// and the command TIME (the term's since;
// tests/client/redis_election_test.cpp).  A refused AUTH, a key or a command outside the user's ACL is Errc::permission, and
// it changes nothing on the server.
//
// Token-level calls: renew and release by (resource, token) compare the
// lock's value with "<token>:" (any holder) or, given the holder, with the
// whole "<token>:<holder>", inside the renew or release script.  They are
// the lock's scripts (a lock-only ACL keeps working), so on an election
// they touch the lock alone: a release there ends the term at once (the
// lock says who leads) but publishes no change (observers learn it within
// their one-second re-read), and a renewal leaves the value key to expire
// at its own end (leader() then shows the term with an empty value).
//
// Sentinel (redis+sentinel://): the recipe runs on the master the Sentinels
// name (redis/node.hpp follows it through a failover; meanwhile every call
// is Errc::unavailable).  Redis replicates asynchronously: a replica
// promoted by a failover may lack the latest grant (a second holder while
// the first still holds) and the latest INCR of the counter (a token handed
// out again).  Nothing here waits for a replica (WAIT would only narrow the
// window, and Redis' docs say WAIT does not make Redis strongly consistent),
// so capabilities() claims neither durable nor survives_failover; tokens
// strictly increase between failovers.
//
// Shared leases and semaphores (docs/shared-leases.md): while a resource
// has readers or permits, its lock key is a sorted set of its grants
// (redis/shared.cpp, redis/permits.cpp); a waiting writer marks itself so
// that later readers go after it (redis/lock.cpp).
//
// Re-acquire: a holder asking for a key it holds already gets its token back
// with a new expiry (as the PostgreSQL provider does), so an acquire retried
// after a lost reply does not wait for itself.  Waiting: a writer takes a
// place in the lock's queue (lib/queue.lua: a free lock goes to the live
// head alone) and retries with jittered backoff, woken early by the
// release's PUBLISH when it names this waiter or no one, through the
// locker's one subscriber connection (redis/waker.hpp); readers, permits
// and campaigns retry and wake the same way, unqueued.
#include <algorithm>
#include <optional>
#include <thread>

#include "detail/provider.hpp"
#include "detail/backoff.hpp"
#include "redis/component.hpp"
#include "redis/election.hpp"
#include "redis/grant.hpp"
#include "redis/keys.hpp"
#include "redis/node.hpp"
#include "redis/recipes.hpp"
#include "redis/waker.hpp"

namespace pglease::detail {

namespace {

using redis::Keys;
using redis::keys_of;
using redis::left_of;
using redis::margin_of;
using redis::Node;
using redis::Reply;

// RedisLocker -- acquire with the acquire script, wait on the release channel.
//
// Time bounds (ClientOptions::statement_grace, "grace"): acquire returns
// within wait + grace, every other call within grace (one deadline per call
// across reconnects and retries).  A lost reply: the acquire script grants
// for min(ttl, grace) only, and the lease's first renewal extends that to
// ttl (the engine sends it at half the provisional time, or when the lease
// is detached or its locker ends: Granted::provisional); so an acquire the
// server runs after the caller gave up (a frozen server that resumes)
// leaves a lock that expires within grace of running, not one of the full
// TTL under a holder nobody knows.  An uncontended pair released within
// grace/2 is two round trips at any TTL; a lease held longer pays its one
// extension then, off the acquire's path.
class RedisLocker final : public LockerBase {
public:
	RedisLocker(std::shared_ptr<Node> node, milliseconds grace) noexcept
	    : node_(std::move(node)), grace_(std::max(grace, milliseconds{1}))
	{
	}

	// The same behind Sentinels: a failover to an asynchronous replica can
	// lose the last grant and the last INCR (see the banner), so neither
	// durable nor survives_failover, with or without Sentinel.
	Capabilities capabilities() const noexcept override
	{
		Capabilities c;
		c.distributed = true;
		c.fencing_token = true; // while the node keeps its data (AOF, appendfsync always), no failover
		c.election = true;      // redis/election.cpp
		c.shared_mode = true;   // the sorted set of grants (redis/shared.cpp)
		c.semaphore = true;
		c.reclaim = true; // a holder asking for a key it holds gets its token back
		return c;
	}
	std::string_view provider() const noexcept override { return "Redis"; }

	// by token alone the script compares the value's "<token>:" prefix; with
	// a holder the whole "<token>:<holder>", in the same script as the change
	Result<bool> renew_by_token(std::string_view resource, std::int64_t token, std::string_view holder,
	                            milliseconds ttl) override
	{
		return redis::renew_by_match(*node_, keys_of(resource),
		                             std::to_string(token) + ":" + std::string{holder}, !holder.empty(), ttl);
	}

	Result<bool> release_by_token(std::string_view resource, std::int64_t token,
	                              std::string_view holder) override
	{
		return redis::release_by_match(*node_, keys_of(resource),
		                               std::to_string(token) + ":" + std::string{holder}, !holder.empty());
	}

protected:
	milliseconds max_ttl() const noexcept override { return redis::max_ttl; }
	// every renewal's deadline leaves margin_of(ttl) out (the engine's drift)
	milliseconds drift(milliseconds ttl) const noexcept override { return margin_of(ttl); }

	Result<Granted> grant(std::string_view resource, const LeaseOptions &options, const std::string &holder,
	                      milliseconds) override
	{
		return take(resource, options, holder, nullptr); // acquire() turns a throw into Errc::internal
	}

	// an election's grant: the lock's, with the value stored beside it
	Result<Granted> grant_leadership(std::string_view election, std::string_view value,
	                                 const LeaseOptions &options, const std::string &holder,
	                                 milliseconds) override
	{
		const std::string kept{value};
		return take(election, options, holder, &kept);
	}
	Result<LeaderView> read_leader(std::string_view election) override
	{
		return redis::read_view(*node_, keys_of(election), grace_);
	}
	Result<LeaderView> next_leader(std::string_view election, const LeaderView &seen,
	                               Clock::time_point deadline) override
	{
		return redis::next_view(*node_, keys_of(election), seen, deadline, grace_, subscriptions_);
	}

private:
	// take -- the acquire script (the campaign script when value is not
	// null) until granted or options.wait is over; the whole call ends by
	// wait + grace.  A waiting writer keeps its place in the lock's queue
	// (lib/queue.lua) and wakes on the locker's one subscriber (waker_).
	Result<Granted> take(std::string_view resource, const LeaseOptions &options, const std::string &holder,
	                     const std::string *value)
	{
		Keys keys = keys_of(resource);
		const auto start = Clock::now();
		const auto give_up = deadline_after(start, options.wait);
		const auto call_deadline = deadline_after(start, saturating_add(options.wait, grace_));
		const milliseconds provisional = std::min(options.ttl, grace_);
		const std::string provisional_ttl = std::to_string(provisional.count());
		// a writer that will wait marks itself on the readers' grants, and queues
		const bool writer = !value && options.mode == Mode::exclusive && options.limit == 0;
		const bool waits = options.wait > milliseconds{0};
		const milliseconds mark = writer && waits ? redis::writer_mark : milliseconds{0};
		const milliseconds beat = writer && waits ? redis::queue_beat : milliseconds{0};
		bool marked = false; // the script has marked this writer (lib/mark.lua)
		std::optional<redis::Waker::Interest> woken;
		if (waits && waker_.known(keys.released)) // a hot resource: subscribed already
			woken.emplace(waker_, keys.released);
		Backoff delay{milliseconds{25}, milliseconds{1000}};
		for (;;) {
			auto budget = left_of(call_deadline, grace_);
			if (budget <= milliseconds{0})
				return not_granted(resource, options);
			auto [seen, covered] = woken ? woken->mark() : std::pair<std::uint64_t, bool>{0, false};
			auto sent = Clock::now();
			auto answer = redis::integer_of(
			    ask(keys, options, holder, value, provisional_ttl, mark, marked, budget), *node_, keys);
			if (!answer)
				return refused(resource, options, value != nullptr, answer.error());
			if (*answer > 0)
				return confirm(resource, std::move(keys), value != nullptr, *answer, holder, options.ttl,
				               provisional, sent, call_deadline);
			marked = marked || mark > milliseconds{0} || beat > milliseconds{0};
			auto now = Clock::now();
			if (now >= give_up) {
				if (marked) // best effort: else the mark and the place expire by themselves
					if (auto left = left_of(call_deadline, grace_); left > milliseconds{0})
						redis::withdraw_mark(*node_, keys, holder, left);
				return not_granted(resource, options);
			}
			if (!covered) {
				// subscribe, then ask again at once: a release published
				// between the try and the subscription is not missed
				if (!woken)
					woken.emplace(waker_, keys.released);
				(void)woken->subscribed(std::min(give_up, now + grace_));
				continue;
			}
			// wake for the release (this waiter's turn), the holder's
			// expiry, or the next poll (a queued waiter's beat)
			auto holder_left = milliseconds{-*answer} + milliseconds{1};
			auto pause = std::min({delay.next(), holder_left, left_of(give_up, holder_left)});
			if (beat > milliseconds{0})
				pause = std::min(pause, redis::queue_poll);
			const std::string turn = "turn:" + holder;
			(void)woken->wait(
			    seen, [&](std::string_view said) { return said.rfind("turn:", 0) != 0 || said == turn; },
			    now + pause);
		}
	}

	// refused -- an error of the script, a mismatch named with the request's kind
	static Error refused(std::string_view resource, const LeaseOptions &options, bool campaign, Error e)
	{
		if (e.sqlstate == "LS003")
			e.message = (campaign ? "election \"" + std::string{resource} + "\": a campaign asks for "
			                      : "lease \"" + std::string{resource} + "\" asked for ") +
			            redis::describe_kind(redis::kind_of(options)) + ": " + e.message;
		return e;
	}

	// ask -- one try of the request's script: the campaign's, the lock's, a
	// reader's or a permit's
	Result<Reply> ask(const Keys &keys, const LeaseOptions &options, const std::string &holder,
	                  const std::string *value, const std::string &ttl, milliseconds mark, bool marked,
	                  milliseconds budget)
	{
		if (value)
			return redis::ask_campaign(*node_, keys, holder, ttl, *value, budget);
		if (options.mode == Mode::shared)
			return redis::ask_shared(*node_, keys, holder, ttl, options.limit, budget);
		if (options.limit > 0)
			return redis::ask_permit(*node_, keys, holder, ttl, options.limit, budget);
		return redis::ask_lock(*node_, keys, holder, ttl, mark, marked, budget);
	}

	// confirm -- the grant, of min(ttl, grace) when the TTL is longer: the
	// engine extends it to ttl by its first renewal (Granted::provisional);
	// a TTL over a day is extended here (see longest_deferred).  Its local
	// deadline counts from the request that set the expiry
	Result<Granted> confirm(std::string_view resource, Keys keys, bool election, std::int64_t token,
	                        const std::string &holder, milliseconds ttl, milliseconds provisional,
	                        Clock::time_point sent, Clock::time_point call_deadline)
	{
		std::string value = std::to_string(token) + ":" + holder;
		Granted g;
		g.token = token;
		g.deadline = deadline_after(sent, provisional - margin_of(provisional));
		g.provisional = ttl > provisional;
		if (g.provisional && ttl > longest_deferred) {
			auto extended = extend_now(resource, keys, election, value, ttl, provisional, call_deadline);
			if (!extended)
				return extended.error();
			g.deadline = *extended, g.provisional = false;
		}
		g.grant = redis::make_grant(node_, std::move(keys), election, std::move(value), grace_, g.deadline);
		return g;
	}

	// The longest TTL whose extension is left to the lease's first renewal:
	// a longer one (a lease meant to outlive its process, say) is extended
	// before acquire returns, so that its deadline is its TTL at once.
	static constexpr milliseconds longest_deferred{std::chrono::hours{24}};

	// extend_now -- the grant of min(ttl, grace) extended to ttl within the
	// call's deadline, else released (best effort); the new local deadline
	Result<Clock::time_point> extend_now(std::string_view resource, const Keys &keys, bool election,
	                                     const std::string &value, milliseconds ttl, milliseconds provisional,
	                                     Clock::time_point call_deadline)
	{
		auto extended_at = Clock::now();
		auto budget = left_of(call_deadline, grace_);
		Result<bool> extended = Error{Errc::unavailable, "", "no time left within wait + statement_grace"};
		if (budget > milliseconds{0})
			extended = redis::renew_grant(*node_, keys, election, value, ttl, budget);
		if (extended && *extended)
			return deadline_after(extended_at, ttl - margin_of(ttl));
		std::string why = extended ? std::string{"it expired first (the server answered too late)"}
		                           : extended.error().message;
		if (auto left = left_of(call_deadline, grace_); left > milliseconds{0})
			(void)redis::release_grant(*node_, keys, election, value, left);
		return Error{Errc::unavailable, "",
		             "lease \"" + std::string{resource} + "\": token " + value.substr(0, value.find(':')) +
		                 " was granted for " + format_duration(provisional) +
		                 " but could not be extended to its ttl " + format_duration(ttl) + ": " + why +
		                 " (the provisional grant expires by itself)"};
	}

	static Error not_granted(std::string_view resource, const LeaseOptions &options)
	{
		return Error{Errc::timeout, "",
		             "lease \"" + std::string{resource} + "\" not granted within " +
		                 format_duration(options.wait)};
	}

	std::shared_ptr<Node> node_;
	milliseconds grace_;
	redis::Subscriptions subscriptions_; // observers' channels, kept between observe calls
	redis::Waker waker_{*node_};         // the waiting calls' one subscriber (after node_: ends first)
};

} // namespace

Result<std::unique_ptr<Locker>>
connect_redis(std::string_view url, const ClientOptions &options)
{
	auto target = redis::parse_url(url, options);
	if (!target)
		return target.error();
	if (target->redlock || (!target->sentinel && target->nodes.size() != 1))
		return Error{Errc::invalid_argument, "",
		             "redis:// names exactly one node: redis://[[user]:password@]host:port[/db]"};
	std::shared_ptr<Node> node;
	if (target->sentinel)
		node = std::make_shared<Node>(
		    std::make_shared<redis::Sentinels>(std::move(target->nodes), std::move(target->master_name)),
		    target->db, target->credentials, options, options.statement_grace);
	else
		node = std::make_shared<Node>(target->nodes[0], target->db, target->credentials, options,
		                              options.statement_grace, target->tls);
	auto locker = std::make_unique<RedisLocker>(std::move(node), options.statement_grace);
	return handed_out(std::move(locker));
}

} // namespace pglease::detail
