// conformance_test.cpp -- the same behaviours, the same expectations, for
// every provider behind pglease::connect(url), each against its real server.
//
// scripts/test.sh starts the servers and names them in PGLEASE_CONFORMANCE:
//   name|url|stop command|start command|break command   (entries joined by ';')
// The commands are shell commands; in the break command {resource} stands for
// the resource whose grant is to disappear server-side (PostgreSQL
// lease.break, Redis DEL of the key, ZooKeeper deleteall of the resource's
// folder of lock nodes).  memory: is always added and needs no
// server (its "break" is the lock space's own).  Without PGLEASE_CONFORMANCE
// the suite fails and says how to run it.  A capability a provider lacks is
// asserted as documented, never skipped.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "memory/space.hpp"
#include "pglease/pglease.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using pglease::Errc;
using test_support::eventually;
using test_support::in_other_thread;
using test_support::opts;

namespace {

struct Provider {
	std::string name;
	std::string url;
	std::string stop_cmd; // empty: no server (memory)
	std::string start_cmd;
	std::string break_cmd; // {resource} is replaced
};

std::ostream &
operator<<(std::ostream &os, const Provider &p)
{
	return os << p.name;
}

std::vector<std::string>
split(const std::string &s, char sep)
{
	std::vector<std::string> out;
	std::string item;
	std::istringstream in(s);
	while (std::getline(in, item, sep))
		out.push_back(item);
	return out;
}

// Entries of PGLEASE_CONFORMANCE that are not name|url|stop|start|break
// (reported by ConformanceSetup, never dropped silently).
std::vector<std::string> malformed_entries;

std::vector<Provider>
providers_from_env()
{
	std::vector<Provider> out;
	malformed_entries.clear();
	out.push_back({"memory", "memory:conformance", "", "", ""});
	if (const char *env = std::getenv("PGLEASE_CONFORMANCE")) {
		for (const std::string &entry : split(env, ';')) {
			auto f = split(entry, '|');
			if (f.size() == 5)
				out.push_back({f[0], f[1], f[2], f[3], f[4]});
			else
				malformed_entries.push_back(entry);
		}
	}
	return out;
}

int
shell(const std::string &cmd)
{
	return std::system(cmd.c_str());
}

std::string
unique_resource()
{
	const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
	static std::atomic<int> n{0};
	std::string name = info->name();
	for (char &c : name)
		if (c == '/')
			c = '-';
	return "conf/" + name + "/" + std::to_string(n++) + "/" + std::to_string(::getpid());
}

// The capabilities each provider documents (README "Providers").
pglease::Capabilities
documented(const std::string &name)
{
	pglease::Capabilities c;
	if (name == "postgres") {
		c.distributed = c.fencing_token = c.fenced_write = c.fifo_wait = c.ephemeral = c.durable =
		    c.survives_failover = true;
	} else if (name == "memory") {
		c.fencing_token = c.fifo_wait = true;
	} else if (name == "redis") {
		c.distributed = c.fencing_token = true;
	} else if (name == "redlock") {
		c.distributed = c.survives_failover = true;
	} else if (name == "etcd" || name == "zookeeper") {
		c.distributed = c.fencing_token = c.fifo_wait = c.ephemeral = c.durable = c.survives_failover = true;
	}
	return c;
}

class Conformance : public ::testing::TestWithParam<Provider> {
protected:
	void SetUp() override
	{
		auto r = pglease::connect(GetParam().url);
		ASSERT_TRUE(r) << GetParam().url << ": " << r.error();
		locker = std::move(*r);
	}
	void TearDown() override
	{
		// a test that stopped the server must leave it running
		if (stopped)
			shell(GetParam().start_cmd);
	}
	bool has_server() const { return !GetParam().stop_cmd.empty(); }
	void stop_server()
	{
		stopped = true;
		ASSERT_EQ(shell(GetParam().stop_cmd), 0) << GetParam().stop_cmd;
	}
	void start_server()
	{
		ASSERT_EQ(shell(GetParam().start_cmd), 0) << GetParam().start_cmd;
		stopped = false;
	}
	// break_grant -- make the grant of resource disappear server-side
	void break_grant(const std::string &resource)
	{
		if (!has_server()) {
			auto space = pglease::detail::memory::lock_space(GetParam().url.substr(7));
			ASSERT_TRUE(space->break_grant(resource));
			return;
		}
		std::string cmd = GetParam().break_cmd;
		ASSERT_NE(cmd.find("{resource}"), std::string::npos) << cmd;
		for (auto at = cmd.find("{resource}"); at != std::string::npos; at = cmd.find("{resource}", at))
			cmd.replace(at, 10, resource);
		ASSERT_EQ(shell(cmd), 0) << cmd;
	}
	bool tokens() const { return locker->capabilities().fencing_token; }

	std::unique_ptr<pglease::Locker> locker;
	bool stopped = false;
};

TEST_P(Conformance, CapabilitiesAreAsDocumented)
{
	auto c = locker->capabilities();
	auto d = documented(GetParam().name);
	EXPECT_EQ(c.distributed, d.distributed);
	EXPECT_EQ(c.fencing_token, d.fencing_token);
	EXPECT_EQ(c.fenced_write, d.fenced_write);
	EXPECT_EQ(c.fifo_wait, d.fifo_wait);
	EXPECT_EQ(c.ephemeral, d.ephemeral);
	EXPECT_EQ(c.durable, d.durable);
	EXPECT_EQ(c.survives_failover, d.survives_failover);
	EXPECT_FALSE(locker->provider().empty());
}

TEST_P(Conformance, ContendedThenReleasedThenHigherToken)
{
	auto r = unique_resource();
	auto first = locker->acquire(r, opts(10s));
	ASSERT_TRUE(first) << first.error();
	auto contender = in_other_thread([&] { return locker->try_acquire(r, opts(10s)); });
	ASSERT_FALSE(contender);
	EXPECT_EQ(contender.error().code, Errc::timeout) << contender.error();
	auto first_token = first->token();
	ASSERT_TRUE(first->release());
	auto second = in_other_thread([&] { return locker->try_acquire(r, opts(10s)); });
	ASSERT_TRUE(second) << second.error();
	if (tokens()) {
		EXPECT_GT(second->token(), first_token);
	} else {
		EXPECT_EQ(second->token(), 0) << "a provider without fencing tokens hands out token 0";
	}
}

TEST_P(Conformance, ExpiredGrantIsTakenOverWhenNotRenewed)
{
	auto r = unique_resource();
	auto o = opts(800ms);
	o.auto_renew = false;
	auto first = locker->acquire(r, o);
	ASSERT_TRUE(first) << first.error();
	std::this_thread::sleep_for(1100ms);
	EXPECT_FALSE(first->valid());
	// the server ends the grant on its own clock: at once for PostgreSQL, Redis
	// and memory; etcd rounds a lease up to whole seconds and reaps expired
	// ones every 500 ms, so the takeover may wait that long
	auto start = std::chrono::steady_clock::now();
	auto second = in_other_thread([&] { return locker->acquire(r, opts(10s, 2s)); });
	ASSERT_TRUE(second) << second.error();
	EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms) << "taken over too late";
	if (tokens()) {
		EXPECT_GT(second->token(), first->token());
	}
}

TEST_P(Conformance, AutoRenewKeepsTheLeasePastItsTtl)
{
	auto r = unique_resource();
	auto lease = locker->acquire(r, opts(900ms));
	ASSERT_TRUE(lease) << lease.error();
	std::this_thread::sleep_for(2200ms);
	EXPECT_TRUE(lease->valid());
	auto contender = in_other_thread([&] { return locker->try_acquire(r, opts(10s)); });
	ASSERT_FALSE(contender) << "granted twice";
	EXPECT_EQ(contender.error().code, Errc::timeout);
}

TEST_P(Conformance, GrantRemovedServerSideFiresOnLostOnce)
{
	auto r = unique_resource();
	auto lease = locker->acquire(r, opts(1500ms));
	ASSERT_TRUE(lease) << lease.error();
	std::atomic<int> calls{0};
	lease->on_lost([&](const pglease::Error &) { calls++; });
	auto cancel = lease->cancel_token();
	break_grant(r);
	EXPECT_TRUE(eventually([&] { return calls.load() > 0; }, 3s)) << "on_lost not called";
	std::this_thread::sleep_for(600ms);
	EXPECT_EQ(calls.load(), 1);
	EXPECT_TRUE(cancel.cancelled());
	EXPECT_FALSE(lease->valid());
}

TEST_P(Conformance, ServerStoppedFiresOnLostOnceByTheLocalDeadline)
{
	if (!has_server()) {
		EXPECT_FALSE(locker->capabilities().distributed) << "only memory: runs without a server";
		return;
	}
	auto r = unique_resource();
	auto lease = locker->acquire(r, opts(1500ms));
	ASSERT_TRUE(lease) << lease.error();
	std::atomic<int> calls{0};
	lease->on_lost([&](const pglease::Error &) { calls++; });
	stop_server();
	EXPECT_TRUE(eventually([&] { return calls.load() > 0; }, 3s)) << "on_lost not called";
	EXPECT_FALSE(lease->valid());
	start_server();
	std::this_thread::sleep_for(300ms);
	EXPECT_EQ(calls.load(), 1);
}

TEST_P(Conformance, WaitTimesOutWithinWaitPlusGrace)
{
	auto r = unique_resource();
	auto holder = locker->acquire(r, opts(10s));
	ASSERT_TRUE(holder) << holder.error();
	auto start = std::chrono::steady_clock::now();
	auto waiter = in_other_thread([&] { return locker->acquire(r, opts(10s, 500ms)); });
	auto took = std::chrono::steady_clock::now() - start;
	ASSERT_FALSE(waiter);
	EXPECT_EQ(waiter.error().code, Errc::timeout) << waiter.error();
	EXPECT_GE(took, 500ms);
	EXPECT_LT(took, 1500ms);
}

TEST_P(Conformance, UnavailableServerAnswersPromptlyThenRecovers)
{
	if (!has_server()) {
		EXPECT_FALSE(locker->capabilities().distributed) << "only memory: runs without a server";
		return;
	}
	stop_server();
	auto start = std::chrono::steady_clock::now();
	auto down = locker->try_acquire(unique_resource(), opts(5s));
	EXPECT_LT(std::chrono::steady_clock::now() - start, 6s);
	ASSERT_FALSE(down);
	EXPECT_EQ(down.error().code, Errc::unavailable) << down.error();
	EXPECT_TRUE(pglease::is_retryable(down.error()));
	start_server();
	auto r = unique_resource();
	EXPECT_TRUE(eventually([&] { return static_cast<bool>(locker->try_acquire(r, opts(5s))); }, 15s))
	    << "no grant within 15 s after the server came back";
}

TEST_P(Conformance, NestedAcquireIsRefused)
{
	auto outer = locker->acquire(unique_resource(), opts(10s));
	ASSERT_TRUE(outer) << outer.error();
	auto inner = locker->acquire(unique_resource(), opts(10s, 100ms));
	ASSERT_FALSE(inner);
	EXPECT_EQ(inner.error().code, Errc::nested);
}

TEST_P(Conformance, InvalidArgumentsAreRefused)
{
	auto empty = locker->acquire("", opts(10s));
	ASSERT_FALSE(empty);
	EXPECT_EQ(empty.error().code, Errc::invalid_argument);
	EXPECT_FALSE(pglease::is_retryable(empty.error()));
	auto zero_ttl = locker->acquire(unique_resource(), opts(0ms));
	ASSERT_FALSE(zero_ttl);
	EXPECT_EQ(zero_ttl.error().code, Errc::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Providers, Conformance, ::testing::ValuesIn(providers_from_env()),
                         [](const ::testing::TestParamInfo<Provider> &info) { return info.param.name; });

TEST(ConformanceSetup, EveryServerProviderIsNamed)
{
	const char *env = std::getenv("PGLEASE_CONFORMANCE");
	ASSERT_NE(env, nullptr) << "PGLEASE_CONFORMANCE is not set: run this suite through 'make test' "
	                           "(scripts/test.sh starts PostgreSQL, Redis and ZooKeeper and names them)";
	std::vector<std::string> names;
	for (const auto &p : providers_from_env())
		names.push_back(p.name);
	for (const char *want : {"postgres", "redis", "redlock", "etcd", "zookeeper"})
		EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want << " missing";
	for (const auto &entry : malformed_entries)
		ADD_FAILURE() << "malformed PGLEASE_CONFORMANCE entry (want name|url|stop|start|break): " << entry;
}

TEST(Connect, MalformedAndUnknownUrlsAreInvalidArguments)
{
	for (const char *url : {"foo://x", "http://localhost:1", "redis:/x", "://x", "nonsense"}) {
		auto r = pglease::connect(url);
		ASSERT_FALSE(r) << url;
		EXPECT_EQ(r.error().code, Errc::invalid_argument) << url << ": " << r.error();
		EXPECT_FALSE(r.error().message.empty());
	}
}

TEST(Connect, PostgresUrlsAndConninfoGiveTheClient)
{
	for (const char *url : {"postgresql://localhost/db", "dbname=x host=/tmp", ""}) {
		auto r = pglease::connect(url);
		ASSERT_TRUE(r) << url << ": " << r.error();
		EXPECT_EQ((*r)->provider(), "PostgreSQL");
		EXPECT_NE(dynamic_cast<pglease::Client *>(r->get()), nullptr);
	}
}

TEST(Connect, MemorySpacesAreSharedByNameAndSeparateOtherwise)
{
	auto a = pglease::connect("memory:");
	auto b = pglease::connect("memory:");
	auto other = pglease::connect("memory:other");
	ASSERT_TRUE(a && b && other);
	auto held = (*a)->acquire("conf/memory-shared", opts(10s));
	ASSERT_TRUE(held) << held.error();
	auto same = in_other_thread([&] { return (*b)->try_acquire("conf/memory-shared", opts(10s)); });
	EXPECT_FALSE(same) << "memory: lockers of one process share one space";
	auto separate = in_other_thread([&] { return (*other)->try_acquire("conf/memory-shared", opts(10s)); });
	EXPECT_TRUE(separate) << "memory:other is a space of its own";
	EXPECT_FALSE((*a)->capabilities().distributed);
}

} // namespace
