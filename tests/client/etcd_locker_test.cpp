// etcd_locker_test.cpp -- the etcd:// locker, reached only through
// pglease::connect (so every test also shows that linking pglease::etcd
// registers it), against real etcd members started with scripts/etcd.sh:
// one member on 56500 (peer 56501) for most tests, a 3-member cluster on
// 56502/56504/56506 (peers +1) for the failover test, nothing on 56508 (a
// dead endpoint).  Server-side changes go through curl to the JSON gateway.
// Never mocked, never skipped.
#include <stdio.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pglease/pglease.hpp"
#include "support.hpp"

using pglease::Errc;
using Json = nlohmann::json;
using namespace test_support;

namespace {

constexpr int single_port = 56500;
constexpr int cluster_ports[] = {56502, 56504, 56506};
constexpr int dead_port = 56508;

std::string
b64(const std::string &s)
{
	return capture("printf '%s' '" + s + "' | base64 -w0");
}

// gateway -- POST a JSON body to a member's gateway with curl, its reply
Json
gateway(int port, const std::string &path, const Json &body)
{
	std::string out =
	    capture("curl -s -m 5 http://127.0.0.1:" + std::to_string(port) + path + " -d '" + body.dump() + "'");
	return Json::parse(out, nullptr, false);
}

// The lock keys of a resource: pglease/lock/<resource>/...
Json
prefix_range(const std::string &resource)
{
	std::string prefix = "pglease/lock/" + resource + "/";
	std::string end = prefix;
	end.back() = '0';
	return Json{{"key", b64(prefix)}, {"range_end", b64(end)}};
}

long
lock_keys(int port, const std::string &resource)
{
	Json body = prefix_range(resource);
	body["count_only"] = true;
	Json r = gateway(port, "/v3/kv/range", body);
	if (!r.is_object())
		return -1;
	return r.contains("count") ? std::stol(r["count"].get<std::string>()) : 0;
}

bool
delete_lock_keys(int port, const std::string &resource)
{
	Json r = gateway(port, "/v3/kv/deleterange", prefix_range(resource));
	return r.is_object() && r.contains("deleted");
}

// An etcd member of one test binary (scripts/etcd.sh; CLUSTER: its peers'
// start arguments); killed and removed when the object goes.
class EtcdMember : public ScriptServer {
public:
	EtcdMember(int port, std::string cluster = "") : ScriptServer("etcd.sh", port, std::move(cluster)) {}
};

std::string
url_of(std::initializer_list<int> ports)
{
	std::string url = "etcd://";
	for (int p : ports)
		url += (url.size() > 7 ? "," : "") + std::string("127.0.0.1:") + std::to_string(p);
	return url;
}

std::string
unique_resource()
{
	return test_support::unique_resource("etcd-test/");
}

// One member for the whole binary (started once; a test that stops it starts it again).
class EtcdLocker : public ::testing::Test {
protected:
	static void SetUpTestSuite()
	{
		member = new EtcdMember(single_port);
		ASSERT_TRUE(member->start()) << "scripts/etcd.sh start on port " << single_port << " failed";
	}
	static void TearDownTestSuite()
	{
		delete member;
		member = nullptr;
	}
	void SetUp() override
	{
		auto r = pglease::connect(url_of({single_port}), quick_backoff());
		ASSERT_TRUE(r) << r.error();
		locker = std::move(*r);
	}

	static EtcdMember *member;
	std::unique_ptr<pglease::Locker> locker;
};

EtcdMember *EtcdLocker::member = nullptr;

TEST_F(EtcdLocker, CapabilitiesAreTheStrongBranchWithoutFencedWrites)
{
	auto c = locker->capabilities();
	EXPECT_TRUE(c.distributed && c.fencing_token && c.fifo_wait && c.ephemeral && c.durable &&
	            c.survives_failover);
	EXPECT_FALSE(c.fenced_write);
	EXPECT_EQ(locker->provider(), "etcd");
}

TEST_F(EtcdLocker, ContendedThenReleasedThenHigherToken)
{
	auto r = unique_resource();
	auto first = locker->acquire(r, opts(10s));
	ASSERT_TRUE(first) << first.error();
	EXPECT_GT(first->token(), 0);
	auto contender = in_other_thread([&] { return locker->try_acquire(r, opts(10s)); });
	ASSERT_FALSE(contender) << "granted twice";
	EXPECT_EQ(contender.error().code, Errc::timeout) << contender.error();
	auto t1 = first->token();
	ASSERT_TRUE(first->release());
	auto second = in_other_thread([&] { return locker->try_acquire(r, opts(10s)); });
	ASSERT_TRUE(second) << second.error();
	EXPECT_GT(second->token(), t1) << "the second grant's token is not above the first's";
}

TEST_F(EtcdLocker, WaitersAreGrantedInArrivalOrder)
{
	auto r = unique_resource();
	auto holder = locker->acquire(r, opts(10s));
	ASSERT_TRUE(holder) << holder.error();
	std::mutex mu;
	std::vector<int> order;
	std::vector<std::int64_t> tokens;
	std::vector<std::thread> waiters;
	for (int i = 0; i < 3; i++) {
		waiters.emplace_back([&, i] {
			auto lease = locker->acquire(r, opts(10s, 15s));
			ASSERT_TRUE(lease) << "waiter " << i << ": " << lease.error();
			{
				std::lock_guard<std::mutex> lk(mu);
				order.push_back(i);
				tokens.push_back(lease->token());
			}
			std::this_thread::sleep_for(100ms);
		});
		// queued one after the other: each waiter's key exists before the next starts
		ASSERT_TRUE(eventually([&] { return lock_keys(single_port, r) == i + 2; }, 3s)) << "waiter " << i;
	}
	ASSERT_TRUE(holder->release());
	for (auto &t : waiters)
		t.join();
	ASSERT_EQ(order, (std::vector<int>{0, 1, 2})) << "waiters not granted in arrival order";
	EXPECT_LT(holder->token(), tokens[0]);
	EXPECT_LT(tokens[0], tokens[1]);
	EXPECT_LT(tokens[1], tokens[2]);
}

TEST_F(EtcdLocker, ExpiredGrantIsTakenOverWithAHigherToken)
{
	auto r = unique_resource();
	auto o = opts(1s);
	o.auto_renew = false;
	auto first = locker->acquire(r, o);
	ASSERT_TRUE(first) << first.error();
	// etcd revokes expired leases in a loop every 500 ms: gone within TTL + 0.5 s
	auto start = Clock::now();
	auto second = in_other_thread([&] { return locker->acquire(r, opts(10s, 3s)); });
	ASSERT_TRUE(second) << second.error();
	EXPECT_GE(Clock::now() - start, 900ms) << "granted before the first grant's TTL ran out";
	EXPECT_FALSE(first->valid());
	EXPECT_GT(second->token(), first->token());
}

TEST_F(EtcdLocker, RenewKeepsTheLeasePastItsTtl)
{
	auto r = unique_resource();
	auto lease = locker->acquire(r, opts(1s));
	ASSERT_TRUE(lease) << lease.error();
	std::this_thread::sleep_for(3s);
	EXPECT_TRUE(lease->valid());
	EXPECT_TRUE(lease->renew());
	auto contender = in_other_thread([&] { return locker->try_acquire(r, opts(10s)); });
	ASSERT_FALSE(contender) << "granted twice";
	EXPECT_EQ(contender.error().code, Errc::timeout);
}

TEST_F(EtcdLocker, KeyDeletedServerSideFiresOnLostOnce)
{
	auto r = unique_resource();
	auto lease = locker->acquire(r, opts(1500ms));
	ASSERT_TRUE(lease) << lease.error();
	std::atomic<int> calls{0};
	lease->on_lost([&](const pglease::Error &) { calls++; });
	ASSERT_TRUE(delete_lock_keys(single_port, r));
	EXPECT_TRUE(eventually([&] { return calls.load() > 0; }, 3s)) << "on_lost not called";
	std::this_thread::sleep_for(600ms);
	EXPECT_EQ(calls.load(), 1);
	EXPECT_FALSE(lease->valid());
}

TEST_F(EtcdLocker, TimedOutWaiterLeavesNoKeyBehind)
{
	auto r = unique_resource();
	auto holder = locker->acquire(r, opts(10s));
	ASSERT_TRUE(holder) << holder.error();
	auto start = Clock::now();
	auto waiter = in_other_thread([&] { return locker->acquire(r, opts(10s, 500ms)); });
	auto took = Clock::now() - start;
	ASSERT_FALSE(waiter);
	EXPECT_EQ(waiter.error().code, Errc::timeout) << waiter.error();
	EXPECT_GE(took, 500ms);
	EXPECT_LT(took, 1500ms) << "the wait overran wait + grace";
	EXPECT_EQ(lock_keys(single_port, r), 1) << "the timed-out waiter's key is still there";
}

TEST_F(EtcdLocker, TokenCallsRenewAndReleaseByToken)
{
	auto r = unique_resource();
	auto lease = locker->acquire(r, opts(10s));
	ASSERT_TRUE(lease) << lease.error();
	auto renewed = locker->renew(r, lease->token(), 10s);
	ASSERT_TRUE(renewed) << renewed.error();
	EXPECT_TRUE(*renewed);
	auto wrong = locker->renew(r, lease->token() + 1000000, 10s);
	ASSERT_TRUE(wrong) << wrong.error();
	EXPECT_FALSE(*wrong);
	auto released = locker->release(r, lease->token());
	ASSERT_TRUE(released) << released.error();
	EXPECT_TRUE(*released);
	EXPECT_EQ(lock_keys(single_port, r), 0);
}

TEST_F(EtcdLocker, StoppedServerIsUnavailablePromptlyThenRecovers)
{
	ASSERT_TRUE(member->stop());
	auto start = Clock::now();
	auto down = locker->try_acquire(unique_resource(), opts(5s));
	auto took = Clock::now() - start;
	bool restarted = member->start();
	ASSERT_FALSE(down) << "granted with the server stopped";
	EXPECT_EQ(down.error().code, Errc::unavailable) << down.error();
	EXPECT_LT(took, 1s) << "connection refused took long to report";
	ASSERT_TRUE(restarted);
	auto r = unique_resource();
	EXPECT_TRUE(eventually([&] { return static_cast<bool>(locker->try_acquire(r, opts(5s))); }, 5s))
	    << "no grant within 5 s after the restart";
}

TEST_F(EtcdLocker, DeadEndpointInTheUrlIsFailedOver)
{
	auto r = pglease::connect(url_of({dead_port, single_port}), quick_backoff());
	ASSERT_TRUE(r) << r.error();
	auto lease = (*r)->acquire(unique_resource(), opts(2s));
	ASSERT_TRUE(lease) << lease.error();
	std::this_thread::sleep_for(2500ms);
	EXPECT_TRUE(lease->valid()) << "renewals did not fail over";
}

TEST_F(EtcdLocker, MalformedUrlsAreInvalidArguments)
{
	for (const char *url : {"etcd://", "etcd://host", "etcd://h:1,", "etcd://h:99999", "etcd://h:1/x"}) {
		auto r = pglease::connect(url);
		ASSERT_FALSE(r) << url;
		EXPECT_EQ(r.error().code, Errc::invalid_argument) << url << ": " << r.error();
	}
}

// leader_port -- the client port of the cluster's leader, 0 if none answers
int
leader_port()
{
	for (int p : cluster_ports) {
		Json s = gateway(p, "/v3/maintenance/status", Json::object());
		if (s.is_object() && s.contains("leader") && s["leader"] == s["header"]["member_id"])
			return p;
	}
	return 0;
}

TEST(EtcdCluster, LeaderStoppedWhileHeldAndWaitedNeverTwoHolders)
{
	std::string spec = std::to_string(cluster_ports[0]) + "," + std::to_string(cluster_ports[1]) + "," +
	                   std::to_string(cluster_ports[2]);
	std::vector<std::unique_ptr<EtcdMember>> members;
	std::vector<std::future<bool>> started;
	for (int p : cluster_ports) {
		members.push_back(std::make_unique<EtcdMember>(p, spec));
		started.push_back(std::async(std::launch::async, [m = members.back().get()] { return m->start(); }));
	}
	for (auto &s : started)
		ASSERT_TRUE(s.get()) << "a cluster member did not start";
	auto connected =
	    pglease::connect(url_of({cluster_ports[0], cluster_ports[1], cluster_ports[2]}), quick_backoff());
	ASSERT_TRUE(connected) << connected.error();
	auto &locker = *connected;
	const std::string r = "etcd-test/failover";

	std::atomic<int> holders{0};
	std::atomic<bool> overlap{false};
	auto lease = locker->acquire(r, opts(3s));
	ASSERT_TRUE(lease) << lease.error();
	holders++;
	std::atomic<bool> holder_lost{false};
	lease->on_lost([&](const pglease::Error &) { holder_lost = true; });

	auto waiter = std::async(std::launch::async, [&] {
		auto got = locker->acquire(r, opts(5s, 30s));
		if (got && ++holders > 1)
			overlap = true;
		return got;
	});
	ASSERT_TRUE(eventually([&] { return lock_keys(cluster_ports[0], r) == 2; }, 5s))
	    << "the waiter did not queue";

	int leader = leader_port();
	ASSERT_NE(leader, 0) << "no member says it is the leader";
	for (auto &m : members) {
		if (m->port() == leader) {
			ASSERT_TRUE(m->stop());
		}
	}
	std::this_thread::sleep_for(4s); // beyond the TTL: the lease had to be renewed through the new leader
	EXPECT_TRUE(lease->valid() || holder_lost.load())
	    << "the holder's lease is neither valid nor reported lost";
	EXPECT_TRUE(lease->valid()) << "the holder lost its lease over a leader change (a quorum was left)";
	EXPECT_EQ(waiter.wait_for(0s), std::future_status::timeout)
	    << "the waiter was granted while the lease was held";
	auto t1 = lease->token();
	holders--;
	EXPECT_TRUE(lease->release());
	auto second = waiter.get();
	ASSERT_TRUE(second) << second.error();
	EXPECT_GT(second->token(), t1);
	EXPECT_FALSE(overlap.load()) << "two holders at once";
}

} // namespace
