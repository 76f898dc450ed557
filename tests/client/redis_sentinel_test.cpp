// redis_sentinel_test.cpp -- the redis+sentinel:// provider against a real
// Sentinel deployment (scripts/sentinel.sh: a master with requirepass, two
// asynchronous replicas and three Sentinels, each on a free port): leases
// and an election (campaign, observe) through Sentinel, a SENTINEL
// FAILOVER and a SIGKILL of the master while a lease is held and another
// client waits (clients follow the new master, calls meanwhile are
// Errc::unavailable or a plain "held", never internal, never a hang), every
// Sentinel down, an unknown master name, and malformed URLs.  Never mocked,
// never skipped; every message a test sees is checked for the password.
#include <atomic>
#include <chrono>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "pglease/pglease.hpp"
#include "redis/endpoint.hpp"
#include "support.hpp"

using pglease::Errc;
using namespace test_support;

namespace {

// The data nodes' password (requirepass: one redis.conf word).
const std::string node_pw = "S3ntinelNodePw-4Rq";

// no_secret -- TEXT shows no password, nor a telling piece of it
::testing::AssertionResult
no_secret(const std::string &text)
{
	for (const std::string &piece : {node_pw, std::string("S3ntinel"), std::string("NodePw")})
		if (text.find(piece) != std::string::npos)
			return ::testing::AssertionFailure() << "shows \"" << piece << "\": " << text;
	return ::testing::AssertionSuccess();
}

// Deployment -- scripts/sentinel.sh's six servers in a temporary directory,
// killed and removed when the object goes
class Deployment {
public:
	Deployment()
	{
		char tmpl[] = "/tmp/pglease-sentinel-test.XXXXXX";
		if (const char *made = ::mkdtemp(tmpl))
			dir_ = std::string(made) + "/deployment";
		ran_ = run("start", "requirepass=" + node_pw);
		std::istringstream lines(ran_.output);
		for (std::string key, value; lines >> key;) {
			std::getline(lines >> std::ws, value);
			if (key == "sentinels")
				sentinels_ = value;
			else if (key == "master")
				first_master_ = value;
		}
	}
	~Deployment()
	{
		(void)run("kill");
		std::error_code ignored;
		if (!dir_.empty())
			std::filesystem::remove_all(std::filesystem::path(dir_).parent_path(), ignored);
	}
	Deployment(const Deployment &) = delete;
	Deployment &operator=(const Deployment &) = delete;

	::testing::AssertionResult started() const
	{
		if (ran_.ok() && !sentinels_.empty())
			return ::testing::AssertionSuccess();
		return ::testing::AssertionFailure() << "scripts/sentinel.sh start failed (install redis-server: "
		                                        "scripts/install-deps.sh):\n"
		                                     << ran_.output;
	}
	// url -- redis+sentinel://:PW@SENTINELS/NAME (the data nodes' password)
	std::string url(const std::string &name = "pglease") const
	{
		return "redis+sentinel://:" + node_pw + "@" + sentinels_ + "/" + name;
	}
	const std::string &first_master() const { return first_master_; }
	Ran run(const std::string &verb, const std::string &args = "") const
	{
		return run_command("bash " + source_path("scripts/sentinel.sh") + " " + verb + " '" + dir_ + "' " +
		                   args);
	}
	// node_has -- EXISTS key on the node at address ("host:port"), with the password
	bool node_has(const std::string &address, const std::string &key) const
	{
		auto port = address.substr(address.rfind(':') + 1);
		auto out = capture("REDISCLI_AUTH='" + node_pw + "' timeout 5 redis-cli --no-auth-warning -p " +
		                   port + " EXISTS '" + key + "'");
		return out.rfind("1", 0) == 0;
	}

private:
	std::string dir_;
	Ran ran_;
	std::string sentinels_;
	std::string first_master_;
};

// trimmed -- TEXT without its trailing newline(s)
std::string
trimmed(std::string text)
{
	while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
		text.pop_back();
	return text;
}

// Seen -- what calls made during a failover answered, from several threads
struct Seen {
	std::mutex mu;
	std::vector<std::string> messages;
	int unavailable = 0;
	int held = 0; // Errc::timeout of a try: the resource is held
	int granted = 0;
	long long slowest_ms = 0;

	void add(const pglease::Error &e)
	{
		std::lock_guard<std::mutex> lk(mu);
		messages.push_back(e.message);
		if (e.code == Errc::unavailable)
			unavailable++;
		else if (e.code == Errc::timeout)
			held++;
		else
			ADD_FAILURE() << "a call during the failover answered " << e.code << ": " << e.message;
	}
	void took(long long ms)
	{
		std::lock_guard<std::mutex> lk(mu);
		slowest_ms = std::max(slowest_ms, ms);
	}
};

// probe -- try_acquire (and release) of RESOURCE until STOP, every answer
// recorded: during a failover each call must end in time with "held",
// "unavailable" or a grant
void
probe(pglease::Locker &locker, const std::string &resource, const std::atomic<bool> &stop, Seen &seen)
{
	while (!stop) {
		auto start = Clock::now();
		auto lease = locker.try_acquire(resource, opts(2s));
		seen.took(ms_since(start));
		if (lease) {
			std::lock_guard<std::mutex> lk(seen.mu);
			seen.granted++;
		} else {
			seen.add(lease.error());
		}
		std::this_thread::sleep_for(50ms);
	}
}

// The client options of the failover tests: short connects and backoff, a
// statement grace that bounds each call
pglease::ClientOptions
failover_options()
{
	auto o = quick_backoff();
	o.statement_grace = 1s;
	return o;
}

class RedisSentinel : public ::testing::Test {
protected:
	static void SetUpTestSuite() { deployment = std::make_unique<Deployment>(); }
	static void TearDownTestSuite() { deployment.reset(); }
	void SetUp() override { ASSERT_TRUE(deployment->started()); }
	static std::unique_ptr<Deployment> deployment;
};
std::unique_ptr<Deployment> RedisSentinel::deployment;

// ---- URLs ----------------------------------------------------------------------

TEST(RedisSentinelUrl, a_sentinel_url_names_the_sentinels_the_master_the_db_and_the_nodes_credentials)
{
	auto t = pglease::detail::redis::parse_url("redis+sentinel://app:" + node_pw +
	                                           "@10.0.0.1:26379,10.0.0.2:26379,[::1]:26380/my%2Dmaster/3");
	ASSERT_TRUE(t) << t.error();
	EXPECT_TRUE(t->sentinel);
	EXPECT_FALSE(t->redlock);
	EXPECT_EQ(t->nodes.size(), 3u);
	EXPECT_EQ(t->nodes.at(2).host, "::1");
	EXPECT_EQ(t->master_name, "my-master");
	EXPECT_EQ(t->db, 3);
	EXPECT_EQ(t->credentials.user, "app");
	EXPECT_EQ(t->credentials.password, node_pw);
	auto one = pglease::detail::redis::parse_url("redis+sentinel://127.0.0.1:26379/m");
	ASSERT_TRUE(one) << one.error();
	EXPECT_EQ(one->db, 0);
	EXPECT_FALSE(one->credentials.given());
}

TEST(RedisSentinelUrl, malformed_urls_are_invalid_argument_before_any_io)
{
	// the Sentinels of these URLs listen nowhere: only a refusal before I/O is fast
	const auto dead = free_ports(2);
	const std::string hosts =
	    "127.0.0.1:" + std::to_string(dead[0]) + ",127.0.0.1:" + std::to_string(dead[1]);
	struct Case {
		std::string url;
		const char *says;
	};
	const Case cases[] = {
	    {"redis+sentinel://:" + node_pw + "@" + hosts, "master's name"},
	    {"redis+sentinel://:" + node_pw + "@" + hosts + "/", "master's name"},
	    {"redis+sentinel://:" + node_pw + "@" + hosts + "//0", "master's name"},
	    {"redis+sentinel://:" + node_pw + "@" + hosts + "/m%2", "two hex digits"},
	    {"redis+sentinel://:" + node_pw + "@" + hosts + "/a%20b", "space"},
	    {"redis+sentinel://:" + node_pw + "@" + hosts + "/m/x", "not a number"},
	    {"redis+sentinel://:" + node_pw + "@" + hosts + "/m?sentinel_password=x", "query"},
	    {"redis+sentinel://:" + node_pw + "@127.0.0.1:1,127.0.0.1:1/m", "named twice"},
	    {"redis+sentinel://:" + node_pw + "@127.0.0.1/m", "port"},
	    {"redis+sentinel://" + node_pw + "@" + hosts + "/m", "[user]:password@"},
	    {"rediss+sentinel://:" + node_pw + "@" + hosts + "/m", "not supported"},
	};
	for (const Case &c : cases) {
		auto start = Clock::now();
		auto locker = pglease::connect(c.url, quick_backoff());
		const auto took = ms_since(start);
		if (locker) {
			ADD_FAILURE() << "accepted: " << c.says;
			continue;
		}
		EXPECT_EQ(locker.error().code, Errc::invalid_argument) << locker.error();
		EXPECT_NE(locker.error().message.find(c.says), std::string::npos)
		    << locker.error().message << " should say " << c.says;
		EXPECT_TRUE(no_secret(locker.error().message));
		EXPECT_LT(took, 200) << "refused after " << took << " ms: after I/O?";
		std::cout << "  " << locker.error().message << "\n";
	}
}

// ---- through Sentinel ------------------------------------------------------------

TEST_F(RedisSentinel, acquire_contend_release_and_a_higher_token_through_sentinel)
{
	auto a = pglease::connect(deployment->url());
	auto b = pglease::connect(deployment->url());
	ASSERT_TRUE(a) << a.error();
	ASSERT_TRUE(b) << b.error();
	const std::string resource = unique_resource("sentinel/");
	auto first = (*a)->acquire(resource, opts(5s));
	ASSERT_TRUE(first) << first.error();
	EXPECT_TRUE(deployment->node_has(deployment->first_master(), "pglease:lock:" + resource))
	    << "the lease is not on the master " << deployment->first_master();
	auto contender = in_other_thread([&] { return (*b)->try_acquire(resource, opts(5s)); });
	ASSERT_FALSE(contender);
	EXPECT_EQ(contender.error().code, Errc::timeout) << contender.error();
	const auto token = first->token();
	ASSERT_TRUE(first->release());
	auto second = in_other_thread([&] { return (*b)->acquire(resource, opts(5s, 2s)); });
	ASSERT_TRUE(second) << second.error();
	EXPECT_GT(second->token(), token);
	auto caps = (*a)->capabilities();
	EXPECT_TRUE(caps.distributed);
	EXPECT_TRUE(caps.fencing_token);
	EXPECT_FALSE(caps.durable) << "an asynchronous replica may lack the last grant";
	EXPECT_FALSE(caps.survives_failover) << "an asynchronous replica may lack the last grant";
	EXPECT_EQ((*a)->provider(), "Redis");
}

// elections take the same path (redis/election.cpp): the grant and its value
// on the master, the observer subscribed there
TEST_F(RedisSentinel, campaign_proclaim_and_observe_through_sentinel)
{
	auto a = pglease::connect(deployment->url());
	auto b = pglease::connect(deployment->url());
	ASSERT_TRUE(a) << a.error();
	ASSERT_TRUE(b) << b.error();
	EXPECT_TRUE((*a)->capabilities().election);
	const std::string e = unique_resource("sentinel-election/");
	auto observed = std::async(std::launch::async, [&] {
		auto v = (*b)->observe(e, {}, 5s);
		return std::make_pair(std::move(v), Clock::now());
	});
	std::this_thread::sleep_for(100ms);
	auto lead = (*a)->campaign(e, "node-a", opts(5s));
	const auto elected_at = Clock::now();
	ASSERT_TRUE(lead) << lead.error();
	EXPECT_TRUE(deployment->node_has(deployment->first_master(), "pglease:value:" + e))
	    << "the value is not on the master " << deployment->first_master();
	auto [view, at] = observed.get();
	ASSERT_TRUE(view) << view.error();
	EXPECT_TRUE(view->has_leader);
	EXPECT_EQ(view->term, lead->term());
	EXPECT_EQ(view->value, "node-a");
	EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(at - elected_at).count(), 400)
	    << "told by the re-read, not by the channel";
	ASSERT_TRUE(lead->proclaim("node-a:2"));
	auto now = (*b)->leader(e);
	ASSERT_TRUE(now) << now.error();
	EXPECT_EQ(now->value, "node-a:2");
	ASSERT_TRUE(lead->resign());
	auto gone = (*b)->observe(e, *now, 5s);
	ASSERT_TRUE(gone) << gone.error();
	EXPECT_FALSE(gone->has_leader);
}

TEST_F(RedisSentinel, an_unknown_master_name_is_invalid_argument_naming_it)
{
	auto locker = pglease::connect(deployment->url("no-such-master"), quick_backoff());
	ASSERT_TRUE(locker) << locker.error();
	auto lease = (*locker)->try_acquire(unique_resource("sentinel/"), opts(5s));
	ASSERT_FALSE(lease);
	EXPECT_EQ(lease.error().code, Errc::invalid_argument) << lease.error();
	EXPECT_NE(lease.error().message.find("no-such-master"), std::string::npos) << lease.error();
	EXPECT_TRUE(no_secret(lease.error().message));
	std::cout << "  " << lease.error().message << "\n";
}

TEST_F(RedisSentinel, a_wrong_node_password_is_permission_and_shows_no_password)
{
	auto url = deployment->url();
	url.replace(url.find(node_pw), node_pw.size(), "Wr0ngPw-5Kk");
	auto locker = pglease::connect(url, quick_backoff());
	ASSERT_TRUE(locker) << locker.error();
	auto lease = (*locker)->try_acquire(unique_resource("sentinel/"), opts(5s));
	ASSERT_FALSE(lease);
	EXPECT_EQ(lease.error().code, Errc::permission) << lease.error();
	EXPECT_TRUE(no_secret(lease.error().message));
	EXPECT_EQ(lease.error().message.find("Wr0ngPw"), std::string::npos) << lease.error();
}

TEST(RedisSentinelDown, every_sentinel_down_is_unavailable_fast)
{
	const auto dead = free_ports(3);
	std::string url = "redis+sentinel://:" + node_pw + "@";
	for (std::size_t i = 0; i < dead.size(); i++)
		url += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(dead[i]);
	auto locker = pglease::connect(url + "/pglease", quick_backoff());
	ASSERT_TRUE(locker) << locker.error();
	for (int i = 0; i < 2; i++) { // the first call asks the Sentinels, the second is in backoff
		auto start = Clock::now();
		auto lease = (*locker)->try_acquire(unique_resource("sentinel/"), opts(5s));
		const auto took = ms_since(start);
		ASSERT_FALSE(lease);
		EXPECT_EQ(lease.error().code, Errc::unavailable) << lease.error();
		EXPECT_LT(took, 1000) << "unavailable only after " << took << " ms";
		EXPECT_TRUE(no_secret(lease.error().message));
		std::cout << "  " << lease.error().message << " (" << took << " ms)\n";
	}
}

// ---- failovers -------------------------------------------------------------------

// FailoverRun -- a holder (auto-renewed) and a waiter on one resource, and a
// prober on another, before, during and after a failover that FAULT causes
struct FailoverRun {
	Deployment deployment;
	std::unique_ptr<pglease::Locker> holder_locker, waiter_locker, probe_locker;
	std::string resource = unique_resource("sentinel/held/");
	Seen seen;
	std::atomic<int> lost_calls{0};

	::testing::AssertionResult connect_all()
	{
		if (auto s = deployment.started(); !s)
			return s;
		for (auto *l : {&holder_locker, &waiter_locker, &probe_locker}) {
			auto c = pglease::connect(deployment.url(), failover_options());
			if (!c)
				return ::testing::AssertionFailure() << c.error();
			*l = std::move(*c);
		}
		return ::testing::AssertionSuccess();
	}
};

// new_master_after -- run FAULT (a verb of scripts/sentinel.sh), then the
// address of the master every Sentinel names ("" after a failure)
std::string
new_master_after(const Deployment &deployment, const std::string &fault)
{
	Ran ran = deployment.run(fault);
	if (!ran.ok()) {
		ADD_FAILURE() << fault << ": " << ran.output;
		return "";
	}
	std::string master = trimmed(ran.output);
	if (fault == "kill-master") { // it printed the killed one
		ran = deployment.run("wait-new-master", "'" + master + "' 30");
		if (!ran.ok()) {
			ADD_FAILURE() << "wait-new-master: " << ran.output;
			return "";
		}
		master = trimmed(ran.output);
	}
	EXPECT_NE(master, deployment.first_master());
	return master;
}

// asked_again -- the waiter's lease: a wait that ended in the switch
// (Errc::unavailable, as any call then may) is asked again, as an
// application would, for up to BOUND
pglease::Result<pglease::Lease>
asked_again(FailoverRun &r, pglease::Result<pglease::Lease> first, milliseconds bound)
{
	const auto until = Clock::now() + bound;
	while (!first && first.error().code == Errc::unavailable && Clock::now() < until) {
		r.seen.add(first.error());
		std::this_thread::sleep_for(100ms);
		first = in_other_thread([&] { return r.waiter_locker->acquire(r.resource, opts(5s, 5s)); });
	}
	return first;
}

// run_failover -- hold, wait, FAULT (a shell verb of sentinel.sh that
// prints the new master or the killed one), then check that the clients
// follow: the waiter is granted on the new master with a higher token, a
// fresh acquire works there, and no call said internal or hung
// (HOLDER_TTL shorter than the Sentinels' failover time: on_lost must fire,
// exactly once)
void
run_failover(const std::string &fault, milliseconds follow_bound, milliseconds holder_ttl)
{
	FailoverRun r;
	ASSERT_TRUE(r.connect_all());
	auto held = r.holder_locker->acquire(r.resource, opts(holder_ttl));
	ASSERT_TRUE(held) << held.error();
	held->on_lost([&](const pglease::Error &e) {
		r.lost_calls++;
		std::cout << "  holder lost: " << e.message << "\n";
		EXPECT_TRUE(no_secret(e.message));
	});
	const auto held_token = held->token();
	auto waiter =
	    std::async(std::launch::async, [&] { return r.waiter_locker->acquire(r.resource, opts(5s, 40s)); });
	std::atomic<bool> stop{false};
	auto prober = std::async(std::launch::async, [&] {
		probe(*r.probe_locker, unique_resource("sentinel/probe/"), stop, r.seen);
	});
	// stop the prober on every way out (a failed ASSERT returns early): the
	// future's destructor waits for it, then the servers are killed
	struct StopOnExit {
		std::atomic<bool> &stop;
		~StopOnExit() { stop = true; }
	} stop_on_exit{stop};
	std::this_thread::sleep_for(300ms);
	const auto fault_at = Clock::now();
	const std::string new_master = new_master_after(r.deployment, fault);
	ASSERT_FALSE(new_master.empty());
	std::cout << "  new master " << new_master << " (was " << r.deployment.first_master() << ") after "
	          << ms_since(fault_at) << " ms\n";
	// a client is granted on the new master within the bound (a grant on
	// the old one, not yet reconfigured by the Sentinels, does not count)
	auto on_new_master = [&] {
		return in_other_thread([&] {
			const auto resource = unique_resource("sentinel/follow/");
			auto lease = r.probe_locker->try_acquire(resource, opts(2s));
			return lease && r.deployment.node_has(new_master, "pglease:lock:" + resource);
		});
	};
	EXPECT_TRUE(eventually(on_new_master, follow_bound, 100ms))
	    << "no grant on the new master within " << follow_bound.count() << " ms of its election";
	const auto followed_ms = ms_since(fault_at);
	// hand the held resource over: the waiter gets it on the new master
	if (holder_ttl < 2s) {
		EXPECT_EQ(r.lost_calls.load(), 1) << "renewals failed past the local deadline: on_lost exactly once";
		EXPECT_FALSE(held->valid());
	}
	(void)held->release(); // may be lost already: the waiter is granted either way
	auto next = asked_again(r, waiter.get(), follow_bound);
	ASSERT_TRUE(next) << next.error();
	EXPECT_TRUE(r.deployment.node_has(new_master, "pglease:lock:" + r.resource))
	    << "the waiter's lease is not on the new master " << new_master;
	EXPECT_GT(next->token(), held_token) << "(the replica had the counter: the failover came long after)";
	auto fresh = in_other_thread(
	    [&] { return r.holder_locker->acquire(unique_resource("sentinel/after/"), opts(3s, 2s)); });
	EXPECT_TRUE(fresh) << fresh.error();
	stop = true;
	prober.wait();
	EXPECT_LE(r.lost_calls.load(), 1) << "on_lost more than once";
	EXPECT_LT(r.seen.slowest_ms, 3000) << "a try_acquire took " << r.seen.slowest_ms << " ms";
	std::cout << "  followed after " << followed_ms << " ms; during the switch: " << r.seen.unavailable
	          << " unavailable, " << r.seen.held << " held, " << r.seen.granted << " granted; slowest call "
	          << r.seen.slowest_ms << " ms; holder lost " << r.lost_calls << " time(s)\n";
	for (const auto &m : r.seen.messages)
		EXPECT_TRUE(no_secret(m));
	if (!r.seen.messages.empty())
		std::cout << "  e.g. " << r.seen.messages.back() << "\n";
}

TEST(RedisSentinelFailover, sentinel_failover_while_held_and_waited_clients_follow_the_new_master)
{
	// the old master stays a writable master until the Sentinels reconfigure
	// it (about 10 s after they name the new one), with no error to its
	// clients: they follow because they ask the Sentinels again every second
	run_failover("failover", 5s, 3s);
}

TEST(RedisSentinelFailover, sigkill_of_the_master_while_held_and_waited_clients_follow_within_a_bound)
{
	// down-after-milliseconds 1000 and an election: the Sentinels name the
	// new master within a few seconds (more than the holder's TTL: it is
	// lost); the clients follow within 5 s of that
	run_failover("kill-master", 5s, 1200ms);
}

} // namespace
