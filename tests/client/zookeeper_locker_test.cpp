// zookeeper_locker_test.cpp -- the zookeeper:// locker, reached only through
// pglease::connect (so every test also shows that linking pglease::zookeeper
// registers it), against real ZooKeeper servers started with
// scripts/zookeeper.sh: one standalone server for the whole suite, a
// three-server ensemble for the failover tests (a lease, an election).  Every port is drawn free
// when its server starts (support.hpp's ScriptServer and ScriptCluster; an
// ensemble's client, quorum (+100) and election (+200) ports all at once; a
// bind race retried on new ports; the standalone server stopped and started
// again gets its own port back).  The dead host of a URL is a port drawn free
// and never started.  Server-side deletions use
// zookeeper.sh break (the package's zkCli.sh); a frozen server is the
// standalone one stopped with SIGSTOP (Frozen: SIGCONT however the test
// ends); node counts come from the four-letter word srvr.  Never mocked,
// never skipped.
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
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <iostream>
#include <climits>
#include <cctype>
#include <cstdio>
#include <regex>

#include <gtest/gtest.h>

#include "pglease/pglease.hpp"
#include "support.hpp"

extern char **environ;

using pglease::Errc;
using namespace test_support;

namespace {

// The standalone server of the whole suite (ZookeeperLocker starts it).
ScriptServer *standalone = nullptr;

int
standalone_port()
{
	return standalone != nullptr ? standalone->port() : 0;
}

// dead_port -- a port drawn free for this binary and never listened on by it
int
dead_port()
{
	static const int port = free_port();
	return port;
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

// all_threads_stopped -- every thread of pid in state T (stopped)
bool
all_threads_stopped(pid_t pid)
{
	std::error_code ec;
	const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
	bool any = false;
	for (const auto &task : std::filesystem::directory_iterator(tasks, ec)) {
		std::ifstream stat(task.path() / "stat");
		std::string line;
		std::getline(stat, line);
		auto close = line.rfind(')');
		if (close == std::string::npos || close + 2 >= line.size())
			continue; // the thread has ended meanwhile
		if (line[close + 2] != 'T' && line[close + 2] != 't')
			return false;
		any = true;
	}
	return any;
}

// Frozen -- the server stopped with SIGSTOP for a scope: it keeps its
// sockets open and answers nothing.  SIGCONT however the scope ends, so a
// failed assertion never leaves a frozen server behind.  The stop is not
// instant: a thread running on another CPU stops when it next leaves the
// kernel, so the constructor waits (1 s at most) until every thread of the
// server has stopped -- under load a request sent at once was answered.
class Frozen {
public:
	explicit Frozen(pid_t pid) : pid_(pid)
	{
		if (pid_ <= 0)
			return;
		::kill(pid_, SIGSTOP);
		for (int i = 0; i < 200 && !all_threads_stopped(pid_); i++)
			std::this_thread::sleep_for(std::chrono::milliseconds{5});
	}
	~Frozen() { thaw(); }
	Frozen(const Frozen &) = delete;
	Frozen &operator=(const Frozen &) = delete;
	void thaw()
	{
		if (pid_ > 0)
			::kill(pid_, SIGCONT);
		pid_ = 0;
	}

private:
	pid_t pid_;
};

// node_count -- the server's "Node count" (four-letter word srvr), or -1
long long
node_count(int port)
{
	auto out = capture("bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(port) +
	                   " && printf srvr >&3 && timeout 2 cat <&3' | sed -n 's/^Node count: //p'");
	try {
		return std::stoll(out);
	} catch (...) {
		return -1;
	}
}

// grace -- what statement_grace is by default: every call's bound beyond its wait
constexpr milliseconds grace = 2s;
constexpr milliseconds slack = 1500ms;

class ZookeeperLocker : public ::testing::Test {
protected:
	static void SetUpTestSuite()
	{
		standalone = new ScriptServer("zookeeper.sh");
		started = standalone->start();
	}
	static void TearDownTestSuite()
	{
		delete standalone;
		standalone = nullptr;
	}
	void SetUp() override
	{
		ASSERT_TRUE(started) << "install ZooKeeper: scripts/install-deps.sh";
		auto r = pglease::connect(url(standalone_port()), quick());
		ASSERT_TRUE(r) << r.error();
		locker = std::move(*r);
	}
	void TearDown() override
	{
		if (stopped) {
			EXPECT_TRUE(standalone->start()) << "the standalone server again, for the next tests";
		}
	}
	static inline ::testing::AssertionResult started = ::testing::AssertionFailure();
	std::unique_ptr<pglease::Locker> locker;
	bool stopped = false;
};

TEST_F(ZookeeperLocker, CapabilitiesAndProviderName)
{
	auto c = locker->capabilities();
	EXPECT_TRUE(c.distributed && c.fencing_token && c.fifo_wait && c.ephemeral && c.durable &&
	            c.survives_failover && c.election && c.shared_mode && c.semaphore);
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
	    PGLEASE_CLI, "--dsn",  url(standalone_port()), "run", "--resource", r, "--ttl", "2s", "--", "sh",
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
	auto broken = standalone->run("break", "'" + r + "'");
	ASSERT_TRUE(broken.ok()) << "zookeeper.sh break: " << broken.output;
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
	ASSERT_TRUE(standalone->stop());
	auto start = Clock::now();
	auto down = locker->try_acquire(resource(), opts(5s));
	EXPECT_LT(Clock::now() - start, 3s) << "connect_timeout is 2 s";
	ASSERT_FALSE(down);
	EXPECT_EQ(down.error().code, Errc::unavailable) << down.error();
	EXPECT_TRUE(pglease::is_retryable(down.error()));
	ASSERT_TRUE(standalone->start()) << "the same port again";
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
	ASSERT_TRUE(standalone->stop());
	EXPECT_TRUE(eventually([&] { return calls.load() > 0; }, 3s)) << "on_lost not called by the deadline";
	EXPECT_FALSE(lease->valid());
}

TEST_F(ZookeeperLocker, SeveralHostsAndAChrootInTheUrl)
{
	auto r = resource();
	// the first host is dead: the C client moves on to the next
	auto two = pglease::connect("zookeeper://127.0.0.1:" + std::to_string(dead_port()) +
	                                ",127.0.0.1:" + std::to_string(standalone_port()),
	                            quick());
	ASSERT_TRUE(two) << two.error();
	for (int i = 0; i < 3; i++) {
		auto lease = in_other_thread([&] { return (*two)->acquire(r, opts(3s, 3s)); });
		ASSERT_TRUE(lease) << lease.error();
	}
	// another chroot is another lock space
	auto chrooted = pglease::connect(url(standalone_port(), "/apps/locks"), quick());
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
	// member I is started with its client port, the ensemble's client ports
	// and its 1-based id; quorum and election ports are + 100 and + 200
	ScriptCluster ensemble{
	    "zookeeper.sh", 3, {0, 100, 200}, [](std::size_t i, const std::vector<int> &ports) {
		    return joined(ports) + " " + std::to_string(i + 1);
	    }};
	auto mode_of = [&](std::size_t i) {
		std::string mode;
		std::istringstream(ensemble.run(i, "mode").output) >> mode;
		return mode;
	};
	int leader = -1;
	ASSERT_TRUE(ensemble.start(
	    [&] {
		    int followers = 0;
		    for (std::size_t i = 0; i < 3; i++) {
			    auto m = mode_of(i);
			    leader = m == "leader" ? static_cast<int>(i) : leader;
			    followers += m == "follower";
		    }
		    return leader >= 0 && followers == 2;
	    },
	    20s))
	    << "the ensemble elected no leader within 20 s";
	std::string hosts;
	for (int port : ensemble.ports())
		hosts += std::string(hosts.empty() ? "" : ",") + "127.0.0.1:" + std::to_string(port);

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
	ASSERT_TRUE(ensemble.stop(static_cast<std::size_t>(leader)));
	std::this_thread::sleep_for(3s); // a new leader is elected; sessions move to a survivor
	bool kept = holder->valid();
	EXPECT_TRUE(kept || lost.load() == 1) << "neither kept nor told it lost the lease";
	holder_valid = false;
	auto released = holder->release();
	auto granted = waiter.get();
	ASSERT_TRUE(granted) << granted.error();
	EXPECT_FALSE(overlap.load()) << "two holders at once";
	EXPECT_GT(granted->token(), holder->token());
	std::cout << "leader on port " << ensemble.port(static_cast<std::size_t>(leader)) << " stopped; holder "
	          << (kept ? "kept its lease" : "was told it lost it")
	          << "; waiter granted with a higher token\n";
}

// an election through the ensemble's failover: the leader keeps its term
// (or is told it lost it), a second candidate waits, a follower observing
// through its own read session keeps being told after its server moved: the
// handover after the resign reaches it with the higher term
TEST_F(ZookeeperLocker, ElectionObservedThroughTheEnsemblesFailover)
{
	ScriptCluster ensemble{
	    "zookeeper.sh", 3, {0, 100, 200}, [](std::size_t i, const std::vector<int> &ports) {
		    return joined(ports) + " " + std::to_string(i + 1);
	    }};
	int leader = -1;
	ASSERT_TRUE(ensemble.start(
	    [&] {
		    int followers = 0;
		    for (std::size_t i = 0; i < 3; i++) {
			    std::string m;
			    std::istringstream(ensemble.run(i, "mode").output) >> m;
			    leader = m == "leader" ? static_cast<int>(i) : leader;
			    followers += m == "follower";
		    }
		    return leader >= 0 && followers == 2;
	    },
	    20s))
	    << "the ensemble elected no leader within 20 s";
	std::string hosts;
	for (int port : ensemble.ports())
		hosts += std::string(hosts.empty() ? "" : ",") + "127.0.0.1:" + std::to_string(port);
	auto candidates = pglease::connect("zookeeper://" + hosts, quick());
	auto follower = pglease::connect("zookeeper://" + hosts, quick());
	ASSERT_TRUE(candidates && follower);
	auto e = resource();
	std::mutex mu;
	std::vector<pglease::LeaderView> seen;
	auto observer = pglease::ElectionObserver::start(**follower, e, [&](const pglease::LeaderView &v) {
		std::lock_guard<std::mutex> lk(mu);
		seen.push_back(v);
	});
	ASSERT_TRUE(observer) << observer.error();
	auto a = in_other_thread([&] { return (*candidates)->campaign(e, "a", opts(4s)); });
	ASSERT_TRUE(a) << a.error();
	std::atomic<int> lost{0};
	a->on_lost([&](const pglease::Error &) { lost++; });
	auto b = std::async(std::launch::async, [&] { return (*candidates)->campaign(e, "b", opts(4s, 30s)); });
	auto last_value = [&] {
		std::lock_guard<std::mutex> lk(mu);
		return seen.empty() ? std::string{} : seen.back().value;
	};
	EXPECT_TRUE(eventually([&] { return last_value() == "a"; }, 5s)) << "the follower never saw a";
	ASSERT_TRUE(ensemble.stop(static_cast<std::size_t>(leader)));
	std::this_thread::sleep_for(3s); // a new leader is elected; sessions move to a survivor
	EXPECT_EQ(b.wait_for(0s), std::future_status::timeout) << "elected beside a live leader";
	EXPECT_TRUE(a->valid() || lost.load() == 1) << "neither kept nor told it lost its term";
	(void)a->resign();
	auto b_lead = b.get();
	ASSERT_TRUE(b_lead) << b_lead.error();
	EXPECT_GT(b_lead->term(), a->term());
	EXPECT_TRUE(eventually([&] { return last_value() == "b"; }, 5s))
	    << "the follower was not told after the failover";
	observer->reset();
	std::lock_guard<std::mutex> lk(mu);
	for (std::size_t i = 1; i < seen.size(); i++)
		EXPECT_GE(seen[i].term, seen[i - 1].term) << "the follower went back to a lower term";
}

// issue 19 defect 5: with the server frozen (SIGSTOP: it keeps its sockets
// and answers nothing), an acquire ends within wait + statement_grace,
// whether it reuses a pooled session (its create is sent, and runs when the
// server resumes) or has to open one (ClientOptions' default connect_timeout
// of 5 s is longer than the call's bound).  The node of the abandoned create
// goes when the server resumes (its session was closed), at most one TTL later.
TEST_F(ZookeeperLocker, AcquireOnAFrozenServerEndsWithinGraceAndLeavesNoLockBehind)
{
	auto r = resource();
	{ // a released grant leaves its session in the pool: the next acquire reuses it
		auto warm = locker->acquire(r, opts(8s));
		ASSERT_TRUE(warm) << warm.error();
	}
	auto fresh = pglease::connect(url(standalone_port())); // default options: connect_timeout 5 s
	ASSERT_TRUE(fresh) << fresh.error();
	long long pooled_ms = 0, fresh_ms = 0;
	{
		Frozen frozen{standalone->pid()};
		auto start = Clock::now();
		auto pooled = in_other_thread([&] { return locker->acquire(r, opts(8s)); });
		pooled_ms = ms_since(start);
		ASSERT_FALSE(pooled) << "granted by a frozen server";
		EXPECT_TRUE(pglease::is_retryable(pooled.error())) << pooled.error();
		EXPECT_LE(pooled_ms, (grace + slack).count()) << pooled.error();
		start = Clock::now();
		auto opened = in_other_thread([&] { return (*fresh)->acquire(r + "/fresh", opts(8s)); });
		fresh_ms = ms_since(start);
		ASSERT_FALSE(opened) << "granted by a frozen server";
		EXPECT_EQ(opened.error().code, Errc::unavailable) << opened.error();
		EXPECT_LE(fresh_ms, (grace + slack).count()) << opened.error();
	}
	auto thawed = Clock::now();
	auto other = pglease::connect(url(standalone_port()), quick());
	ASSERT_TRUE(other) << other.error();
	auto next = in_other_thread([&] { return (*other)->acquire(r, opts(8s, 8s + slack)); });
	auto next_ms = ms_since(thawed);
	ASSERT_TRUE(next) << "the abandoned acquire's node still holds the resource: " << next.error();
	EXPECT_LE(next_ms, (8s + slack).count()) << "its node outlived the documented bound (one TTL)";
	std::cout << "frozen server: acquire with a pooled session gave up after " << pooled_ms
	          << " ms, with a new session after " << fresh_ms << " ms (bound " << grace.count()
	          << " ms); after SIGCONT the resource was granted again after " << next_ms << " ms\n";
}

// issue 19 defect 5: acquire(wait = 3 s) on a held resource with the server
// frozen 0.5 s into the wait took 9 s; its bound is wait + statement_grace.
// The waiter's node goes once the server resumes (its delete and its
// session's close were sent), the holder's lease is lost by its deadline.
TEST_F(ZookeeperLocker, FrozenHalfASecondIntoAWaitEndsWithinWaitPlusGrace)
{
	auto r = resource();
	auto holder = locker->acquire(r, opts(3s));
	ASSERT_TRUE(holder) << holder.error();
	long long waited_ms = 0;
	{
		auto start = Clock::now();
		auto waiter = std::async(std::launch::async, [&] { return locker->acquire(r, opts(10s, 3s)); });
		std::this_thread::sleep_for(500ms);
		Frozen now_frozen{standalone->pid()};
		auto got = waiter.get();
		waited_ms = ms_since(start);
		ASSERT_FALSE(got) << "granted while held and frozen";
		EXPECT_TRUE(pglease::is_retryable(got.error())) << got.error();
		EXPECT_GE(waited_ms, 3000) << got.error();
		EXPECT_LE(waited_ms, (3s + grace + slack).count()) << got.error();
	}
	EXPECT_FALSE(holder->valid()) << "a 3 s lease kept through a 5 s freeze";
	auto thawed = Clock::now();
	auto other = pglease::connect(url(standalone_port()), quick());
	ASSERT_TRUE(other) << other.error();
	auto next = in_other_thread([&] { return (*other)->acquire(r, opts(3s, 10s + slack)); });
	auto next_ms = ms_since(thawed);
	ASSERT_TRUE(next) << next.error();
	EXPECT_LE(next_ms, (10s + slack).count()) << "the waiter's node outlived its TTL";
	EXPECT_GT(next->token(), holder->token());
	std::cout << "server frozen 0.5 s into a 3 s wait: acquire returned after " << waited_ms << " ms (bound "
	          << (3s + grace).count() << " ms); after SIGCONT granted again after " << next_ms << " ms\n";
}

// issue 19 defect 5: Lease::renew and Lease::release on a frozen server end
// within statement_grace (the synchronous C calls waited for the client to
// declare the connection lost, two thirds of the session timeout).  The
// released lease's node goes when the server resumes.
TEST_F(ZookeeperLocker, RenewAndReleaseOnAFrozenServerEndWithinGrace)
{
	auto r = resource();
	auto o = opts(10s);
	o.auto_renew = false;
	auto renewed = locker->acquire(r + "/renewed", o);
	ASSERT_TRUE(renewed) << renewed.error();
	auto released = in_other_thread([&] { return locker->acquire(r + "/released", o); });
	ASSERT_TRUE(released) << released.error();
	long long renew_ms = 0, release_ms = 0;
	{
		Frozen frozen{standalone->pid()};
		auto start = Clock::now();
		auto renew = renewed->renew();
		renew_ms = ms_since(start);
		ASSERT_FALSE(renew) << "renewed by a frozen server";
		EXPECT_TRUE(pglease::is_retryable(renew.error())) << renew.error();
		EXPECT_LE(renew_ms, (grace + slack).count()) << renew.error();
		start = Clock::now();
		auto release = released->release();
		release_ms = ms_since(start);
		ASSERT_FALSE(release) << "released on a frozen server";
		EXPECT_TRUE(pglease::is_retryable(release.error())) << release.error();
		EXPECT_LE(release_ms, (grace + slack).count()) << release.error();
	}
	auto thawed = Clock::now();
	auto again = in_other_thread([&] { return locker->acquire(r + "/released", opts(3s, 10s + slack)); });
	auto again_ms = ms_since(thawed);
	ASSERT_TRUE(again) << again.error();
	EXPECT_LE(again_ms, (10s + slack).count());
	std::cout << "frozen server: Lease::renew returned after " << renew_ms << " ms, Lease::release after "
	          << release_ms << " ms (bound " << grace.count() << " ms); the released resource was granted "
	          << again_ms << " ms after SIGCONT\n";
}

// issue 19 defect 6: a wait of milliseconds::max() waits (Clock::now() +
// wait overflowed into the past: timeout at once).
TEST_F(ZookeeperLocker, WaitOfMillisecondsMaxOnAHeldResourceWaitsForTheRelease)
{
	auto r = resource();
	auto holder = locker->acquire(r, opts(5s));
	ASSERT_TRUE(holder) << holder.error();
	auto start = Clock::now();
	auto waiter =
	    std::async(std::launch::async, [&] { return locker->acquire(r, opts(5s, milliseconds::max())); });
	std::this_thread::sleep_for(1s);
	ASSERT_TRUE(holder->release());
	auto got = waiter.get();
	auto took = ms_since(start);
	ASSERT_TRUE(got) << got.error();
	EXPECT_GE(took, 900) << "returned before the holder released";
	EXPECT_GT(got->token(), holder->token());
}

// issue 19 defect 6: a TTL above what the C client can carry is refused
// before any I/O, naming the provider's maximum (288h); one the servers do
// not grant is refused at once naming their maximum (the test servers'
// maxSessionTimeout is 60 s).  24 days stalled for connect_timeout, then
// unavailable; 25 days (above INT_MAX ms) claimed a maximum of 400ms.
TEST_F(ZookeeperLocker, TtlsAboveTheClientsOrTheServersMaximumAreRefusedNamingIt)
{
	for (milliseconds ttl :
	     {milliseconds::max(), milliseconds{std::chrono::hours{24 * 25}},
	      milliseconds{std::chrono::hours{24 * 24}}, milliseconds{std::chrono::hours{24 * 13}}}) {
		auto start = Clock::now();
		auto r = locker->try_acquire(resource(), opts(ttl));
		auto took = ms_since(start);
		ASSERT_FALSE(r) << ttl.count();
		EXPECT_EQ(r.error().code, Errc::invalid_argument) << r.error();
		EXPECT_NE(r.error().message.find("its maximum is 288h"), std::string::npos) << r.error();
		EXPECT_LT(took, 100) << r.error();
	}
	for (milliseconds ttl : {milliseconds{std::chrono::hours{24 * 10}}, milliseconds{61s}}) {
		auto start = Clock::now();
		auto r = locker->try_acquire(resource(), opts(ttl));
		auto took = ms_since(start);
		ASSERT_FALSE(r) << ttl.count();
		EXPECT_EQ(r.error().code, Errc::invalid_argument) << r.error();
		EXPECT_NE(r.error().message.find("at most 1m"), std::string::npos) << r.error();
		EXPECT_EQ(r.error().message.find("400ms"), std::string::npos) << r.error();
		EXPECT_LT(took, 1500) << r.error();
	}
	auto longest = locker->try_acquire(resource(), opts(60s));
	EXPECT_TRUE(longest) << "the servers' maximum itself is granted: " << longest.error();
}

// issue 19 defects 2 and 7: over-long, NUL-carrying and invalid UTF-8
// resources and holders are invalid_argument before any I/O: refused the
// same on a dead host, and nothing is created on a live one (a 1 MB name was
// a ZooKeeper connection loss: unavailable, retryable).
TEST_F(ZookeeperLocker, OverlongNulAndInvalidUtf8NamesAreRefusedBeforeAnyIo)
{
	auto dead = pglease::connect(url(dead_port()), quick());
	ASSERT_TRUE(dead) << dead.error();
	const std::string megabyte(1 << 20, 'x');
	const std::string with_nul{"orders\0-eu", 10};
	struct Case {
		std::string resource, holder;
	};
	const std::vector<Case> cases = {{megabyte, ""},
	                                 {resource(), megabyte},
	                                 {std::string(257, 'r'), ""},
	                                 {resource(), std::string(257, 'h')},
	                                 {with_nul, ""},
	                                 {resource(), std::string{"job\0A", 5}},
	                                 {"bad\xff", ""},
	                                 {resource(), "bad\xc3"},
	                                 {"", ""}};
	auto nodes_before = node_count(standalone_port());
	ASSERT_GT(nodes_before, 0);
	for (const auto &c : cases) {
		for (auto *l : {locker.get(), dead->get()}) {
			auto o = opts(5s);
			o.holder = c.holder;
			auto start = Clock::now();
			auto r = l->try_acquire(c.resource, o);
			ASSERT_FALSE(r) << c.resource.size() << "-byte resource, " << c.holder.size() << "-byte holder";
			EXPECT_EQ(r.error().code, Errc::invalid_argument)
			    << c.resource.size() << "-byte resource, " << c.holder.size()
			    << "-byte holder: " << r.error();
			EXPECT_FALSE(pglease::is_retryable(r.error()));
			EXPECT_LT(ms_since(start), 100) << "not refused before any I/O: " << r.error();
		}
	}
	EXPECT_LE(node_count(standalone_port()), nodes_before) << "a refused acquire created nodes";
}

// issue 19 defect 7: every name that passes the common check (at most 256
// bytes of UTF-8 without NUL) is a lease of its own on ZooKeeper too:
// '/', ".", "..", "zookeeper", control characters, non-ASCII and the longest
// names (256 bytes, each encoded as %XX) neither nest, collide nor fail.
TEST_F(ZookeeperLocker, EveryNameThatPassesTheCommonCheckIsALeaseOfItsOwn)
{
	std::string two_byte;
	while (two_byte.size() < pglease::max_resource_bytes)
		two_byte += "\xc3\xa9"; // é
	const std::vector<std::string> names = {".",
	                                        "..",
	                                        "/",
	                                        "a/b",
	                                        "a%2Fb",
	                                        "a_b",
	                                        "a b",
	                                        "zookeeper",
	                                        "\x01\x1f\x7f",
	                                        "\xc3\xa9",
	                                        "\xf0\x9f\x94\x92",
	                                        "/pglease",
	                                        std::string(256, '/'),
	                                        std::string(256, '.'),
	                                        two_byte};
	auto other = pglease::connect(url(standalone_port()), quick());
	ASSERT_TRUE(other) << other.error();
	std::vector<pglease::Lease> held;
	for (const auto &name : names) {
		auto o = opts(5s);
		o.allow_nested_try = true;
		auto lease = locker->try_acquire(name, o);
		ASSERT_TRUE(lease) << "\"" << name << "\": " << lease.error();
		held.push_back(std::move(*lease));
	}
	for (const auto &name : names) {
		auto taken = in_other_thread([&] { return (*other)->try_acquire(name, opts(5s)); });
		ASSERT_FALSE(taken) << "\"" << name << "\" granted twice";
		EXPECT_EQ(taken.error().code, Errc::timeout) << "\"" << name << "\": " << taken.error();
	}
	for (auto &lease : held)
		EXPECT_TRUE(lease.release()) << lease.resource();
}

// issue 19 defects 7 and 8: the URL parser refuses malformed hosts and
// ports and the reserved /zookeeper tree, never repeats a password, and
// takes a bracketed IPv6 literal (handed to the C client as "::1:port").
TEST_F(ZookeeperLocker, UrlParserRefusesMalformedHostsAndNeverEchoesAPassword)
{
	for (const char *bad : {"zookeeper://a b:27000", "zookeeper://127.0.0.1 :27000", "zookeeper://:27000",
	                        "zookeeper://h:", "zookeeper://h:65536", "zookeeper://h:-1", "zookeeper://h:1x",
	                        "zookeeper://h:99999999999999999999", "zookeeper://h:1,,h:2", "zookeeper://[::1]",
	                        "zookeeper://[::1:27000", "zookeeper://[]:27000", "zookeeper://[::1]x:27000",
	                        "zookeeper://[g::1]:27000", "zookeeper://::1:27000", "zookeeper://h:1/zookeeper",
	                        "zookeeper://h:1/zookeeper/locks"}) {
		auto r = pglease::connect(bad);
		ASSERT_FALSE(r) << bad;
		EXPECT_EQ(r.error().code, Errc::invalid_argument) << bad << ": " << r.error();
	}
	// credentials inside the host list, a query: refused, the password never quoted
	for (const char *secret :
	     {"zookeeper://127.0.0.1:27000,alice:s3cr3tPW@127.0.0.1:27001/x",
	      "zookeeper://127.0.0.1:27000/x?password=s3cr3tPW", "zookeeper://alice:s3cr3tPW@127.0.0.1:99999"}) {
		auto r = pglease::connect(secret);
		ASSERT_FALSE(r) << secret;
		EXPECT_EQ(r.error().code, Errc::invalid_argument) << r.error();
		EXPECT_EQ(r.error().message.find("s3cr3tPW"), std::string::npos) << r.error();
	}
	// user:password before the hosts is accepted (zookeeper_auth_test uses it)
	auto with_credentials = pglease::connect("zookeeper://alice:s3cr3tPW@127.0.0.1:27000", quick());
	EXPECT_TRUE(with_credentials) << with_credentials.error();
	for (const char *good : {"zookeeper://[::1]:27010", "zookeeper://[::1]:27010,127.0.0.1:27000/x"}) {
		auto r = pglease::connect(good, quick());
		EXPECT_TRUE(r) << good << ": " << r.error();
	}
}

} // namespace

namespace {

// zk_cli -- the last line of a zkCli.sh command on the standalone server,
// its connection's event lines left out (zkCli prints "WATCHER::" and the
// WatchedEvent when its session connects, at times after the answer)
// (ls: "[a, b]"; get: the data)
std::string
zk_cli(const std::string &command)
{
	auto out =
	    capture("/usr/share/zookeeper/bin/zkCli.sh -server 127.0.0.1:" + std::to_string(standalone_port()) +
	            " " + command + " 2>/dev/null | grep -v -e '^WATCHER::' -e '^WatchedEvent ' -e '^$' | tail -1");
	while (!out.empty() && (out.back() == '\n' || out.back() == ' '))
		out.pop_back();
	return out;
}

// folder_of -- where the provider keeps resource's nodes (target.hpp)
std::string
folder_of(const std::string &resource)
{
	std::string out = "/pglease/";
	for (char c : resource) {
		if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') {
			out += c;
		} else {
			char hex[4];
			std::snprintf(hex, sizeof hex, "%%%02X", static_cast<unsigned char>(c));
			out += hex;
		}
	}
	return out;
}

// nodes_named -- the names of an ls line that are marker + 10 digits after a
// GUID prefix: each one's sequence number and prefix ("_c_<guid>-")
std::vector<std::pair<long long, std::string>>
nodes_named(const std::string &ls, const std::string &marker)
{
	std::vector<std::pair<long long, std::string>> out;
	std::regex node{"(_c_[0-9a-f]{32}-)" + marker + "([0-9]{10})"};
	for (std::sregex_iterator it{ls.begin(), ls.end(), node}, end; it != end; ++it)
		out.emplace_back(std::stoll((*it)[2].str()), (*it)[1].str());
	return out;
}

} // namespace

// Curator's layouts (docs/shared-leases.md, "ZooKeeper"): a writer queues
// InterProcessMutex's "lock-" node and InterProcessReadWriteLock's "__WRIT__"
// node with consecutive sequence numbers (one transaction, one GUID), a
// reader one "__READ__" node, a permit one "lease-" node under "leases",
// whose data is the limit, and its "locks" mutex is left empty.
TEST_F(ZookeeperLocker, EachModeQueuesCuratorsNodeNames)
{
	auto r = resource();
	auto writer = locker->acquire(r, opts(10s));
	ASSERT_TRUE(writer) << writer.error();
	auto listed = zk_cli("ls " + folder_of(r));
	auto locks = nodes_named(listed, "lock-");
	auto writes = nodes_named(listed, "__WRIT__");
	ASSERT_EQ(locks.size(), 1u) << listed;
	ASSERT_EQ(writes.size(), 1u) << listed;
	EXPECT_EQ(writes[0].first, locks[0].first + 1) << "not created in one transaction: " << listed;
	EXPECT_EQ(writes[0].second, locks[0].second) << "one GUID for both: " << listed;
	ASSERT_TRUE(writer->release());

	auto reader_opts = opts(10s);
	reader_opts.mode = pglease::Mode::shared;
	auto reader = locker->acquire(r, reader_opts);
	ASSERT_TRUE(reader) << reader.error();
	listed = zk_cli("ls " + folder_of(r));
	EXPECT_EQ(nodes_named(listed, "__READ__").size(), 1u) << listed;
	EXPECT_TRUE(nodes_named(listed, "lock-").empty() && nodes_named(listed, "__WRIT__").empty()) << listed;
	ASSERT_TRUE(reader->release());

	auto s = r + "-semaphore";
	auto permit_opts = opts(10s);
	permit_opts.limit = 3;
	auto permit = locker->acquire(s, permit_opts);
	ASSERT_TRUE(permit) << permit.error();
	listed = zk_cli("ls " + folder_of(s) + "/leases");
	EXPECT_EQ(nodes_named(listed, "lease-").size(), 1u) << listed;
	EXPECT_EQ(zk_cli("get " + folder_of(s) + "/leases"), "3");
	EXPECT_EQ(zk_cli("ls " + folder_of(s) + "/locks"), "[]") << "the mutex is left once the lease is taken";
	ASSERT_TRUE(permit->release());
	EXPECT_EQ(zk_cli("ls " + folder_of(s) + "/leases"), "[]");
}

// ---- what a grant costs (issue 38) --------------------------------------------

namespace {

// packets_received -- the requests the server has read from its clients
// ("Received" of the four-letter word srvr: pings and session setups too),
// or -1
long long
packets_received(int port)
{
	auto out = capture("bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(port) +
	                   " && printf srvr >&3 && timeout 2 cat <&3' | sed -n 's/^Received: //p'");
	try {
		return std::stoll(out);
	} catch (...) {
		return -1;
	}
}

// thread_count -- the threads of this process now
long
thread_count()
{
	long n = 0;
	for ([[maybe_unused]] const auto &task : std::filesystem::directory_iterator("/proc/self/task"))
		n++;
	return n;
}

} // namespace

// Uncontended acquire+release pairs (TTL 30 s) on a server of its own (its
// counter counts nobody else's requests), after one pair that opened the
// pooled session: on a new resource each (the folder's create, the multi
// that creates the nodes and tells the token, the delete: 3 requests) and
// on one resource again and again (the folder there, holding only our
// nodes: the multi and the delete, 2).  Each pair once cost 6 on
// a new resource (a create refused ZNONODE, the folder's create, the
// create, an exists for the token, the listing, the delete) and 4 on a
// resource whose folder was there.
TEST(ZookeeperCost, AnUncontendedPairCostsAtMostThreeRequests)
{
	ScriptServer own("zookeeper.sh");
	ASSERT_TRUE(own.start()) << "install ZooKeeper: scripts/install-deps.sh";
	auto client = pglease::connect(url(own.port()), quick());
	ASSERT_TRUE(client) << client.error();
	const std::string base = resource();
	auto pair = [&](const std::string &r) {
		pglease::LeaseOptions o;
		o.ttl = 30s;
		o.auto_renew = false;
		auto lease = (*client)->acquire(r, o);
		ASSERT_TRUE(lease) << lease.error();
		ASSERT_TRUE(lease->release());
	};
	pair(base + "-warm"); // the session, then pooled
	constexpr int pairs = 20;
	for (bool fresh : {true, false}) {
		const long long before = packets_received(own.port());
		ASSERT_GE(before, 0) << "srvr answered no Received count";
		for (int i = 0; i < pairs; i++)
			pair(fresh ? base + "-" + std::to_string(i) : base);
		// less the first srvr: the server counts it too
		const double per_pair = double(packets_received(own.port()) - before - 1) / pairs;
		std::printf("an uncontended acquire+release (TTL 30 s) on %s, mean of %d: %.2f requests\n",
		            fresh ? "a new resource each" : "one resource", pairs, per_pair);
		EXPECT_LE(per_pair, 3.0) << (fresh ? "on new resources" : "on one resource");
	}
}

// A grant starts no thread: the locker's watchdog (one per locker) ends
// unrenewed grants' sessions, where each grant once had a thread of its
// own (a clone and a join per acquire).
TEST_F(ZookeeperLocker, AGrantStartsNoThreadOfItsOwn)
{
	auto r = resource();
	auto warm = locker->acquire(r, opts(30s)); // the session, the renewal and watchdog threads
	ASSERT_TRUE(warm) << warm.error();
	ASSERT_TRUE(warm->release());
	const long idle = thread_count();
	for (int i = 0; i < 3; i++) {
		auto lease = locker->acquire(r + "-" + std::to_string(i), opts(30s));
		ASSERT_TRUE(lease) << lease.error();
		EXPECT_EQ(thread_count(), idle) << "a thread came with grant " << i;
		ASSERT_TRUE(lease->release());
	}
	EXPECT_EQ(thread_count(), idle);
}
