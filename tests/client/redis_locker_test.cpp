// redis_locker_test.cpp -- the redis:// and redlock:// lockers, reached only
// through pglease::connect (so every test also shows that linking
// pglease::redis registers them), against real redis-servers each test
// starts itself with scripts/redis.sh: one for redis://, three (five) for
// redlock://, each on a loopback port free when it starts (support.hpp's
// ScriptServer: free_port, a bind race retried on a new port; a server
// restarted gets its own port back).  Never mocked, never skipped.
#include <signal.h>
#include <stdlib.h>
#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <iostream>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "pglease/pglease.hpp"
#include "redis/connection.hpp"
#include "support.hpp"

using pglease::Errc;
using namespace test_support;

namespace {

using pglease::detail::redis::Reply;

// A redis-server of one test, started at once on a free port; killed and
// removed when the object goes.
class RedisServer : public ScriptServer {
public:
	explicit RedisServer(bool persist) : ScriptServer("redis.sh", persist ? "persist" : "")
	{
		started_ = start();
	}
	// started -- the first start's outcome (on failure: what redis.sh and the log said)
	const ::testing::AssertionResult &started() const { return started_; }

	// raw -- one command on a connection of its own, behind the locker's back
	pglease::Result<Reply> raw(std::initializer_list<std::string_view> argv)
	{
		auto c = pglease::detail::redis::Connection::open({"127.0.0.1", port()}, {500ms, 500ms});
		if (!c)
			return c.error();
		return c->command(argv);
	}

	// del -- DEL a key behind the locker's back (a grant broken server-side)
	bool del(const std::string &key)
	{
		auto r = raw({"DEL", key});
		return r && r->is_integer() && r->integer == 1;
	}

	bool exists(const std::string &key)
	{
		auto r = raw({"EXISTS", key});
		EXPECT_TRUE(r && r->is_integer()) << "EXISTS " << key;
		return r && r->is_integer() && r->integer == 1;
	}

	// pid -- the server's own word (INFO server), for SIGSTOP / SIGCONT
	pid_t pid()
	{
		auto r = raw({"INFO", "server"});
		if (!r || !r->is_string())
			return 0;
		auto at = r->text.find("process_id:");
		return at == std::string::npos ? 0 : static_cast<pid_t>(std::atoi(r->text.c_str() + at + 11));
	}

private:
	::testing::AssertionResult started_ = ::testing::AssertionFailure();
};

// Frozen -- servers stopped with SIGSTOP for the object's life: SIGCONT in
// the destructor, so a failing assertion never leaves a frozen server
class Frozen {
public:
	explicit Frozen(std::vector<pid_t> pids) : pids_(std::move(pids))
	{
		for (pid_t p : pids_)
			EXPECT_EQ(::kill(p, SIGSTOP), 0) << "SIGSTOP " << p;
	}
	~Frozen() { thaw(); }
	Frozen(const Frozen &) = delete;
	Frozen &operator=(const Frozen &) = delete;
	void thaw()
	{
		for (pid_t p : pids_)
			(void)::kill(p, SIGCONT);
		pids_.clear();
	}

private:
	std::vector<pid_t> pids_;
};

// timed -- how long fn took, in ms
template <class F>
long long
timed(F &&fn)
{
	auto t0 = Clock::now();
	fn();
	return ms_since(t0);
}

// The longest TTL the Redis and Redlock providers hold: 2^53-1 ms.
constexpr milliseconds redis_max_ttl{(std::int64_t{1} << 53) - 1};
constexpr auto thousand_years = std::chrono::duration_cast<milliseconds>(std::chrono::hours{24 * 365 * 1000});

std::string
redis_url(const RedisServer &server)
{
	return "redis://127.0.0.1:" + std::to_string(server.port());
}

// redlock_url -- redlock:// with every node
std::string
redlock_url(const std::vector<std::unique_ptr<RedisServer>> &nodes)
{
	std::string url = "redlock://";
	for (const auto &node : nodes)
		url += (url.size() > 10 ? "," : "") + std::string("127.0.0.1:") + std::to_string(node->port());
	return url;
}

// start_nodes -- N redis-servers, each on a port of its own
::testing::AssertionResult
start_nodes(std::vector<std::unique_ptr<RedisServer>> &nodes, int n)
{
	for (int i = 0; i < n; i++) {
		nodes.push_back(std::make_unique<RedisServer>(false));
		if (!nodes.back()->started())
			return ::testing::AssertionFailure()
			       << "node " << i + 1 << " of " << n << ": " << nodes.back()->started().message();
	}
	return ::testing::AssertionSuccess();
}

std::string
resource()
{
	return test_resource("locker-test/");
}

std::unique_ptr<pglease::Locker>
connect_or_fail(const std::string &url)
{
	auto r = pglease::connect(url, quick_backoff());
	EXPECT_TRUE(r) << url << ": " << r.error();
	return r ? std::move(*r) : nullptr;
}

class RedisLocker : public ::testing::Test {
protected:
	explicit RedisLocker(bool persist = false) : server(persist) {}
	void SetUp() override
	{
		ASSERT_TRUE(server.started()) << "install redis-server: scripts/install-deps.sh";
		locker = connect_or_fail(redis_url(server));
		ASSERT_TRUE(locker);
	}
	RedisServer server;
	std::unique_ptr<pglease::Locker> locker;

	// eventually_acquire -- the first grant after a restart (the node may be
	// loading its AOF, and the locker in reconnect backoff)
	std::optional<pglease::Lease> eventually_acquire(const std::string &r)
	{
		std::optional<pglease::Lease> out;
		eventually(
		    [&] {
			    auto lease = locker->try_acquire(r, opts(10s));
			    if (lease)
				    out.emplace(std::move(*lease));
			    return out.has_value();
		    },
		    3s);
		return out;
	}
};

class PersistentRedisLocker : public RedisLocker {
protected:
	PersistentRedisLocker() : RedisLocker(true) {}
};

class RedlockLocker : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_TRUE(start_nodes(nodes, 3)) << "install redis-server: scripts/install-deps.sh";
		locker = connect_or_fail(redlock_url(nodes));
		ASSERT_TRUE(locker);
	}
	std::vector<std::unique_ptr<RedisServer>> nodes;
	std::unique_ptr<pglease::Locker> locker;
};

// Five nodes: a round on all of them frozen shows whether the nodes are
// asked one after the other (5 per-node timeouts) or at once (one).
class WideRedlockLocker : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_TRUE(start_nodes(nodes, 5)) << "install redis-server: scripts/install-deps.sh";
		for (const auto &node : nodes) {
			pids.push_back(node->pid());
			ASSERT_GT(pids.back(), 0);
		}
		locker = connect_or_fail(redlock_url(nodes));
		ASSERT_TRUE(locker);
	}
	std::vector<std::unique_ptr<RedisServer>> nodes;
	std::vector<pid_t> pids;
	std::unique_ptr<pglease::Locker> locker;
};

} // namespace

// ---- redis:// -------------------------------------------------------------------

TEST_F(RedisLocker, connect_gives_the_redis_locker_with_its_documented_capabilities)
{
	EXPECT_EQ(locker->provider(), "Redis");
	auto c = locker->capabilities();
	EXPECT_TRUE(c.distributed);
	EXPECT_TRUE(c.fencing_token);
	EXPECT_FALSE(c.fenced_write);
	EXPECT_FALSE(c.fifo_wait);
	EXPECT_FALSE(c.ephemeral);
	EXPECT_FALSE(c.durable);
	EXPECT_FALSE(c.survives_failover);
	EXPECT_TRUE(c.shared_mode);
	EXPECT_TRUE(c.semaphore);
}

TEST_F(RedisLocker, contended_then_released_then_higher_token)
{
	auto first = locker->acquire(resource(), opts(10s));
	ASSERT_TRUE(first) << first.error();
	EXPECT_GT(first->token(), 0);
	auto second = in_other_thread([&] { return locker->try_acquire(resource(), opts(10s)); });
	ASSERT_FALSE(second) << "a held resource was granted twice";
	EXPECT_EQ(second.error().code, Errc::timeout) << second.error();

	ASSERT_TRUE(first->release());
	auto third = in_other_thread([&] { return locker->try_acquire(resource(), opts(10s)); });
	ASSERT_TRUE(third) << third.error();
	EXPECT_GT(third->token(), first->token()) << "the next grant's token must be higher";
}

// the server keeps a key until its clock, in whole ms rounded down, + ttl
// (up to 1 ms before the client's sent + ttl), on its wall clock: each local
// deadline leaves 2 ms + ttl/1000 out, at acquire (with and without the
// extension past statement_grace) and at each renewal; a TTL longer than
// the grace is granted for the grace first (its first renewal extends it)
TEST_F(RedisLocker, the_local_deadline_leaves_the_servers_rounding_and_clock_rate_out)
{
	const milliseconds grace = pglease::ClientOptions{}.statement_grace;
	for (auto ttl : {milliseconds{1000}, milliseconds{10000}, milliseconds{600000}}) {
		auto o = opts(ttl);
		o.auto_renew = false;
		auto lease = locker->acquire(resource() + "/" + std::to_string(ttl.count()), o);
		ASSERT_TRUE(lease) << lease.error();
		const auto first = std::min(ttl, grace);
		EXPECT_LE(lease->remaining(), first - first / 1000 - 2ms) << "ttl " << ttl.count() << " ms: at acquire";
		EXPECT_GT(lease->remaining(), first - first / 1000 - 500ms) << "ttl " << ttl.count() << " ms";
		ASSERT_TRUE(lease->renew());
		EXPECT_LE(lease->remaining(), ttl - ttl / 1000 - 2ms) << "ttl " << ttl.count() << " ms: at renewal";
		ASSERT_TRUE(lease->release());
	}
}

TEST_F(RedisLocker, expired_grant_is_taken_over_and_its_renew_is_lost)
{
	auto o = opts(300ms);
	o.auto_renew = false;
	auto first = locker->acquire(resource(), o);
	ASSERT_TRUE(first) << first.error();
	std::this_thread::sleep_for(400ms);
	auto taker = in_other_thread([&] { return locker->try_acquire(resource(), opts(10s)); });
	ASSERT_TRUE(taker) << "an expired grant must be free: " << taker.error();
	EXPECT_GT(taker->token(), first->token());
	auto renewed = first->renew();
	ASSERT_FALSE(renewed) << "the first holder renewed a grant taken over";
	EXPECT_EQ(renewed.error().code, Errc::lost);
	EXPECT_FALSE(first->valid());
}

TEST_F(RedisLocker, auto_renew_keeps_the_lease_past_its_ttl)
{
	auto lease = locker->acquire(resource(), opts(300ms));
	ASSERT_TRUE(lease) << lease.error();
	std::this_thread::sleep_for(1s);
	EXPECT_TRUE(lease->valid()) << "auto-renewal every ttl/3 must keep it";
	auto other = in_other_thread([&] { return locker->try_acquire(resource(), opts(10s)); });
	EXPECT_FALSE(other) << "granted to another holder while renewed";
}

TEST_F(RedisLocker, deleted_key_is_lost_exactly_once_through_auto_renew)
{
	auto lease = locker->acquire(resource(), opts(600ms));
	ASSERT_TRUE(lease) << lease.error();
	std::atomic<int> lost{0};
	lease->on_lost([&](const pglease::Error &) { lost++; });
	ASSERT_TRUE(server.del("pglease:lock:" + resource())) << "the lock key is pglease:lock:<resource>";
	EXPECT_TRUE(eventually([&] { return lost.load() > 0; }, 1s)) << "no on_lost within 1 s of the DEL";
	std::this_thread::sleep_for(500ms);
	EXPECT_EQ(lost.load(), 1) << "on_lost must be called exactly once";
	EXPECT_FALSE(lease->valid());
	EXPECT_TRUE(lease->cancel_token().cancelled());
}

TEST_F(RedisLocker, release_wakes_a_waiter_well_before_its_retry_backoff)
{
	// After 1.5 s of waiting a retry is due every 0.5-1 s; pub/sub wakes the
	// waiter within milliseconds.  Three rounds: a retry that happens to
	// fall right after the release cannot pass them all.
	for (int round = 0; round < 3; round++) {
		std::string r = resource() + "/" + std::to_string(round);
		auto held = locker->acquire(r, opts(10s));
		ASSERT_TRUE(held) << held.error();
		auto waiter = std::async(std::launch::async, [&] {
			auto lease = locker->acquire(r, opts(10s, 5s));
			return std::make_pair(lease.has_value(), Clock::now());
		});
		std::this_thread::sleep_for(1500ms);
		auto released_at = Clock::now();
		ASSERT_TRUE(held->release());
		auto [granted, at] = waiter.get();
		ASSERT_TRUE(granted);
		auto after = std::chrono::duration_cast<milliseconds>(at - released_at).count();
		EXPECT_LT(after, 150) << "round " << round << ": granted " << after
		                      << " ms after the release: not woken by its publish";
	}
}

TEST_F(RedisLocker, waiting_acquire_times_out_within_wait_plus_grace)
{
	auto held = locker->acquire(resource(), opts(10s));
	ASSERT_TRUE(held) << held.error();
	auto t0 = Clock::now();
	auto waited = in_other_thread([&] { return locker->acquire(resource(), opts(10s, 500ms)); });
	auto took = ms_since(t0);
	ASSERT_FALSE(waited);
	EXPECT_EQ(waited.error().code, Errc::timeout) << waited.error();
	EXPECT_GE(took, 500) << "gave up before its wait";
	EXPECT_LT(took, 500 + 200) << "waited well past its wait";
}

TEST_F(RedisLocker, same_holder_asking_again_gets_its_token_back)
{
	auto o = opts(10s);
	o.holder = "worker-7";
	o.reclaim = true; // the label as given (LeaseOptions::reclaim)
	auto first = locker->acquire(resource(), o);
	ASSERT_TRUE(first) << first.error();
	auto again = in_other_thread([&] { return locker->try_acquire(resource(), o); });
	ASSERT_TRUE(again) << "the holder's own grant must be given back: " << again.error();
	EXPECT_EQ(again->token(), first->token());
	(void)again->detach();
}

TEST_F(RedisLocker, token_level_renew_and_release_compare_the_token)
{
	auto o = opts(10s);
	o.auto_renew = false;
	auto lease = locker->acquire(resource(), o);
	ASSERT_TRUE(lease) << lease.error();
	auto token = lease->detach();
	auto stale = locker->renew(resource(), token + 1, 5s);
	ASSERT_TRUE(stale) << stale.error();
	EXPECT_FALSE(*stale) << "renewed with a token that is not the grant's";
	auto renewed = locker->renew(resource(), token, 5s);
	ASSERT_TRUE(renewed) << renewed.error();
	EXPECT_TRUE(*renewed);
	auto wrong = locker->release(resource(), token + 1);
	ASSERT_TRUE(wrong) << wrong.error();
	EXPECT_FALSE(*wrong);
	auto released = locker->release(resource(), token);
	ASSERT_TRUE(released) << released.error();
	EXPECT_TRUE(*released);
	auto again = locker->release(resource(), token);
	ASSERT_TRUE(again) << again.error();
	EXPECT_FALSE(*again) << "released twice";
	auto bad = locker->renew(resource(), 0, 5s);
	ASSERT_FALSE(bad);
	EXPECT_EQ(bad.error().code, Errc::invalid_argument);
}

// issue 22: the holder forms compare the whole "<token>:<holder>" in the
// script, so the right token with another holder (or a prefix or extension
// of its label) changes nothing: the lock keeps its value and its PTTL
TEST_F(RedisLocker, token_level_calls_with_a_holder_act_only_on_that_holders_grant)
{
	auto o = opts(3s);
	o.holder = "alice";
	o.reclaim = true; // the label as given (LeaseOptions::reclaim)
	auto lease = locker->acquire(resource(), o);
	ASSERT_TRUE(lease) << lease.error();
	const auto token = lease->detach();
	const std::string lock = "pglease:lock:" + resource();
	for (const char *other : {"mallory", "alic", "alice2", "ALICE"}) {
		auto renewed = locker->renew(resource(), token, other, 60s);
		ASSERT_TRUE(renewed) << other << ": " << renewed.error();
		EXPECT_FALSE(*renewed) << "renewed as " << other;
		auto released = locker->release(resource(), token, other);
		ASSERT_TRUE(released) << other << ": " << released.error();
		EXPECT_FALSE(*released) << "released as " << other;
	}
	auto pttl = server.raw({"PTTL", lock});
	ASSERT_TRUE(pttl && pttl->is_integer());
	EXPECT_LE(pttl->integer, 3000) << "another holder extended the lease";
	EXPECT_GT(pttl->integer, 0) << "another holder ended the lease";
	auto empty = locker->release(resource(), token, "");
	ASSERT_FALSE(empty) << "an empty holder must not mean any holder";
	EXPECT_EQ(empty.error().code, Errc::invalid_argument) << empty.error();
	auto renewed = locker->renew(resource(), token, "alice", 60s);
	ASSERT_TRUE(renewed) << renewed.error();
	EXPECT_TRUE(*renewed);
	pttl = server.raw({"PTTL", lock});
	ASSERT_TRUE(pttl && pttl->is_integer());
	EXPECT_GT(pttl->integer, 30000) << "the holder's renew did not extend the lease";
	auto stale = locker->release(resource(), token + 1, "alice");
	ASSERT_TRUE(stale) << stale.error();
	EXPECT_FALSE(*stale) << "released with a token that is not the grant's";
	auto released = locker->release(resource(), token, "alice");
	ASSERT_TRUE(released) << released.error();
	EXPECT_TRUE(*released);
	EXPECT_FALSE(server.exists(lock));
}

TEST_F(RedisLocker, stopped_server_is_unavailable_promptly_and_works_after_restart)
{
	{
		auto warm = locker->try_acquire(resource(), opts(1s)); // a pooled connection to go stale
		ASSERT_TRUE(warm) << warm.error();
	}
	ASSERT_TRUE(server.stop());
	for (int i = 0; i < 3; i++) {
		auto t0 = Clock::now();
		auto r = locker->try_acquire(resource(), opts(5s));
		auto took = ms_since(t0);
		ASSERT_FALSE(r);
		EXPECT_EQ(r.error().code, Errc::unavailable) << r.error();
		EXPECT_LT(took, 200) << "attempt " << i << " took " << took << " ms with the server down";
	}
	auto waited = locker->acquire(resource(), opts(5s, 2s));
	ASSERT_FALSE(waited);
	EXPECT_EQ(waited.error().code, Errc::unavailable) << "a wait does not hide an unreachable server";
	ASSERT_TRUE(server.start());
	bool granted =
	    eventually([&] { return static_cast<bool>(locker->try_acquire(resource(), opts(5s))); }, 2s);
	EXPECT_TRUE(granted) << "no grant within 2 s of the restart (backoff_max is 300 ms)";
}

TEST_F(PersistentRedisLocker, token_survives_a_crash_with_appendfsync_always)
{
	std::int64_t before = 0;
	for (int i = 0; i < 3; i++) {
		auto lease = locker->acquire(resource(), opts(10s));
		ASSERT_TRUE(lease) << lease.error();
		before = lease->token();
	}
	ASSERT_TRUE(server.kill());
	ASSERT_TRUE(server.start());
	auto after = eventually_acquire(resource());
	ASSERT_TRUE(after);
	EXPECT_GT(after->token(), before) << "with AOF and appendfsync always the counter survives kill -9";
}

TEST_F(RedisLocker, token_restarts_after_a_crash_without_persistence)
{
	// the documented limitation: without AOF the counter is gone with the data
	std::int64_t before = 0;
	for (int i = 0; i < 3; i++) {
		auto lease = locker->acquire(resource(), opts(10s));
		ASSERT_TRUE(lease) << lease.error();
		before = lease->token();
	}
	ASSERT_TRUE(server.kill());
	ASSERT_TRUE(server.start());
	auto after = eventually_acquire(resource());
	ASSERT_TRUE(after);
	EXPECT_LE(after->token(), before) << "without persistence the token is NOT monotonic across a restart";
}

// ---- redis:// under hostile data, frozen servers, extreme durations (issue 19) --

TEST_F(RedisLocker, hostile_token_counter_is_refused_and_nothing_is_written)
{
	// tokens go through Lua numbers (doubles): only integers from 0 to
	// 2^53-2 can be counted on to give a higher, exact next token
	const std::string lock = "pglease:lock:" + resource();
	const std::string counter = "pglease:token:" + resource();
	for (const char *hostile :
	     {"abc", "5.5", "-3", "9007199254740993", "9007199254740992", "1e3", "007", " 5", ""}) {
		ASSERT_TRUE(server.raw({"SET", counter, hostile}));
		auto lease = locker->try_acquire(resource(), opts(10s));
		ASSERT_FALSE(lease) << "counter \"" << hostile << "\" gave token " << lease->token();
		EXPECT_EQ(lease.error().code, Errc::internal) << hostile << ": " << lease.error();
		EXPECT_FALSE(pglease::is_retryable(lease.error())) << hostile;
		EXPECT_NE(lease.error().message.find(counter), std::string::npos)
		    << "the message must name the damaged key: " << lease.error().message;
		EXPECT_FALSE(server.exists(lock)) << "counter \"" << hostile << "\" left a lock behind";
		auto after = server.raw({"GET", counter});
		ASSERT_TRUE(after);
		EXPECT_EQ(after->text, hostile) << "the counter was changed";
	}
	// a lock naming this holder with no valid token: refused, untouched
	// (the re-acquire path gave nil or token -5 back after a PEXPIRE)
	auto o = opts(10s);
	o.holder = "worker";
	o.reclaim = true; // the label as given (LeaseOptions::reclaim)
	ASSERT_TRUE(server.raw({"SET", counter, "7"}));
	for (const char *damaged : {"x:worker", "-5:worker", "0:worker", ":worker"}) {
		ASSERT_TRUE(server.raw({"SET", lock, damaged}));
		auto again = locker->try_acquire(resource(), o);
		ASSERT_FALSE(again) << damaged << " gave token " << again->token();
		EXPECT_EQ(again.error().code, Errc::internal) << damaged << ": " << again.error();
		EXPECT_NE(again.error().message.find(lock), std::string::npos) << again.error();
		auto pttl = server.raw({"PTTL", lock});
		ASSERT_TRUE(pttl && pttl->is_integer());
		EXPECT_EQ(pttl->integer, -1) << damaged << ": an expiry was set on a refused lock";
	}
	ASSERT_TRUE(server.del(lock));
	// repaired: granted again, above the repaired value
	ASSERT_TRUE(server.raw({"SET", counter, "41"}));
	auto lease = locker->try_acquire(resource(), opts(10s));
	ASSERT_TRUE(lease) << lease.error();
	EXPECT_EQ(lease->token(), 42);
}

TEST_F(RedisLocker, counter_near_2_pow_53_gives_exact_increasing_tokens_then_refuses_at_the_limit)
{
	const std::string counter = "pglease:token:" + resource();
	ASSERT_TRUE(server.raw({"SET", counter, "9007199254740989"})); // 2^53 - 3
	for (std::int64_t want : {9007199254740990LL, 9007199254740991LL}) {
		auto lease = locker->try_acquire(resource(), opts(10s));
		ASSERT_TRUE(lease) << lease.error();
		EXPECT_EQ(lease->token(), want);
		ASSERT_TRUE(lease->release());
	}
	auto at_limit = locker->try_acquire(resource(), opts(10s));
	ASSERT_FALSE(at_limit) << "token " << at_limit->token() << " above 2^53-1 is not exact";
	EXPECT_EQ(at_limit.error().code, Errc::internal) << at_limit.error();
	EXPECT_NE(at_limit.error().message.find("9007199254740991"), std::string::npos) << at_limit.error();
	EXPECT_FALSE(server.exists("pglease:lock:" + resource())) << "a refusal left a lock behind";
	auto after = server.raw({"GET", counter});
	ASSERT_TRUE(after);
	EXPECT_EQ(after->text, "9007199254740991");
}

TEST_F(RedisLocker, holder_or_resource_with_a_nul_byte_is_refused_and_nothing_is_written)
{
	// the acquire script's value is "<token>:<holder>": a NUL must never
	// make "job\0A" and "job" one holder
	auto o = opts(10s);
	o.holder = std::string("job\0A", 5);
	o.reclaim = true; // the label as given (LeaseOptions::reclaim)
	auto lease = locker->try_acquire(resource(), o);
	ASSERT_FALSE(lease);
	EXPECT_EQ(lease.error().code, Errc::invalid_argument) << lease.error();
	auto nul_name = locker->try_acquire(resource() + std::string("\0-eu", 4), opts(10s));
	ASSERT_FALSE(nul_name);
	EXPECT_EQ(nul_name.error().code, Errc::invalid_argument) << nul_name.error();
	EXPECT_FALSE(server.exists("pglease:lock:" + resource()));
	EXPECT_FALSE(server.exists("pglease:token:" + resource()));
	auto keys = server.raw({"DBSIZE"});
	ASSERT_TRUE(keys);
	EXPECT_EQ(keys->integer, 0) << "a refused acquire wrote a key";
}

TEST_F(RedisLocker, wait_of_milliseconds_max_waits_for_the_release)
{
	auto held = locker->acquire(resource(), opts(10s));
	ASSERT_TRUE(held) << held.error();
	auto t0 = Clock::now();
	auto waiter = std::async(std::launch::async,
	                         [&] { return locker->acquire(resource(), opts(10s, milliseconds::max())); });
	std::this_thread::sleep_for(1s);
	ASSERT_TRUE(held->release());
	auto granted = waiter.get();
	auto took = ms_since(t0);
	ASSERT_TRUE(granted) << "after " << took << " ms: " << granted.error();
	EXPECT_GE(took, 900) << "granted before the release";
	EXPECT_GT(granted->token(), held->token());
}

TEST_F(RedisLocker, ttl_of_1000_years_stays_valid_and_one_above_2_pow_53_ms_is_refused_naming_the_maximum)
{
	auto o = opts(thousand_years);
	o.auto_renew = false;
	auto lease = locker->acquire(resource(), o);
	ASSERT_TRUE(lease) << lease.error();
	EXPECT_TRUE(lease->valid()) << "a 1000-year lease must not be expired at once";
	EXPECT_GT(lease->remaining(), std::chrono::hours{24 * 365 * 100}) << "saturates at the clock's end";
	auto pttl = server.raw({"PTTL", "pglease:lock:" + resource()});
	ASSERT_TRUE(pttl && pttl->is_integer());
	EXPECT_GT(pttl->integer, thousand_years.count() - 60000) << "extended to the full TTL on the server";
	ASSERT_TRUE(lease->release());

	auto at_max = locker->try_acquire(resource(), opts(redis_max_ttl));
	ASSERT_TRUE(at_max) << "2^53-1 ms is the documented maximum: " << at_max.error();
	EXPECT_TRUE(at_max->valid());
	ASSERT_TRUE(at_max->release());

	for (milliseconds ttl : {redis_max_ttl + 1ms, milliseconds::max()}) {
		auto refused = locker->try_acquire(resource(), opts(ttl));
		ASSERT_FALSE(refused) << ttl.count();
		EXPECT_EQ(refused.error().code, Errc::invalid_argument) << refused.error();
		EXPECT_NE(refused.error().message.find("9007199254740991ms"), std::string::npos) << refused.error();
	}
	auto by_token = locker->renew(resource(), 1, milliseconds::max());
	ASSERT_FALSE(by_token);
	EXPECT_EQ(by_token.error().code, Errc::invalid_argument) << by_token.error();
}

TEST_F(RedisLocker, database_the_server_does_not_have_is_invalid_argument)
{
	// redis.sh's servers have the default 16 databases: /16 parses (a
	// server may have more) and the first call says it does not exist
	auto r = pglease::connect(redis_url(server) + "/16", quick_backoff());
	ASSERT_TRUE(r) << r.error();
	auto lease = (*r)->try_acquire(resource(), opts(10s));
	ASSERT_FALSE(lease);
	EXPECT_EQ(lease.error().code, Errc::invalid_argument) << lease.error();
	EXPECT_FALSE(pglease::is_retryable(lease.error()));
	EXPECT_NE(lease.error().message.find("database 16"), std::string::npos) << lease.error();
	auto in_15 = pglease::connect(redis_url(server) + "/15", quick_backoff());
	ASSERT_TRUE(in_15) << in_15.error();
	auto granted = (*in_15)->try_acquire(resource(), opts(10s));
	EXPECT_TRUE(granted) << granted.error();
}

TEST_F(RedisLocker, frozen_server_bounds_each_call_by_one_statement_grace)
{
	// a failure on a pooled connection bought a second full timeout on a
	// fresh one (a frozen server still accepts connections): 2 x grace
	const long long grace = pglease::ClientOptions{}.statement_grace.count();
	const long long bound = grace + 1500;
	pid_t pid = server.pid();
	ASSERT_GT(pid, 0);
	auto o = opts(60s);
	o.auto_renew = false;
	o.allow_nested_try = true; // this thread holds `lease` while it warms the pool
	auto lease = locker->acquire(resource(), o);
	ASSERT_TRUE(lease) << lease.error();
	auto by_token = locker->acquire(resource() + "/token", o);
	ASSERT_TRUE(by_token) << by_token.error();
	const std::int64_t token = by_token->detach();

	// warm -- a pooled connection for the next call (the node may be in backoff after a thaw)
	auto warm = [&] {
		ASSERT_TRUE(
		    eventually([&] { return static_cast<bool>(locker->try_acquire(resource() + "/warm", o)); }, 3s))
		    << "the server did not come back";
	};
	struct Call {
		const char *name;
		std::function<bool()> run; // true: failed as it must with the server frozen
	};
	const Call calls[] = {
	    {"Lease::renew", [&] { return !lease->renew(); }},
	    {"Locker::renew(token)", [&] { return !locker->renew(resource() + "/token", token, 60s); }},
	    {"Locker::release(token)", [&] { return !locker->release(resource() + "/token", token); }},
	    {"Lease::release", [&] { return !lease->release(); }},
	};
	for (const Call &call : calls) {
		warm();
		Frozen frozen({pid});
		bool failed = false;
		auto took = timed([&] { failed = call.run(); });
		frozen.thaw();
		EXPECT_TRUE(failed) << call.name << " succeeded on a frozen server";
		EXPECT_LE(took, bound) << call.name << " took " << took << " ms, grace " << grace << " ms";
		std::cout << call.name << " on a frozen server: " << took << " ms (grace " << grace << " ms)\n";
	}
}

TEST_F(RedisLocker, acquire_timed_out_on_a_frozen_server_leaves_no_lasting_lock)
{
	// the server runs the queued acquire when it resumes, after the caller
	// gave up: it must not hold a 60 s lock under a holder nobody knows
	const long long grace = pglease::ClientOptions{}.statement_grace.count();
	pid_t pid = server.pid();
	ASSERT_GT(pid, 0);
	ASSERT_TRUE(locker->try_acquire(resource() + "/warm", opts(1s))); // a pooled connection
	Frozen frozen({pid});
	pglease::Result<pglease::Lease> lost = pglease::Error{};
	auto took = timed([&] { lost = locker->try_acquire(resource(), opts(60s)); });
	ASSERT_FALSE(lost) << "granted by a frozen server";
	EXPECT_EQ(lost.error().code, Errc::unavailable) << lost.error();
	EXPECT_LE(took, grace + 1500) << "try_acquire took " << took << " ms, grace " << grace << " ms";
	auto thawed_at = Clock::now();
	frozen.thaw();

	auto other = connect_or_fail(redis_url(server));
	std::optional<pglease::Lease> taken;
	eventually(
	    [&] {
		    auto l = other->try_acquire(resource(), opts(10s));
		    if (l)
			    taken.emplace(std::move(*l));
		    return taken.has_value();
	    },
	    milliseconds{grace + 1500}, 50ms);
	auto free_after = ms_since(thawed_at);
	ASSERT_TRUE(taken) << "the timed-out acquire left a lock for more than grace + 1.5 s after the thaw";
	EXPECT_LE(free_after, grace + 1500);
	std::cout << "frozen try_acquire: " << took << " ms; the resource was free again " << free_after
	          << " ms after the thaw (grace " << grace << " ms)\n";
}

// ---- redis://: round trips of an uncontended pair (issue 38) -------------------

namespace {

// scripts -- the script calls (EVAL, EVALSHA) the server ran since its last
// CONFIG RESETSTAT (INFO commandstats; it counts the commands a script calls
// too, so the rest is not the clients' own); -1 when unreadable
long long
scripts(RedisServer &server)
{
	auto info = server.raw({"INFO", "commandstats"});
	if (!info || !info->is_string())
		return -1;
	long long total = 0;
	std::istringstream lines(info->text);
	for (std::string line; std::getline(lines, line);) {
		if (line.rfind("cmdstat_eval", 0) != 0)
			continue;
		auto at = line.find("calls=");
		if (at != std::string::npos)
			total += std::atoll(line.c_str() + at + 6);
	}
	return total;
}

// pttl -- the lock key's PTTL in ms (-2: no key)
long long
pttl(RedisServer &server, const std::string &r)
{
	auto t = server.raw({"PTTL", "pglease:lock:" + r});
	return t && t->is_integer() ? t->integer : -3;
}

} // namespace

TEST_F(RedisLocker, an_uncontended_pair_is_two_script_calls_at_any_ttl)
{
	// acquire one script call, release one, also when the TTL is longer
	// than the grace (the grant of min(ttl, grace) is extended later, by the
	// lease's first renewal, not on the acquire's path)
	for (auto ttl : {1s, 30s}) {
		for (bool renews : {true, false}) {
			auto o = opts(ttl);
			o.auto_renew = renews;
			ASSERT_TRUE(locker->try_acquire(resource(), o)); // the scripts loaded, a pooled connection
			ASSERT_TRUE(server.raw({"CONFIG", "RESETSTAT"}));
			for (int i = 0; i < 10; i++) {
				auto lease = locker->try_acquire(resource(), o);
				ASSERT_TRUE(lease) << lease.error();
				ASSERT_TRUE(lease->release());
			}
			EXPECT_EQ(scripts(server), 20)
			    << "10 pairs of TTL " << ttl.count() << " s, auto_renew " << renews;
		}
	}
}

TEST_F(RedisLocker, a_grant_longer_than_the_grace_is_extended_to_its_ttl_off_the_acquires_path)
{
	// the key first lives min(ttl, grace); the engine's one renewal at half
	// of that extends it to the TTL with auto_renew or without it, and
	// detach and the locker's end extend it first
	const long long grace = pglease::ClientOptions{}.statement_grace.count();
	auto with = locker->try_acquire(resource() + "/renewed", opts(60s));
	ASSERT_TRUE(with) << with.error();
	auto o = opts(60s);
	o.auto_renew = false;
	o.allow_nested_try = true; // one thread holds them all
	auto without = locker->try_acquire(resource() + "/manual", o);
	ASSERT_TRUE(without) << without.error();
	EXPECT_LE(pttl(server, resource() + "/renewed"), grace);
	EXPECT_LE(without->remaining().count(), grace);
	std::this_thread::sleep_for(milliseconds{grace * 3 / 4});
	EXPECT_GT(pttl(server, resource() + "/renewed"), 50000);
	EXPECT_GT(pttl(server, resource() + "/manual"), 50000);
	EXPECT_GT(without->remaining().count(), 50000);
	EXPECT_TRUE(with->valid() && without->valid());

	auto detached = locker->try_acquire(resource() + "/detached", o);
	ASSERT_TRUE(detached) << detached.error();
	ASSERT_GT(detached->detach(), 0);
	EXPECT_GT(pttl(server, resource() + "/detached"), 50000) << "a detached lease ends at its TTL";

	auto kept = locker->try_acquire(resource() + "/outlives", o);
	ASSERT_TRUE(kept) << kept.error();
	locker.reset();
	EXPECT_GT(pttl(server, resource() + "/outlives"), 50000) << "a lease outliving its locker ends at its TTL";
	EXPECT_TRUE(kept->valid());
	EXPECT_GT(kept->remaining().count(), 50000);
}

// ---- redis://: a hot lock goes to its waiters in order (issue 38) -------------

TEST_F(RedisLocker, a_hot_lock_is_handed_to_its_waiters_in_turn_not_back_to_the_releaser)
{
	// 8 clients, each its own locker, take one lock in a loop: hold 200 us,
	// release, ask again at once.  Without a queue the releaser won ~95 %
	// of the grants; with it, every client's share is within 2x of another's
	constexpr int clients = 8;
	std::vector<std::unique_ptr<pglease::Locker>> lockers;
	for (int i = 0; i < clients; i++) {
		lockers.push_back(connect_or_fail(redis_url(server)));
		ASSERT_TRUE(lockers.back());
	}
	std::vector<int> grants(clients, 0);
	std::vector<std::pair<int, std::int64_t>> order; // (client, token), in grant order
	std::mutex mu;
	std::atomic<int> failures{0};
	const auto end = Clock::now() + 2s;
	std::vector<std::thread> threads;
	for (int c = 0; c < clients; c++)
		threads.emplace_back([&, c] {
			while (Clock::now() < end) {
				auto lease = lockers[c]->acquire(resource(), opts(10s, 5s));
				if (!lease) {
					failures++;
					continue;
				}
				{
					std::lock_guard<std::mutex> lk(mu);
					grants[c]++;
					order.emplace_back(c, lease->token());
				}
				std::this_thread::sleep_for(200us);
				if (!lease->release())
					failures++;
			}
		});
	for (auto &t : threads)
		t.join();
	EXPECT_EQ(failures.load(), 0);
	auto [least, most] = std::minmax_element(grants.begin(), grants.end());
	ASSERT_GT(*least, 0) << "a client was never granted";
	EXPECT_LE(double(*most) / *least, 2.0) << "grants per client from " << *least << " to " << *most;
	int own = 0;
	for (size_t i = 1; i < order.size(); i++) {
		own += order[i].first == order[i - 1].first;
		EXPECT_GT(order[i].second, order[i - 1].second) << "tokens increase";
	}
	EXPECT_LE(own * 4, int(order.size())) << own << " of " << order.size() << " grants went back to the releaser";
	std::cout << order.size() << " grants in 2 s, " << own << " back to the releaser, per client " << *least
	          << " to " << *most << "\n";
}

TEST_F(RedisLocker, a_dead_waiter_holds_a_free_lock_back_at_most_its_beat)
{
	// a waiter's place outlives it by at most its beat (1.5 s after its
	// last poll): planted at the head with 1 s left, the lock is refused to
	// a try until then, and granted after
	const std::string lock = "pglease:lock:" + resource();
	auto time = server.raw({"TIME"});
	ASSERT_TRUE(time && time->is_array() && time->elements.size() == 2);
	long long now = std::atoll(time->elements[0].text.c_str()) * 1000 + std::atoll(time->elements[1].text.c_str()) / 1000;
	ASSERT_TRUE(server.raw({"ZADD", lock + std::string{"\0queue", 6}, "1", "ghost"}));
	ASSERT_TRUE(server.raw({"ZADD", lock + std::string{"\0beats", 6}, std::to_string(now + 1000), "ghost"}));
	EXPECT_FALSE(locker->try_acquire(resource(), opts(10s))) << "the head's turn";
	auto t0 = Clock::now();
	std::optional<pglease::Lease> taken;
	eventually(
	    [&] {
		    auto l = locker->try_acquire(resource(), opts(10s));
		    if (l)
			    taken.emplace(std::move(*l));
		    return taken.has_value();
	    },
	    3s, 20ms);
	ASSERT_TRUE(taken) << "the dead waiter still holds the lock back";
	EXPECT_LE(ms_since(t0), 1300);
	EXPECT_FALSE(server.exists(lock + std::string{"\0queue", 6})) << "the dead waiter's place is gone";
}

TEST_F(RedisLocker, a_waiter_that_gives_up_leaves_the_queue_at_once)
{
	auto held = locker->try_acquire(resource(), opts(10s));
	ASSERT_TRUE(held) << held.error();
	auto other = connect_or_fail(redis_url(server));
	auto gave_up = in_other_thread([&] { return other->acquire(resource(), opts(10s, 300ms)); });
	ASSERT_FALSE(gave_up);
	EXPECT_EQ(gave_up.error().code, Errc::timeout) << gave_up.error();
	ASSERT_TRUE(held->release());
	EXPECT_TRUE(in_other_thread([&] { return other->try_acquire(resource(), opts(10s)); }))
	    << "a waiter gone still holds its place";
}

// ---- redis://: shared leases and semaphores (docs/shared-leases.md, "Redis") ----

namespace {

pglease::LeaseOptions
reader(milliseconds ttl, milliseconds wait = 0ms)
{
	auto o = opts(ttl, wait);
	o.mode = pglease::Mode::shared;
	return o;
}

// writers_key -- where the waiting writers of resource() mark themselves:
// the lock's name, a NUL byte, "writers" (the banner)
std::string
writers_key()
{
	return "pglease:lock:" + resource() + std::string{"\0writers", 8};
}

// marks -- the holders marked as waiting writers, or why not
std::vector<std::string>
marks(RedisServer &server)
{
	auto all = server.raw({"ZRANGE", writers_key(), "0", "-1"});
	EXPECT_TRUE(all && all->is_array()) << "ZRANGE of the writers' key";
	std::vector<std::string> out;
	if (all && all->is_array())
		for (const auto &e : all->elements)
			out.push_back(e.text);
	return out;
}

} // namespace

// the layout the banner documents: readers are members of a sorted set at
// the lock key, which goes with the last of them
TEST_F(RedisLocker, shared_grants_are_members_of_a_sorted_set_at_the_lock_key_that_goes_with_the_last)
{
	const std::string lock = "pglease:lock:" + resource();
	auto ra = reader(10s);
	ra.holder = "ra";
	ra.reclaim = true; // the label as given (LeaseOptions::reclaim)
	auto rb = reader(10s);
	rb.holder = "rb";
	rb.reclaim = true; // the label as given (LeaseOptions::reclaim)
	auto a = in_other_thread([&] { return locker->acquire(resource(), ra); });
	auto b = in_other_thread([&] { return locker->acquire(resource(), rb); });
	ASSERT_TRUE(a) << a.error();
	ASSERT_TRUE(b) << b.error();
	auto type = server.raw({"TYPE", lock});
	ASSERT_TRUE(type) << type.error();
	EXPECT_EQ(type->text, "zset");
	for (auto [token, holder] : {std::pair{a->token(), "ra"}, std::pair{b->token(), "rb"}}) {
		auto score = server.raw({"ZSCORE", lock, std::to_string(token) + ":" + holder});
		ASSERT_TRUE(score) << score.error();
		EXPECT_TRUE(score->is_string()) << "no member for token " << token;
	}
	auto kind = server.raw({"ZSCORE", lock, "=shared"});
	ASSERT_TRUE(kind) << kind.error();
	EXPECT_EQ(kind->text, "inf");
	ASSERT_TRUE(a->release());
	EXPECT_TRUE(server.exists(lock)) << "the set went while a reader held";
	ASSERT_TRUE(b->release());
	EXPECT_FALSE(server.exists(lock)) << "the set outlived its last grant";
	auto w = in_other_thread([&] { return locker->try_acquire(resource(), opts(10s)); });
	ASSERT_TRUE(w) << w.error();
	EXPECT_GT(w->token(), std::max(a->token(), b->token()));
}

// a writer whose wait is over takes its mark back: a reader right after it
// is granted, not held back for the mark's 3 s
TEST_F(RedisLocker, a_writer_that_stops_waiting_takes_its_mark_back)
{
	auto first = in_other_thread([&] { return locker->acquire(resource(), reader(10s)); });
	ASSERT_TRUE(first) << first.error();
	auto writer = in_other_thread([&] { return locker->acquire(resource(), opts(10s, 400ms)); });
	ASSERT_FALSE(writer) << "a writer was granted beside a reader";
	EXPECT_EQ(writer.error().code, Errc::timeout) << writer.error();
	EXPECT_TRUE(marks(server).empty()) << "the writer's mark outlived its wait";
	EXPECT_FALSE(server.exists(writers_key())) << "the writers' key outlived its last mark";
	auto second = in_other_thread([&] { return locker->try_acquire(resource(), reader(10s)); });
	EXPECT_TRUE(second) << "a reader was held back by a writer no longer waiting: " << second.error();
}

// a writer that died waiting holds readers back until its mark expires
// (3 s after its last poll), then no longer
TEST_F(RedisLocker, a_dead_writers_mark_expires_and_readers_are_granted_again)
{
	auto first = in_other_thread([&] { return locker->acquire(resource(), reader(10s)); });
	ASSERT_TRUE(first) << first.error();
	auto time = server.raw({"TIME"});
	ASSERT_TRUE(time && time->is_array() && time->elements.size() == 2);
	auto now_ms = std::stoll(time->elements[0].text) * 1000 + std::stoll(time->elements[1].text) / 1000;
	auto added = server.raw({"ZADD", writers_key(), std::to_string(now_ms + 1500), "ghost"});
	ASSERT_TRUE(added && added->is_integer() && added->integer == 1);
	auto held_back = in_other_thread([&] { return locker->try_acquire(resource(), reader(10s)); });
	ASSERT_FALSE(held_back) << "a reader was granted while a writer's mark lived";
	EXPECT_EQ(held_back.error().code, Errc::timeout) << held_back.error();
	auto t0 = std::chrono::steady_clock::now();
	auto later = in_other_thread([&] { return locker->acquire(resource(), reader(10s, 5s)); });
	ASSERT_TRUE(later) << "the reader was not granted after the mark expired: " << later.error();
	EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s) << "granted long after the mark expired";
	EXPECT_GT(later->token(), first->token());
}

// behind another writer's lock (a string, with no room for marks) a waiting
// writer still holds later readers back: when that lock ends, the writer
// goes first and the readers after it
TEST_F(RedisLocker, a_writer_waiting_behind_a_writers_lock_goes_before_later_readers)
{
	auto held = opts(10s);
	held.auto_renew = false;
	auto first = locker->acquire(resource(), held);
	ASSERT_TRUE(first) << first.error();
	auto writer = std::async(std::launch::async, [&] { return locker->acquire(resource(), opts(10s, 10s)); });
	ASSERT_TRUE(eventually([&] { return marks(server).size() == 1; }, 3s)) << "the waiting writer left no mark";
	auto pttl = server.raw({"PTTL", writers_key()});
	ASSERT_TRUE(pttl && pttl->is_integer());
	EXPECT_GT(pttl->integer, 0) << "the writers' key never expires";
	EXPECT_LE(pttl->integer, 3000) << "a mark lives 3 s after the writer's last poll";
	// the first lock ends without a release (as an expiry does): whoever
	// asks first wins the race but a reader may not
	auto deleted = server.raw({"DEL", "pglease:lock:" + resource()});
	ASSERT_TRUE(deleted && deleted->is_integer() && deleted->integer == 1);
	auto overtaking = in_other_thread([&] { return locker->try_acquire(resource(), reader(10s)); });
	ASSERT_FALSE(overtaking) << "a reader overtook the writer waiting before it";
	EXPECT_EQ(overtaking.error().code, Errc::timeout) << overtaking.error();
	auto w = writer.get();
	ASSERT_TRUE(w) << w.error();
	EXPECT_GT(w->token(), first->token());
	EXPECT_TRUE(marks(server).empty()) << "the granted writer kept its mark";
	auto later = std::async(std::launch::async, [&] { return locker->acquire(resource(), reader(10s, 5s)); });
	EXPECT_EQ(later.wait_for(300ms), std::future_status::timeout) << "a reader was granted beside the writer";
	ASSERT_TRUE(w->release());
	auto r = later.get();
	ASSERT_TRUE(r) << "the reader was not granted after the writer: " << r.error();
	EXPECT_GT(r->token(), w->token());
}

// two writers waiting behind a third's lock: the readers wait for both,
// not only for the writer that marked last
TEST_F(RedisLocker, readers_wait_for_every_waiting_writer)
{
	auto first = locker->acquire(resource(), opts(10s));
	ASSERT_TRUE(first) << first.error();
	auto w1 = std::async(std::launch::async, [&] { return locker->acquire(resource(), opts(10s, 10s)); });
	auto w2 = std::async(std::launch::async, [&] { return locker->acquire(resource(), opts(10s, 10s)); });
	ASSERT_TRUE(eventually([&] { return marks(server).size() == 2; }, 3s)) << "two waiting writers, two marks";
	auto readers = std::async(std::launch::async, [&] { return locker->acquire(resource(), reader(10s, 10s)); });
	ASSERT_TRUE(first->release());
	// one writer is granted, then the other, and only then the reader
	std::optional<pglease::Lease> second, third;
	std::future<pglease::Result<pglease::Lease>> *done = nullptr;
	ASSERT_TRUE(eventually(
	    [&] {
		    for (auto *w : {&w1, &w2})
			    if (w->wait_for(0ms) == std::future_status::ready)
				    done = w;
		    return done != nullptr;
	    },
	    3s))
	    << "neither writer was granted after the release";
	auto got_first = done->get();
	ASSERT_TRUE(got_first) << got_first.error();
	second.emplace(std::move(*got_first));
	EXPECT_EQ(marks(server).size(), 1u) << "the granted writer kept its mark, or the other lost its own";
	EXPECT_EQ(readers.wait_for(300ms), std::future_status::timeout) << "a reader was granted beside a writer";
	ASSERT_TRUE(second->release());
	auto &other = w1.valid() ? w1 : w2;
	auto got = other.get();
	ASSERT_TRUE(got) << "the second writer: " << got.error();
	third.emplace(std::move(*got));
	EXPECT_EQ(readers.wait_for(300ms), std::future_status::timeout)
	    << "a reader overtook the second waiting writer";
	ASSERT_TRUE(third->release());
	auto r = readers.get();
	ASSERT_TRUE(r) << r.error();
	EXPECT_GT(r->token(), third->token());
	EXPECT_GT(third->token(), second->token());
}

TEST_F(RedisLocker, token_level_calls_act_on_one_shared_grant_and_its_holder_only)
{
	auto o = reader(3s);
	o.auto_renew = false;
	o.holder = "alice";
	o.reclaim = true; // the label as given (LeaseOptions::reclaim)
	auto alice = locker->acquire(resource(), o);
	ASSERT_TRUE(alice) << alice.error();
	o.holder = "bob";
	o.reclaim = true; // the label as given (LeaseOptions::reclaim)
	auto bob = in_other_thread([&] { return locker->acquire(resource(), o); });
	ASSERT_TRUE(bob) << bob.error();
	const auto token = alice->detach();
	auto as_bob = locker->renew(resource(), token, "bob", 60s);
	ASSERT_TRUE(as_bob) << as_bob.error();
	EXPECT_FALSE(*as_bob) << "renewed alice's grant as bob";
	auto renewed = locker->renew(resource(), token, "alice", 60s);
	ASSERT_TRUE(renewed) << renewed.error();
	EXPECT_TRUE(*renewed);
	auto by_token = locker->renew(resource(), token, 60s);
	ASSERT_TRUE(by_token) << by_token.error();
	EXPECT_TRUE(*by_token);
	auto released = locker->release(resource(), token, "alice");
	ASSERT_TRUE(released) << released.error();
	EXPECT_TRUE(*released);
	auto again = locker->release(resource(), token);
	ASSERT_TRUE(again) << again.error();
	EXPECT_FALSE(*again) << "released twice";
	EXPECT_TRUE(bob->valid()) << "alice's release ended bob's grant";
	auto w = in_other_thread([&] { return locker->try_acquire(resource(), opts(10s)); });
	ASSERT_FALSE(w) << "a writer was granted beside bob";
	ASSERT_TRUE(bob->release());
	w = in_other_thread([&] { return locker->try_acquire(resource(), opts(10s)); });
	EXPECT_TRUE(w) << w.error();
}

// the same holder asking again keeps its grant in its own mode and limit;
// in another it is LS003, and nothing changes
TEST_F(RedisLocker, the_same_holder_in_another_mode_or_limit_is_ls003)
{
	auto o = reader(10s);
	o.holder = "carol";
	o.reclaim = true; // the label as given (LeaseOptions::reclaim)
	auto shared = locker->acquire(resource(), o);
	ASSERT_TRUE(shared) << shared.error();
	auto again = in_other_thread([&] { return locker->acquire(resource(), o); });
	ASSERT_TRUE(again) << again.error();
	EXPECT_EQ(again->token(), shared->token()) << "the same holder got a new grant";
	(void)again->detach();
	auto as_lock = opts(10s);
	as_lock.holder = "carol";
	as_lock.reclaim = true; // the label as given (LeaseOptions::reclaim)
	auto as_permit = opts(10s);
	as_permit.holder = "carol";
	as_permit.reclaim = true; // the label as given (LeaseOptions::reclaim)
	as_permit.limit = 2;
	for (const auto &other : {as_lock, as_permit}) {
		auto refused = in_other_thread([&] { return locker->acquire(resource(), other); });
		ASSERT_FALSE(refused) << "limit " << other.limit << " granted to a reader";
		EXPECT_EQ(refused.error().code, Errc::invalid_argument) << refused.error();
		EXPECT_EQ(refused.error().sqlstate, "LS003") << refused.error();
		EXPECT_NE(refused.error().message.find("own grant"), std::string::npos) << refused.error();
	}
	EXPECT_TRUE(shared->valid());
	ASSERT_TRUE(shared->release());
	// a lock's holder asking for a shared grant
	as_lock.holder = "dave";
	as_lock.reclaim = true; // the label as given (LeaseOptions::reclaim)
	auto lock = locker->acquire(resource(), as_lock);
	ASSERT_TRUE(lock) << lock.error();
	o.holder = "dave";
	o.reclaim = true; // the label as given (LeaseOptions::reclaim)
	auto refused = in_other_thread([&] { return locker->acquire(resource(), o); });
	ASSERT_FALSE(refused);
	EXPECT_EQ(refused.error().sqlstate, "LS003") << refused.error();
}


// ---- redlock:// -----------------------------------------------------------------

TEST_F(RedlockLocker, connect_gives_the_redlock_locker_without_tokens)
{
	EXPECT_EQ(locker->provider(), "Redlock");
	auto c = locker->capabilities();
	EXPECT_TRUE(c.distributed);
	EXPECT_TRUE(c.survives_failover);
	EXPECT_FALSE(c.fencing_token);
	EXPECT_FALSE(c.fenced_write);
	EXPECT_FALSE(c.fifo_wait);
	EXPECT_FALSE(c.ephemeral);
	EXPECT_FALSE(c.durable);
	auto by_token = locker->renew(resource(), 1, 1s);
	ASSERT_FALSE(by_token);
	EXPECT_EQ(by_token.error().code, Errc::invalid_argument) << "Redlock grants have no token to name them";
}

TEST_F(RedlockLocker, contended_then_released_then_granted_with_token_zero)
{
	auto first = locker->acquire(resource(), opts(10s));
	ASSERT_TRUE(first) << first.error();
	EXPECT_EQ(first->token(), 0);
	EXPECT_LE(first->remaining(), 10s - 10s / 100 - 2ms)
	    << "the local deadline leaves the drift allowance out";
	auto second = in_other_thread([&] { return locker->try_acquire(resource(), opts(10s)); });
	ASSERT_FALSE(second);
	EXPECT_EQ(second.error().code, Errc::timeout) << second.error();
	ASSERT_TRUE(first->release());
	auto third = in_other_thread([&] { return locker->try_acquire(resource(), opts(10s)); });
	EXPECT_TRUE(third) << "not granted after the release: " << third.error();
}

TEST_F(RedlockLocker, waiting_acquire_is_granted_after_release_and_times_out_within_wait)
{
	auto held = locker->acquire(resource(), opts(10s));
	ASSERT_TRUE(held) << held.error();
	auto t0 = Clock::now();
	auto waited = in_other_thread([&] { return locker->acquire(resource(), opts(10s, 400ms)); });
	auto took = ms_since(t0);
	ASSERT_FALSE(waited);
	EXPECT_EQ(waited.error().code, Errc::timeout) << waited.error();
	EXPECT_GE(took, 400);
	EXPECT_LT(took, 400 + 250);

	auto waiter = std::async(std::launch::async, [&] { return locker->acquire(resource(), opts(10s, 3s)); });
	std::this_thread::sleep_for(300ms);
	ASSERT_TRUE(held->release());
	auto granted = waiter.get();
	EXPECT_TRUE(granted) << granted.error();
}

TEST_F(RedlockLocker, auto_renew_keeps_it_and_deleting_it_on_a_majority_loses_it_once)
{
	auto lease = locker->acquire(resource(), opts(600ms));
	ASSERT_TRUE(lease) << lease.error();
	std::this_thread::sleep_for(1s);
	ASSERT_TRUE(lease->valid()) << "auto-renewal must extend it on a majority";
	std::atomic<int> lost{0};
	lease->on_lost([&](const pglease::Error &) { lost++; });
	ASSERT_TRUE(nodes[0]->del("pglease:lock:" + resource()));
	ASSERT_TRUE(nodes[1]->del("pglease:lock:" + resource()));
	EXPECT_TRUE(eventually([&] { return lost.load() > 0; }, 1s)) << "no on_lost within 1 s";
	std::this_thread::sleep_for(400ms);
	EXPECT_EQ(lost.load(), 1);
	EXPECT_FALSE(lease->valid());
}

TEST_F(RedlockLocker, one_node_of_three_down_is_still_granted)
{
	ASSERT_TRUE(nodes[2]->kill());
	auto lease = locker->acquire(resource(), opts(2s));
	ASSERT_TRUE(lease) << "a majority (2 of 3) must grant: " << lease.error();
	EXPECT_EQ(lease->token(), 0);
	auto other = in_other_thread([&] { return locker->try_acquire(resource(), opts(2s)); });
	EXPECT_FALSE(other) << "granted twice with one node down";
	std::this_thread::sleep_for(1s);
	EXPECT_TRUE(lease->valid()) << "renewal on the remaining majority must keep it";
}

TEST_F(RedlockLocker, two_nodes_of_three_down_is_not_granted_promptly)
{
	ASSERT_TRUE(nodes[1]->kill());
	ASSERT_TRUE(nodes[2]->kill());
	for (auto wait : {0ms, 2000ms}) {
		auto t0 = Clock::now();
		auto lease = locker->acquire(resource(), opts(2s, wait));
		auto took = ms_since(t0);
		ASSERT_FALSE(lease) << "granted by a minority";
		EXPECT_EQ(lease.error().code, Errc::unavailable) << lease.error();
		EXPECT_LT(took, 3 * 50 * 2) << "not within the per-node timeouts (wait " << wait.count() << " ms)";
	}
	// and nothing was left behind on the one live node
	auto t = locker->try_acquire(resource() + "/x", opts(2s));
	EXPECT_FALSE(t);
	ASSERT_TRUE(nodes[1]->start());
	auto back = eventually([&] { return static_cast<bool>(locker->try_acquire(resource(), opts(2s))); }, 2s);
	EXPECT_TRUE(back)
	    << "not granted once a majority is back (the minority's partial grant must have been undone)";
}

TEST_F(RedlockLocker, wait_of_milliseconds_max_waits_for_the_release)
{
	auto held = locker->acquire(resource(), opts(10s));
	ASSERT_TRUE(held) << held.error();
	auto t0 = Clock::now();
	auto waiter = std::async(std::launch::async,
	                         [&] { return locker->acquire(resource(), opts(10s, milliseconds::max())); });
	std::this_thread::sleep_for(500ms);
	ASSERT_TRUE(held->release());
	auto granted = waiter.get();
	auto took = ms_since(t0);
	ASSERT_TRUE(granted) << "after " << took << " ms: " << granted.error();
	EXPECT_GE(took, 400) << "granted before the release";
}

TEST_F(RedlockLocker, ttl_of_1000_years_stays_valid_and_one_above_2_pow_53_ms_is_refused_naming_the_maximum)
{
	auto o = opts(thousand_years);
	o.auto_renew = false;
	auto lease = locker->acquire(resource(), o);
	ASSERT_TRUE(lease) << lease.error();
	EXPECT_TRUE(lease->valid()) << "a 1000-year lease must not be expired at once";
	EXPECT_GT(lease->remaining(), std::chrono::hours{24 * 365 * 100});
	auto renewed = lease->renew();
	EXPECT_TRUE(renewed) << renewed.error();
	EXPECT_TRUE(lease->valid()) << "still valid after a renewal";
	ASSERT_TRUE(lease->release());
	for (milliseconds ttl : {redis_max_ttl + 1ms, milliseconds::max()}) {
		auto refused = locker->try_acquire(resource(), opts(ttl));
		ASSERT_FALSE(refused) << ttl.count();
		EXPECT_EQ(refused.error().code, Errc::invalid_argument) << refused.error();
		EXPECT_NE(refused.error().message.find("9007199254740991ms"), std::string::npos) << refused.error();
	}
}

TEST_F(WideRedlockLocker, frozen_nodes_bound_each_call_by_one_round_not_one_timeout_per_node)
{
	// per-node timeout min(50 ms, ttl/10) = 50 ms; a pooled connection that
	// failed also bought a second timeout on a fresh one
	const long long per_node = 50, slack = 200;
	auto o = opts(10s);
	o.auto_renew = false;
	o.allow_nested_try = true; // this thread holds `lease` while it warms the pools
	auto lease = locker->acquire(resource(), o);
	ASSERT_TRUE(lease) << lease.error();
	auto warm = [&] {
		ASSERT_TRUE(
		    eventually([&] { return static_cast<bool>(locker->try_acquire(resource() + "/warm", o)); }, 3s))
		    << "the nodes did not come back";
	};
	struct Call {
		const char *name;
		long long rounds;
		std::function<bool()> run; // true: failed as it must with every node frozen
	};
	const Call calls[] = {
	    {"Lease::renew", 1, [&] { return !lease->renew(); }},
	    {"try_acquire", 2, [&] { return !locker->try_acquire(resource() + "/other", o); }},
	    {"Lease::release", 1, [&] { return !lease->release(); }},
	};
	for (const Call &call : calls) {
		warm();
		Frozen frozen(pids);
		bool failed = false;
		auto took = timed([&] { failed = call.run(); });
		frozen.thaw();
		EXPECT_TRUE(failed) << call.name << " succeeded with every node frozen";
		EXPECT_LE(took, call.rounds * per_node + slack)
		    << call.name << " took " << took << " ms with " << pids.size() << " nodes frozen";
		std::cout << call.name << " with " << pids.size() << " of " << pids.size()
		          << " nodes frozen: " << took << " ms (" << call.rounds << " round(s) of " << per_node
		          << " ms)\n";
	}
}
