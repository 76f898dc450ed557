// election_conformance_test.cpp -- the same election behaviours for every
// provider behind pglease::connect(url), each against its real server (the
// providers of conformance.hpp; this file is part of conformance_test).
//
// The cases that kill (SIGKILL) or freeze (SIGSTOP) a leader run it as a
// process of its own: tests/client/election_worker.cpp, named by
// $PGLEASE_ELECTION_WORKER (tests/providers/conformance.sh sets it).  A
// provider without elections (Redlock) is asserted to refuse every call.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "conformance.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using namespace conformance;
using pglease::Errc;
using pglease::LeaderView;
using test_support::eventually;
using test_support::in_other_thread;
using test_support::opts;

namespace {

using Clock = std::chrono::steady_clock;

// election_worker once URL ELECTION VALUE TTL_MS
Worker
election_worker(const std::string &url, const std::string &election, const std::string &value, long ttl_ms)
{
	return Worker{"PGLEASE_ELECTION_WORKER", {"once", url, election, value, std::to_string(ttl_ms)}};
}

// the term of an "elected TERM" line, or 0
long long
elected_term(const std::string &line)
{
	return line.rfind("elected ", 0) == 0 ? std::atoll(line.c_str() + 8) : 0;
}

class Election : public Conformance {
protected:
	bool elections() const { return locker->capabilities().election; }
	std::string election() { return unique_resource(); }
};

TEST_P(Election, ProviderWithoutElectionsRefusesEveryCall)
{
	if (elections())
		return; // every other case covers a provider with elections
	EXPECT_EQ(GetParam().name, "redlock") << "only Redlock is documented without elections";
	auto c = locker->campaign("e", "v", opts(10s));
	ASSERT_FALSE(c);
	EXPECT_EQ(c.error().code, Errc::invalid_argument) << c.error();
	auto l = locker->leader("e");
	ASSERT_FALSE(l);
	EXPECT_EQ(l.error().code, Errc::invalid_argument);
	auto o = locker->observe("e", {}, 100ms);
	ASSERT_FALSE(o);
	EXPECT_EQ(o.error().code, Errc::invalid_argument);
}

TEST_P(Election, NoLeaderThenCampaignShowsValueTermAndSince)
{
	if (!elections())
		return;
	auto e = election();
	auto before = locker->leader(e);
	ASSERT_TRUE(before) << before.error();
	EXPECT_FALSE(before->has_leader);
	auto lead = locker->campaign(e, "host-a:8080", opts(10s));
	ASSERT_TRUE(lead) << lead.error();
	EXPECT_GT(lead->term(), 0);
	EXPECT_EQ(lead->value(), "host-a:8080");
	EXPECT_EQ(lead->election(), e);
	EXPECT_TRUE(lead->valid());
	auto now = locker->leader(e);
	ASSERT_TRUE(now) << now.error();
	EXPECT_TRUE(now->has_leader);
	EXPECT_EQ(now->value, "host-a:8080");
	EXPECT_EQ(now->term, lead->term());
	if (GetParam().name == "etcd") {
		EXPECT_EQ(now->since, std::chrono::system_clock::time_point{}) << "etcd records no time";
	} else {
		auto off = std::chrono::system_clock::now() - now->since;
		EXPECT_LT(std::chrono::abs(off), 60s) << "since is not the term's start";
	}
}

TEST_P(Election, ResignHandsOverToTheWaitingCandidateWithAHigherTerm)
{
	if (!elections())
		return;
	auto e = election();
	auto a = locker->campaign(e, "a", opts(10s));
	ASSERT_TRUE(a) << a.error();
	auto b = std::async(std::launch::async, [&] { return locker->campaign(e, "b", opts(10s, 10s)); });
	EXPECT_EQ(b.wait_for(500ms), std::future_status::timeout) << "two leaders at once";
	const auto a_term = a->term();
	ASSERT_TRUE(a->resign());
	auto b_lead = b.get();
	ASSERT_TRUE(b_lead) << b_lead.error();
	EXPECT_GT(b_lead->term(), a_term);
	auto now = locker->leader(e);
	ASSERT_TRUE(now) << now.error();
	EXPECT_EQ(now->value, "b");
	EXPECT_EQ(now->term, b_lead->term());
}

TEST_P(Election, ProclaimPublishesWhileLeadingAndIsRefusedOnceDeposed)
{
	if (!elections())
		return;
	auto e = election();
	auto o = opts(1s);
	o.auto_renew = false;
	auto a = locker->campaign(e, "a1", o);
	ASSERT_TRUE(a) << a.error();
	ASSERT_TRUE(a->proclaim("a2"));
	EXPECT_EQ(a->value(), "a2");
	auto now = locker->leader(e);
	ASSERT_TRUE(now) << now.error();
	EXPECT_EQ(now->value, "a2");
	EXPECT_EQ(now->term, a->term());
	// deposed: the grant expires and another candidate takes the election
	std::this_thread::sleep_for(1100ms);
	auto b = in_other_thread([&] { return locker->campaign(e, "b", opts(10s, 5s)); });
	ASSERT_TRUE(b) << b.error();
	std::atomic<int> lost{0};
	a->on_lost([&](const pglease::Error &) { lost++; });
	auto p = a->proclaim("a3");
	ASSERT_FALSE(p) << "a deposed leader proclaimed";
	EXPECT_EQ(p.error().code, Errc::lost) << p.error();
	auto after = locker->leader(e);
	ASSERT_TRUE(after) << after.error();
	EXPECT_EQ(after->value, "b") << "the deposed leader's proclaim changed the election";
	EXPECT_EQ(after->term, b->term());
	EXPECT_EQ(lost.load(), 1);
}

TEST_P(Election, ProclaimIsGuardedByTheTermServerSideNotByALocalFlag)
{
	if (!elections())
		return;
	auto e = election();
	auto a = locker->campaign(e, "a", opts(1500ms));
	ASSERT_TRUE(a) << a.error();
	break_grant(e); // the server ends the term; the guard does not know yet
	auto p = a->proclaim("a-again");
	ASSERT_FALSE(p) << "proclaimed on a term the server had ended";
	EXPECT_EQ(p.error().code, Errc::lost) << p.error();
	auto now = locker->leader(e);
	ASSERT_TRUE(now) << now.error();
	EXPECT_FALSE(now->has_leader && now->value == "a-again");
}

// every change, in order: elected, proclaimed, resigned (no leader), a new
// leader, and an expiry with nobody taking over (no leader again)
TEST_P(Election, ObserveReportsEveryChangeInOrderIncludingNoLeader)
{
	if (!elections())
		return;
	auto e = election();
	std::mutex mu;
	std::vector<LeaderView> seen;
	std::atomic<bool> stop{false};
	std::thread follower([&] {
		auto other = pglease::connect(GetParam().url);
		ASSERT_TRUE(other);
		LeaderView v;
		while (!stop) {
			auto next = (*other)->observe(e, v, 300ms);
			if (!next) {
				EXPECT_EQ(next.error().code, Errc::timeout) << next.error();
				continue;
			}
			EXPECT_GE(next->term, v.term) << "observe went back to a lower term";
			v = *next;
			std::lock_guard<std::mutex> lk(mu);
			seen.push_back(v);
		}
	});
	auto count = [&] {
		std::lock_guard<std::mutex> lk(mu);
		return seen.size();
	};
	auto a = locker->campaign(e, "a1", opts(10s));
	ASSERT_TRUE(a) << a.error();
	EXPECT_TRUE(eventually([&] { return count() >= 1; }, 3s));
	ASSERT_TRUE(a->proclaim("a2"));
	EXPECT_TRUE(eventually([&] { return count() >= 2; }, 3s));
	const auto a_term = a->term();
	ASSERT_TRUE(a->resign());
	EXPECT_TRUE(eventually([&] { return count() >= 3; }, 3s));
	auto bo = opts(1s);
	bo.auto_renew = false;
	auto b = locker->campaign(e, "b", bo);
	ASSERT_TRUE(b) << b.error();
	EXPECT_TRUE(eventually([&] { return count() >= 4; }, 3s));
	EXPECT_TRUE(eventually([&] { return count() >= 5; }, 1s + expiry_slack() + 1s)) << "expiry not reported";
	stop = true;
	follower.join();

	std::lock_guard<std::mutex> lk(mu);
	ASSERT_EQ(seen.size(), 5u);
	EXPECT_TRUE(seen[0].has_leader && seen[0].value == "a1" && seen[0].term == a_term);
	EXPECT_TRUE(seen[1].has_leader && seen[1].value == "a2" && seen[1].term == a_term);
	EXPECT_FALSE(seen[2].has_leader);
	EXPECT_GE(seen[2].term, a_term) << "no leader forgot the term that ended";
	EXPECT_TRUE(seen[3].has_leader && seen[3].value == "b" && seen[3].term == b->term());
	EXPECT_GT(seen[3].term, a_term);
	EXPECT_FALSE(seen[4].has_leader);
	EXPECT_GE(seen[4].term, b->term());
}

TEST_P(Election, ObserverIsToldWithinABoundAfterTheChange)
{
	if (!elections())
		return;
	auto e = election();
	auto other = pglease::connect(GetParam().url);
	ASSERT_TRUE(other) << other.error();
	auto told = std::async(std::launch::async, [&] {
		auto v = (*other)->observe(e, {}, 10s);
		return std::make_pair(std::move(v), Clock::now());
	});
	std::this_thread::sleep_for(500ms); // the observer is asleep in its observe
	auto a = locker->campaign(e, "a", opts(10s));
	auto elected_at = Clock::now();
	ASSERT_TRUE(a) << a.error();
	auto [view, at] = told.get();
	ASSERT_TRUE(view) << view.error();
	EXPECT_TRUE(view->has_leader);
	EXPECT_EQ(view->term, a->term());
	EXPECT_LT(at - elected_at, 1s) << "the observer learned the change too late";
}

TEST_P(Election, ObserveTimesOutWhenNothingChangesAndNeverGoesBackToALowerTerm)
{
	if (!elections())
		return;
	auto e = election();
	auto a = locker->campaign(e, "a", opts(10s));
	ASSERT_TRUE(a) << a.error();
	auto now = locker->leader(e);
	ASSERT_TRUE(now) << now.error();
	auto start = Clock::now();
	auto same = locker->observe(e, *now, 600ms);
	ASSERT_FALSE(same);
	EXPECT_EQ(same.error().code, Errc::timeout) << same.error();
	EXPECT_GE(Clock::now() - start, 550ms);
	EXPECT_LT(Clock::now() - start, 3s);
	LeaderView later = *now; // a follower that already saw a later term
	later.term = now->term + 1000000;
	later.value = "someone else";
	auto lower = locker->observe(e, later, 600ms);
	ASSERT_FALSE(lower) << "reported term " << lower->term << " below the term seen";
	EXPECT_EQ(lower.error().code, Errc::timeout);
}

TEST_P(Election, KilledLeaderIsReplacedAfterItsTtl)
{
	if (!elections() || !has_server())
		return; // memory: a process's elections end with it
	auto e = election();
	auto w = election_worker(GetParam().url, e, "killed", 2000);
	auto a_term = elected_term(w.line());
	ASSERT_GT(a_term, 0) << "the worker was not elected";
	auto b = std::async(std::launch::async, [&] { return locker->campaign(e, "b", opts(10s, 15s)); });
	EXPECT_EQ(b.wait_for(300ms), std::future_status::timeout) << "elected beside a live leader";
	auto killed = Clock::now();
	w.signal(SIGKILL);
	auto b_lead = b.get();
	ASSERT_TRUE(b_lead) << b_lead.error();
	EXPECT_GT(b_lead->term(), a_term);
	EXPECT_LT(Clock::now() - killed, 2000ms + expiry_slack()) << "replaced too late";
}

TEST_P(Election, FrozenLeaderLosesItsTermAndItsProclaimAndFencedWriteAreRefused)
{
	if (!elections() || !has_server())
		return; // memory: a frozen process freezes its elections too
	auto e = election();
	auto w = election_worker(GetParam().url, e, "frozen", 1500);
	auto a_term = elected_term(w.line());
	ASSERT_GT(a_term, 0) << "the worker was not elected";
	w.signal(SIGSTOP);
	auto b = locker->campaign(e, "b", opts(10s, 1500ms + expiry_slack() + 2s));
	ASSERT_TRUE(b) << b.error();
	EXPECT_GT(b->term(), a_term);
	w.signal(SIGCONT);
	EXPECT_EQ(w.line(), "lost");
	EXPECT_EQ(w.line(), "proclaim lost") << "the deposed leader's proclaim was not refused as lost";
	auto now = locker->leader(e);
	ASSERT_TRUE(now) << now.error();
	EXPECT_EQ(now->value, "b");
	if (GetParam().name == "postgres") {
		EXPECT_NE(psql("SELECT lease.fence('" + e + "', " + std::to_string(a_term) + ")"), 0)
		    << "a write fenced with the old term was accepted";
		EXPECT_EQ(psql("SELECT lease.fence('" + e + "', " + std::to_string(b->term()) + ")"), 0)
		    << "the current term's fenced write was refused";
	}
	w.reap();
}

TEST_P(Election, ArgumentsAreCheckedBeforeAnyIo)
{
	if (!elections())
		return;
	auto refused = [](const auto &r) { return !r && r.error().code == Errc::invalid_argument; };
	EXPECT_TRUE(refused(locker->campaign("", "v", opts(10s))));
	EXPECT_TRUE(refused(locker->campaign(std::string("e\0x", 3), "v", opts(10s))));
	EXPECT_TRUE(refused(locker->campaign(election(), std::string("v\0x", 3), opts(10s))));
	EXPECT_TRUE(refused(locker->campaign(election(), "\xff\xfe", opts(10s))));
	EXPECT_TRUE(
	    refused(locker->campaign(election(), std::string(pglease::max_value_bytes + 1, 'v'), opts(10s))));
	EXPECT_TRUE(refused(locker->campaign(election(), "v", opts(0ms))));
	EXPECT_TRUE(refused(locker->leader("")));
	EXPECT_TRUE(refused(locker->leader(std::string(pglease::max_resource_bytes + 1, 'e'))));
	EXPECT_TRUE(refused(locker->observe("", {}, 1s)));
	EXPECT_TRUE(refused(locker->observe(election(), {}, -1ms)));
	// the longest value is carried unchanged, multi-byte UTF-8 included
	std::string longest(pglease::max_value_bytes - 2, 'v');
	longest += "\xc3\xa9"; // é
	auto e = election();
	auto a = locker->campaign(e, longest, opts(10s));
	ASSERT_TRUE(a) << a.error();
	auto now = locker->leader(e);
	ASSERT_TRUE(now) << now.error();
	EXPECT_EQ(now->value, longest);
	auto p = a->proclaim(std::string(pglease::max_value_bytes + 1, 'w'));
	ASSERT_FALSE(p);
	EXPECT_EQ(p.error().code, Errc::invalid_argument);
	EXPECT_TRUE(a->valid()) << "a refused proclaim ended the leadership";
}

TEST_P(Election, CampaignWhileHoldingALeaseIsNested)
{
	if (!elections())
		return;
	auto held = locker->acquire(unique_resource(), opts(10s));
	ASSERT_TRUE(held) << held.error();
	auto c = locker->campaign(election(), "v", opts(10s, 1s));
	ASSERT_FALSE(c);
	EXPECT_EQ(c.error().code, Errc::nested) << c.error();
}

TEST_P(Election, ObserverThreadReportsTheStartAndEachChange)
{
	if (!elections())
		return;
	auto e = election();
	std::mutex mu;
	std::vector<LeaderView> views;
	auto observer = pglease::ElectionObserver::start(*locker, e, [&](const LeaderView &v) {
		std::lock_guard<std::mutex> lk(mu);
		views.push_back(v);
	});
	ASSERT_TRUE(observer) << observer.error();
	auto count = [&] {
		std::lock_guard<std::mutex> lk(mu);
		return views.size();
	};
	EXPECT_TRUE(eventually([&] { return count() >= 1; }, 3s));
	{
		auto a = in_other_thread([&] { return locker->campaign(e, "a", opts(10s)); });
		ASSERT_TRUE(a) << a.error();
		EXPECT_TRUE(eventually([&] { return count() >= 2; }, 3s));
	} // resigned
	EXPECT_TRUE(eventually([&] { return count() >= 3; }, 3s));
	observer->reset();
	std::lock_guard<std::mutex> lk(mu);
	ASSERT_EQ(views.size(), 3u);
	EXPECT_FALSE(views[0].has_leader);
	EXPECT_TRUE(views[1].has_leader && views[1].value == "a");
	EXPECT_FALSE(views[2].has_leader);
}

INSTANTIATE_TEST_SUITE_P(Providers, Election, ::testing::ValuesIn(providers_from_env()),
                         [](const auto &info) { return info.param.name; });

} // namespace
