// redlock_test.cpp -- how the redlock:// provider asks its nodes (issue 38):
// every node at once from the calling thread, with no thread started per
// call, and a round that ends when a majority said yes, so a node that stops
// answering slows no call.  Three redis-servers of the test's own
// (scripts/redis.sh, support.hpp's ScriptServer: loopback ports drawn free),
// reached through pglease::connect.  Never mocked, never skipped.
//
// Threads are counted by interposing pthread_create: the executable's
// definition comes first in the dynamic symbol lookup, so std::thread
// (libstdc++ calls pthread_create) counts here before creating the thread
// with the C library's.
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iostream>
#include <memory>
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

std::atomic<long> threads_created{0};

} // namespace

extern "C" int
pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg) noexcept
{
	using Create = int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	static const auto real = reinterpret_cast<Create>(::dlsym(RTLD_NEXT, "pthread_create"));
	threads_created++;
	return real(thread, attr, start, arg);
}

namespace {

// Node -- a redis-server of the test's, and one command behind the locker's back
class Node : public ScriptServer {
public:
	Node() : ScriptServer("redis.sh") { started_ = start(); }
	const ::testing::AssertionResult &started() const { return started_; }

	bool exists(const std::string &key)
	{
		auto c = pglease::detail::redis::Connection::open({"127.0.0.1", port()}, {500ms, 500ms});
		if (!c)
			return false;
		auto r = c->command({"EXISTS", key});
		return r && r->is_integer() && r->integer == 1;
	}

private:
	::testing::AssertionResult started_ = ::testing::AssertionFailure();
};

// stopped -- the process is stopped (state T in /proc/PID/stat): a SIGSTOP
// takes effect as each thread leaves the kernel
bool
stopped(pid_t pid)
{
	std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
	std::string line;
	std::getline(stat, line);
	auto paren = line.rfind(')');
	return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'T';
}

class RedlockRounds : public ::testing::Test {
protected:
	void SetUp() override
	{
		std::string url = "redlock://";
		for (int i = 0; i < 3; i++) {
			nodes.push_back(std::make_unique<Node>());
			ASSERT_TRUE(nodes.back()->started())
			    << "node " << i + 1 << ": " << nodes.back()->started().message()
			    << " (install redis-server: scripts/install-deps.sh)";
			url += (i ? "," : "") + std::string("127.0.0.1:") + std::to_string(nodes.back()->port());
		}
		auto r = pglease::connect(url, quick_backoff());
		ASSERT_TRUE(r) << r.error();
		locker = std::move(*r);
	}

	// pair -- one acquire and release, true when both succeeded
	bool pair(const std::string &resource)
	{
		auto o = opts(10s); // per-node timeout min(50 ms, ttl/10): 50 ms
		o.auto_renew = false;
		auto lease = locker->acquire(resource, o);
		EXPECT_TRUE(lease) << lease.error();
		if (!lease)
			return false;
		auto released = lease->release();
		EXPECT_TRUE(released) << released.error();
		return static_cast<bool>(released);
	}

	std::vector<std::unique_ptr<Node>> nodes;
	std::unique_ptr<pglease::Locker> locker;
};

} // namespace

TEST_F(RedlockRounds, no_thread_is_started_to_acquire_renew_or_release)
{
	const long before_sanity = threads_created.load();
	std::thread([] {}).join();
	ASSERT_EQ(threads_created.load(), before_sanity + 1) << "the pthread_create interposer counts nothing";

	const std::string r = test_resource("redlock-test/threads/");
	ASSERT_TRUE(pair(r)); // the first connections
	const long before = threads_created.load();
	const int pairs = 50;
	for (int i = 0; i < pairs; i++)
		ASSERT_TRUE(pair(r));
	auto o = opts(10s);
	o.auto_renew = false;
	auto lease = locker->acquire(r, o);
	ASSERT_TRUE(lease) << lease.error();
	EXPECT_TRUE(lease->renew());
	EXPECT_TRUE(lease->release());
	EXPECT_EQ(threads_created.load() - before, 0)
	    << "threads started by " << pairs << " acquire/release pairs, a renew and a release";
}

TEST_F(RedlockRounds, a_frozen_node_slows_no_call_a_majority_answers_first)
{
	const std::string r = test_resource("redlock-test/frozen/");
	ASSERT_TRUE(pair(r)); // the first connections
	const pid_t frozen = nodes[2]->pid();
	ASSERT_GT(frozen, 0);
	ASSERT_EQ(::kill(frozen, SIGSTOP), 0);
	struct Thaw {
		pid_t pid;
		~Thaw() { (void)::kill(pid, SIGCONT); }
	} thaw{frozen};
	ASSERT_TRUE(eventually([&] { return stopped(frozen); }, 2s)) << "node 3 did not stop";

	// for a second: the first rounds leave node 3's replies owed, one finds
	// them past the timeout and closes the link, the backoff (50-300 ms)
	// ends and a new connection to the frozen node is tried again
	std::vector<long long> took;
	const auto until = Clock::now() + 1s;
	while (Clock::now() < until) {
		auto t0 = Clock::now();
		ASSERT_TRUE(pair(r)) << "pair " << took.size() + 1 << " with node 3 frozen";
		took.push_back(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count());
		std::this_thread::sleep_for(5ms);
	}
	std::sort(took.begin(), took.end());
	const long long node_timeout_us = 50'000;
	const auto slow =
	    std::count_if(took.begin(), took.end(), [&](long long us) { return us >= node_timeout_us; });
	std::cout << took.size() << " pairs with 1 of 3 nodes frozen: median " << took[took.size() / 2]
	          << " us, max " << took.back() << " us, " << slow << " took the per-node timeout ("
	          << node_timeout_us << " us) or more\n";
	// Waiting for the frozen node, the first pair takes the timeout, and so
	// does one after each backoff (50, 100, 200, 300 ms...): 4 or more in a
	// second.  One is allowed for a stall of this thread on a loaded machine
	// (the test runs beside others: pairs of 20-40 ms were seen at a load of 9
	// on 2 cores, none of them waiting for node 3).
	EXPECT_LE(slow, 1)
	    << "pairs waited for the frozen node: the round did not end when the majority answered";

	// thawed, node 3 answers again: it holds the next grant (its old replies,
	// if any came, were not taken for the new ones)
	(void)::kill(frozen, SIGCONT);
	auto o = opts(10s);
	o.auto_renew = false;
	const std::string key = "pglease:lock:" + r;
	bool on_all = eventually(
	    [&] {
		    auto lease = locker->acquire(r, o);
		    bool all = lease && nodes[0]->exists(key) && nodes[1]->exists(key) && nodes[2]->exists(key);
		    if (lease) {
			    EXPECT_TRUE(lease->release());
		    }
		    return all;
	    },
	    3s);
	EXPECT_TRUE(on_all) << "node 3 never held a grant again after it was thawed";
}
