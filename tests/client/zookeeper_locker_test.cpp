// zookeeper_locker_test.cpp -- the zookeeper:// locker, reached only through
// pglease::connect (so every test also shows that linking pglease::zookeeper
// registers it), against real ZooKeeper servers started with
// scripts/zookeeper.sh: one standalone server on 57000 for the whole suite,
// a three-server ensemble on 57001-57003 for the failover test.  57010 is
// never listened on (a dead host in a URL).  Server-side deletions use
// zookeeper.sh break (the package's zkCli.sh).  Never mocked, never skipped.
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "pglease/pglease.hpp"
#include "support.hpp"

extern char **environ;

using pglease::Errc;
using namespace test_support;

namespace {

constexpr int standalone_port = 57000;
constexpr int ensemble_ports[] = {57001, 57002, 57003};
constexpr int dead_port = 57010;

std::string
script()
{
	return source_path("scripts/zookeeper.sh");
}

std::string
url(int port, const std::string &tail = "")
{
	return "zookeeper://127.0.0.1:" + std::to_string(port) + tail;
}

pglease::ClientOptions
quick()
{
	pglease::ClientOptions o;
	o.connect_timeout = 2s;
	return o;
}

std::string
resource()
{
	return test_resource("zk-test/");
}

class ZookeeperLocker : public ::testing::Test {
protected:
	static void SetUpTestSuite()
	{
		dirs = new ServerDirs("zookeeper.sh");
		standalone = dirs->dir("standalone");
		started = dirs->ok() && sh(script() + " start '" + standalone + "' " +
		                           std::to_string(standalone_port) + " >/dev/null");
	}
	static void TearDownTestSuite()
	{
		delete dirs;
		dirs = nullptr;
	}
	void SetUp() override
	{
		ASSERT_TRUE(started) << "scripts/zookeeper.sh could not start a server on " << standalone_port;
		auto r = pglease::connect(url(standalone_port), quick());
		ASSERT_TRUE(r) << r.error();
		locker = std::move(*r);
	}
	void TearDown() override
	{
		if (stopped)
			sh(script() + " start '" + standalone + "' " + std::to_string(standalone_port) + " >/dev/null");
	}
	static inline ServerDirs *dirs = nullptr;
	static inline std::string standalone;
	static inline bool started = false;
	std::unique_ptr<pglease::Locker> locker;
	bool stopped = false;
};

TEST_F(ZookeeperLocker, CapabilitiesAndProviderName)
{
	auto c = locker->capabilities();
	EXPECT_TRUE(c.distributed && c.fencing_token && c.fifo_wait && c.ephemeral && c.durable &&
	            c.survives_failover);
	EXPECT_FALSE(c.fenced_write);
	EXPECT_EQ(locker->provider(), "ZooKeeper");
}

TEST_F(ZookeeperLocker, ContendedThenReleasedThenHigherToken)
{
	auto r = resource();
	auto first = locker->acquire(r, opts(5s));
	ASSERT_TRUE(first) << first.error();
	EXPECT_GT(first->token(), 0);
	auto contender = in_other_thread([&] { return locker->try_acquire(r, opts(5s)); });
	ASSERT_FALSE(contender);
	EXPECT_EQ(contender.error().code, Errc::timeout) << contender.error();
	ASSERT_TRUE(first->release());
	auto second = in_other_thread([&] { return locker->try_acquire(r, opts(5s)); });
	ASSERT_TRUE(second) << second.error();
	EXPECT_GT(second->token(), first->token()) << "the czxid of a later lock node is higher";
}

TEST_F(ZookeeperLocker, WaitersAreGrantedInArrivalOrder)
{
	auto r = resource();
	auto holder = locker->acquire(r, opts(5s));
	ASSERT_TRUE(holder) << holder.error();
	std::mutex mu;
	std::vector<int> order;
	std::vector<std::thread> waiters;
	for (int i = 0; i < 3; i++) {
		waiters.emplace_back([&, i] {
			auto lease = locker->acquire(r, opts(5s, 10s));
			std::lock_guard<std::mutex> lk(mu);
			order.push_back(lease ? i : -1);
			// lease released on leaving: the next waiter's turn
		});
		std::this_thread::sleep_for(300ms); // each waiter's node created before the next
	}
	ASSERT_TRUE(holder->release());
	for (auto &t : waiters)
		t.join();
	EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

TEST_F(ZookeeperLocker, KilledHolderProcessIsTakenOverAfterItsSessionTimeoutWithHigherToken)
{
	auto r = resource();
	std::string token_file = "/tmp/pglease-zk-token." + std::to_string(::getpid());
	std::filesystem::remove(token_file);
	// the command's shell becomes the sleep: its pid is $$, killed at the end
	std::string child_cmd = "echo $PGLEASE_TOKEN $$ > " + token_file + "; exec sleep 60";
	std::vector<std::string> args = {
	    PGLEASE_CLI, "--dsn",  url(standalone_port), "run", "--resource", r, "--ttl", "2s", "--", "sh",
	    "-c",        child_cmd};
	std::vector<char *> argv;
	for (auto &a : args)
		argv.push_back(a.data());
	argv.push_back(nullptr);
	pid_t child = 0;
	ASSERT_EQ(::posix_spawn(&child, PGLEASE_CLI, nullptr, nullptr, argv.data(), environ), 0);
	std::error_code ec_ignored;
	ASSERT_TRUE(eventually(
	    [&] {
		    auto size = std::filesystem::file_size(token_file, ec_ignored);
		    return !ec_ignored && size > 0;
	    },
	    10s))
	    << "the pglease run child did not get the lease";
	long long child_token = 0;
	pid_t sleeper = 0;
	std::ifstream(token_file) >> child_token >> sleeper;
	std::filesystem::remove(token_file);
	auto held = in_other_thread([&] { return locker->try_acquire(r, opts(5s)); });
	ASSERT_FALSE(held) << "granted while the child holds it";

	::kill(child, SIGKILL); // no close: its session ends only by timing out
	int status = 0;
	::waitpid(child, &status, 0);
	auto killed = Clock::now();
	auto taken = in_other_thread([&] { return locker->acquire(r, opts(5s, 10s)); });
	auto took = Clock::now() - killed;
	ASSERT_TRUE(taken) << taken.error();
	EXPECT_GT(taken->token(), child_token);
	EXPECT_GE(took, 1500ms) << "granted before the killed holder's session (2 s) timed out";
	EXPECT_LT(took, 5s);
	if (sleeper > 0)
		::kill(sleeper, SIGKILL); // the child's command, orphaned
}

TEST_F(ZookeeperLocker, AutoRenewKeepsTheLeasePastItsTtl)
{
	auto r = resource();
	auto lease = locker->acquire(r, opts(1s));
	ASSERT_TRUE(lease) << lease.error();
	std::this_thread::sleep_for(2500ms);
	EXPECT_TRUE(lease->valid());
	auto contender = in_other_thread([&] { return locker->try_acquire(r, opts(5s)); });
	ASSERT_FALSE(contender) << "granted twice";
	EXPECT_EQ(contender.error().code, Errc::timeout);
}

TEST_F(ZookeeperLocker, UnrenewedLeaseEndsServerSideAtItsLocalDeadline)
{
	auto r = resource();
	auto o = opts(800ms);
	o.auto_renew = false;
	auto first = locker->acquire(r, o);
	ASSERT_TRUE(first) << first.error();
	std::this_thread::sleep_for(1000ms);
	EXPECT_FALSE(first->valid());
	auto second = in_other_thread([&] { return locker->try_acquire(r, opts(5s)); });
	ASSERT_TRUE(second) << second.error();
	EXPECT_GT(second->token(), first->token());
}

TEST_F(ZookeeperLocker, NodeDeletedServerSideFiresOnLostOnce)
{
	auto r = resource();
	auto lease = locker->acquire(r, opts(1500ms));
	ASSERT_TRUE(lease) << lease.error();
	std::atomic<int> calls{0};
	lease->on_lost([&](const pglease::Error &) { calls++; });
	ASSERT_TRUE(sh(script() + " break '" + standalone + "' '" + r + "'")) << "zookeeper.sh break";
	EXPECT_TRUE(eventually([&] { return calls.load() > 0; }, 3s)) << "on_lost not called";
	std::this_thread::sleep_for(600ms);
	EXPECT_EQ(calls.load(), 1);
	EXPECT_FALSE(lease->valid());
	EXPECT_TRUE(lease->cancel_token().cancelled());
}

TEST_F(ZookeeperLocker, WaitTimesOutWithinWaitPlusGraceAndLeavesNoNode)
{
	auto r = resource();
	auto holder = locker->acquire(r, opts(5s));
	ASSERT_TRUE(holder) << holder.error();
	auto start = Clock::now();
	auto waiter = in_other_thread([&] { return locker->acquire(r, opts(5s, 500ms)); });
	auto took = Clock::now() - start;
	ASSERT_FALSE(waiter);
	EXPECT_EQ(waiter.error().code, Errc::timeout) << waiter.error();
	EXPECT_GE(took, 500ms);
	EXPECT_LT(took, 1500ms);
	ASSERT_TRUE(holder->release());
	// a node left by the waiter would be ahead of a new one: a try would fail
	auto next = in_other_thread([&] { return locker->try_acquire(r, opts(5s)); });
	EXPECT_TRUE(next) << "the timed-out waiter left its node: " << next.error();
}

TEST_F(ZookeeperLocker, StoppedServerIsUnavailablePromptlyThenRecovers)
{
	stopped = true;
	ASSERT_TRUE(sh(script() + " stop '" + standalone + "'"));
	auto start = Clock::now();
	auto down = locker->try_acquire(resource(), opts(5s));
	EXPECT_LT(Clock::now() - start, 3s) << "connect_timeout is 2 s";
	ASSERT_FALSE(down);
	EXPECT_EQ(down.error().code, Errc::unavailable) << down.error();
	EXPECT_TRUE(pglease::is_retryable(down.error()));
	ASSERT_TRUE(
	    sh(script() + " start '" + standalone + "' " + std::to_string(standalone_port) + " >/dev/null"));
	stopped = false;
	auto up = locker->try_acquire(resource(), opts(5s));
	EXPECT_TRUE(up) << up.error();
}

TEST_F(ZookeeperLocker, HeldLeaseIsLostByItsDeadlineWhenTheServerStops)
{
	auto lease = locker->acquire(resource(), opts(1500ms));
	ASSERT_TRUE(lease) << lease.error();
	std::atomic<int> calls{0};
	lease->on_lost([&](const pglease::Error &) { calls++; });
	stopped = true;
	ASSERT_TRUE(sh(script() + " stop '" + standalone + "'"));
	EXPECT_TRUE(eventually([&] { return calls.load() > 0; }, 3s)) << "on_lost not called by the deadline";
	EXPECT_FALSE(lease->valid());
}

TEST_F(ZookeeperLocker, SeveralHostsAndAChrootInTheUrl)
{
	auto r = resource();
	// the first host is dead: the C client moves on to the next
	auto two = pglease::connect("zookeeper://127.0.0.1:" + std::to_string(dead_port) +
	                                ",127.0.0.1:" + std::to_string(standalone_port),
	                            quick());
	ASSERT_TRUE(two) << two.error();
	for (int i = 0; i < 3; i++) {
		auto lease = in_other_thread([&] { return (*two)->acquire(r, opts(3s, 3s)); });
		ASSERT_TRUE(lease) << lease.error();
	}
	// another chroot is another lock space
	auto chrooted = pglease::connect(url(standalone_port, "/apps/locks"), quick());
	ASSERT_TRUE(chrooted) << chrooted.error();
	auto held = locker->acquire(r, opts(5s));
	ASSERT_TRUE(held) << held.error();
	auto other_space = in_other_thread([&] { return (*chrooted)->try_acquire(r, opts(5s)); });
	EXPECT_TRUE(other_space) << other_space.error();
}

TEST_F(ZookeeperLocker, MalformedUrlsAndTooLongTtlsAreInvalidArguments)
{
	for (const char *bad :
	     {"zookeeper://", "zookeeper://host", "zookeeper://h:0", "zookeeper://h:1,", "zookeeper://h:1/",
	      "zookeeper://h:1/a//b", "zookeeper://h:1/a/..", "zookeeper://u@h:1", "zookeeper://h:1?x=1"}) {
		auto r = pglease::connect(bad);
		ASSERT_FALSE(r) << bad;
		EXPECT_EQ(r.error().code, Errc::invalid_argument) << bad << ": " << r.error();
	}
	// the test servers' maxSessionTimeout is 60 s
	auto too_long = locker->try_acquire(resource(), opts(120s));
	ASSERT_FALSE(too_long);
	EXPECT_EQ(too_long.error().code, Errc::invalid_argument) << too_long.error();
	auto advisory = opts(5s);
	advisory.strategy = pglease::Strategy::advisory;
	auto refused = locker->try_acquire(resource(), advisory);
	ASSERT_FALSE(refused);
	EXPECT_EQ(refused.error().code, Errc::invalid_argument);
}

TEST_F(ZookeeperLocker, LeaderStoppedWhileHeldNeverGrantsTwice)
{
	ServerDirs ensemble{"zookeeper.sh"};
	std::string spec, hosts;
	std::vector<std::string> member;
	for (int i = 0; i < 3; i++) {
		spec += (i ? "," : "") + std::to_string(ensemble_ports[i]);
		hosts += std::string(i ? "," : "") + "127.0.0.1:" + std::to_string(ensemble_ports[i]);
		member.push_back(ensemble.dir("member" + std::to_string(i + 1)));
	}
	for (int i = 0; i < 3; i++)
		ASSERT_TRUE(sh(script() + " start '" + member[i] + "' " + std::to_string(ensemble_ports[i]) + " " +
		               spec + " " + std::to_string(i + 1) + " >/dev/null"));
	auto mode_of = [&](int i) {
		std::string out = member[i] + "/mode.out";
		sh(script() + " mode '" + member[i] + "' >'" + out + "' 2>/dev/null");
		std::string mode;
		std::ifstream(out) >> mode;
		return mode;
	};
	int leader = -1;
	ASSERT_TRUE(eventually(
	    [&] {
		    int followers = 0;
		    for (int i = 0; i < 3; i++) {
			    auto m = mode_of(i);
			    leader = m == "leader" ? i : leader;
			    followers += m == "follower";
		    }
		    return leader >= 0 && followers == 2;
	    },
	    20s))
	    << "the ensemble elected no leader within 20 s";

	auto ha = pglease::connect("zookeeper://" + hosts, quick());
	ASSERT_TRUE(ha) << ha.error();
	auto r = resource();
	std::atomic<bool> holder_valid{false};
	auto holder = (*ha)->acquire(r, opts(4s));
	ASSERT_TRUE(holder) << holder.error();
	holder_valid = true;
	std::atomic<int> lost{0};
	holder->on_lost([&](const pglease::Error &) { lost++; });
	std::atomic<bool> overlap{false};
	auto waiter = std::async(std::launch::async, [&] {
		auto lease = (*ha)->acquire(r, opts(4s, 30s));
		if (lease && holder_valid.load())
			overlap = true;
		return lease;
	});
	std::this_thread::sleep_for(500ms);
	ASSERT_TRUE(sh(script() + " stop '" + member[leader] + "'"));
	std::this_thread::sleep_for(3s); // a new leader is elected; sessions move to a survivor
	bool kept = holder->valid();
	EXPECT_TRUE(kept || lost.load() == 1) << "neither kept nor told it lost the lease";
	holder_valid = false;
	auto released = holder->release();
	auto granted = waiter.get();
	ASSERT_TRUE(granted) << granted.error();
	EXPECT_FALSE(overlap.load()) << "two holders at once";
	EXPECT_GT(granted->token(), holder->token());
	std::cout << "leader on port " << ensemble_ports[leader] << " stopped; holder "
	          << (kept ? "kept its lease" : "was told it lost it")
	          << "; waiter granted with a higher token\n";
}

} // namespace
