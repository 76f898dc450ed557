// redis_election_test.cpp -- what the election conformance cases
// (election_conformance_test.cpp) cannot see of the Redis provider: an ACL
// user with exactly the rights docs/election.md gives (the line is read from
// there) campaigns, proclaims, observes by pub/sub and resigns; a user
// lacking any one of the election's additions is refused and nothing is
// written; the value key lives and ends with the grant; a follower's
// observe loop keeps one subscription; a grant broken by
// hand reaches observers by the re-read; a plain lock on an election's name
// is a leader without a value; readers or permits on an election's name are
// "no leader", and a leader's proclaim there is lost; a server restarted
// without its data starts a new epoch whose term 1 followers show; Redlock
// refuses elections.  A real
// redis-server (scripts/redis.sh requirepass=PW) on a free port
// (support.hpp's ScriptServer); never mocked, never skipped.
#include <chrono>
#include <fstream>
#include <future>
#include <iostream>
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
using pglease::LeaderView;
using namespace test_support;

namespace {

using pglease::detail::redis::Connection;
using pglease::detail::redis::Credentials;
using pglease::detail::redis::Reply;

const std::string admin_pw = "Elect1onAdm-3Tz";
const std::string user_pw = "Elect0r-Pw-8Kq";

// words -- LINE split at its spaces (an ACL SETUSER line as argv)
std::vector<std::string>
words(const std::string &line)
{
	std::vector<std::string> out;
	std::istringstream in(line);
	for (std::string w; in >> w;)
		out.push_back(w);
	return out;
}

// documented_acl -- the ACL SETUSER line of docs/election.md's Redis
// section as argv, the password put in; empty when the docs lack it
std::vector<std::string>
documented_acl()
{
	std::ifstream docs(source_path("docs/election.md"));
	bool in_redis = false;
	for (std::string line; std::getline(docs, line);) {
		if (line.rfind("## ", 0) == 0)
			in_redis = line == "## Redis";
		auto at = line.find("ACL SETUSER ");
		if (!in_redis || at == std::string::npos)
			continue;
		auto argv = words(line.substr(at));
		for (auto &w : argv)
			if (w == ">YOUR_PASSWORD")
				w = ">" + user_pw;
		return argv;
	}
	return {};
}

// without -- ARGV less the word WORD (one of the election's additions)
std::vector<std::string>
without(std::vector<std::string> argv, const std::string &word)
{
	std::vector<std::string> out;
	for (auto &w : argv)
		if (w != word)
			out.push_back(std::move(w));
	return out;
}

// One redis-server with requirepass for the whole suite.
class Server : public ScriptServer {
public:
	Server() : ScriptServer("redis.sh", "requirepass=" + admin_pw) { started_ = start(); }
	const ::testing::AssertionResult &started() const { return started_; }
	std::string url(const std::string &user, const std::string &pw) const
	{
		return "redis://" + user + ":" + pw + "@127.0.0.1:" + std::to_string(port());
	}
	// admin -- one command as the default user, on a connection of its own
	pglease::Result<Reply> admin(const std::vector<std::string> &argv)
	{
		auto c = Connection::open({"127.0.0.1", port()}, {1000ms, 1000ms}, 0, Credentials{"", admin_pw});
		if (!c)
			return c.error();
		std::vector<std::string_view> args(argv.begin(), argv.end());
		return c->command(args);
	}
	::testing::AssertionResult acl(std::vector<std::string> setuser, const std::string &name)
	{
		if (setuser.size() < 3)
			return ::testing::AssertionFailure() << "no ACL SETUSER line in docs/election.md's ## Redis";
		setuser[2] = name;
		auto r = admin(setuser);
		if (r && r->is_status() && r->text == "OK")
			return ::testing::AssertionSuccess();
		return ::testing::AssertionFailure() << "ACL SETUSER: " << (r ? r->text : r.error().message);
	}
	// text -- GET key as the admin ("" when absent)
	std::string text(const std::string &key)
	{
		auto r = admin({"GET", key});
		return r && r->is_string() ? r->text : "";
	}
	long long pttl(const std::string &key)
	{
		auto r = admin({"PTTL", key});
		return r && r->is_integer() ? r->integer : -3;
	}

private:
	::testing::AssertionResult started_ = ::testing::AssertionFailure();
};

class RedisElection : public ::testing::Test {
protected:
	static void SetUpTestSuite() { server = std::make_unique<Server>(); }
	static void TearDownTestSuite() { server.reset(); }
	void SetUp() override
	{
		ASSERT_TRUE(server->started()) << "install redis-server: scripts/install-deps.sh";
	}

	std::unique_ptr<pglease::Locker> as(const std::string &user, const std::string &pw = user_pw)
	{
		auto r = pglease::connect(server->url(user, pw), quick_backoff());
		EXPECT_TRUE(r) << r.error();
		return r ? std::move(*r) : nullptr;
	}
	static std::unique_ptr<Server> server;
};
std::unique_ptr<Server> RedisElection::server;

using Clock = std::chrono::steady_clock;

// latency -- from a change to the observer's return, in ms
long long
latency(Clock::time_point changed, Clock::time_point told)
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(told - changed).count();
}

// told -- observe(e, seen) in another thread; the view and when it came
std::future<std::pair<pglease::Result<LeaderView>, Clock::time_point>>
told(pglease::Locker &follower, const std::string &e, const LeaderView &seen)
{
	return std::async(std::launch::async, [&follower, e, seen] {
		auto v = follower.observe(e, seen, 5s);
		return std::make_pair(std::move(v), Clock::now());
	});
}

TEST_F(RedisElection, documented_acl_user_campaigns_proclaims_observes_by_pub_sub_and_resigns)
{
	ASSERT_TRUE(server->acl(documented_acl(), "elector"));
	auto leader = as("elector"), follower = as("elector");
	ASSERT_TRUE(leader && follower);
	const std::string e = unique_resource("acl/");

	// the observer is asleep on the channel: told well within the 1 s re-read
	auto first = told(*follower, e, {});
	std::this_thread::sleep_for(100ms);
	auto lead = leader->campaign(e, "a:1", opts(10s));
	auto changed_at = Clock::now();
	ASSERT_TRUE(lead) << lead.error();
	auto [elected, at] = first.get();
	ASSERT_TRUE(elected) << elected.error();
	EXPECT_TRUE(elected->has_leader);
	EXPECT_EQ(elected->term, lead->term());
	EXPECT_EQ(elected->value, "a:1");
	EXPECT_LT(latency(changed_at, at), 400) << "told by the re-read, not by the channel";

	auto proclaimed = told(*follower, e, *elected);
	std::this_thread::sleep_for(100ms);
	ASSERT_TRUE(lead->proclaim("a:2"));
	changed_at = Clock::now();
	auto [second, at2] = proclaimed.get();
	ASSERT_TRUE(second) << second.error();
	EXPECT_EQ(second->value, "a:2");
	EXPECT_EQ(second->term, lead->term());
	EXPECT_EQ(second->since, elected->since) << "a proclaim is no new term";
	EXPECT_LT(latency(changed_at, at2), 400);

	auto resigned = told(*follower, e, *second);
	std::this_thread::sleep_for(100ms);
	const auto term = lead->term();
	ASSERT_TRUE(lead->resign());
	auto [gone, at3] = resigned.get();
	ASSERT_TRUE(gone) << gone.error();
	EXPECT_FALSE(gone->has_leader);
	EXPECT_GE(gone->term, term);
}

// Redis checks a script's commands and channels only when it calls them:
// the scripts call TIME and PUBLISH before their first write
TEST_F(RedisElection, a_user_lacking_an_election_addition_is_refused_and_nothing_is_written)
{
	for (const std::string addition : {"~pglease:value:*", "&pglease:election:*", "+time"}) {
		SCOPED_TRACE("without " + addition);
		auto argv = without(documented_acl(), addition);
		ASSERT_NE(argv.size(), documented_acl().size()) << addition << " is not in the documented line";
		ASSERT_TRUE(server->acl(argv, "partial"));
		auto locker = as("partial");
		ASSERT_TRUE(locker);
		const std::string e = unique_resource("partial/");
		auto c = locker->campaign(e, "v", opts(10s));
		ASSERT_FALSE(c) << "campaigned without " << addition;
		EXPECT_EQ(c.error().code, Errc::permission) << c.error();
		EXPECT_FALSE(pglease::is_retryable(c.error()));
		EXPECT_EQ(c.error().message.find(user_pw), std::string::npos) << c.error();
		EXPECT_EQ(server->text("pglease:lock:" + e), "") << "a refused campaign left a lock";
		EXPECT_EQ(server->text("pglease:token:" + e), "") << "a refused campaign used a term";
		EXPECT_EQ(server->text("pglease:value:" + e), "") << "a refused campaign left a value";
	}
}

TEST_F(RedisElection, the_value_key_is_renewed_with_the_grant_and_ends_with_it)
{
	auto locker = as("default", admin_pw);
	ASSERT_TRUE(locker);
	const std::string e = unique_resource("value/");
	auto o = opts(3s);
	o.auto_renew = false;
	auto lead = locker->campaign(e, "v1", o);
	ASSERT_TRUE(lead) << lead.error();
	const std::string value_key = "pglease:value:" + e;
	EXPECT_EQ(server->text(value_key).rfind(std::to_string(lead->term()) + ":", 0), 0u)
	    << server->text(value_key);
	// a TTL longer than the grace (2 s) is granted for the grace first
	EXPECT_LE(server->pttl(value_key), 2000);
	EXPECT_LE(server->pttl("pglease:lock:" + e), 2000);
	ASSERT_TRUE(lead->renew());
	EXPECT_GT(server->pttl(value_key), 2500) << "the renewal did not extend the value";
	EXPECT_GT(server->pttl("pglease:lock:" + e), 2500);
	ASSERT_TRUE(lead->resign());
	EXPECT_EQ(server->pttl(value_key), -2) << "the resignation left the value";

	// an expiry ends both (the same PX), and leader() keeps the ended term
	auto short_ttl = opts(400ms);
	short_ttl.auto_renew = false;
	auto brief = locker->campaign(e, "v2", short_ttl);
	ASSERT_TRUE(brief) << brief.error();
	const auto term = brief->term();
	EXPECT_TRUE(eventually([&] { return server->pttl(value_key) == -2; }, 2s))
	    << "the value outlived its grant";
	auto now = locker->leader(e);
	ASSERT_TRUE(now) << now.error();
	EXPECT_FALSE(now->has_leader);
	EXPECT_EQ(now->term, term);
}

TEST_F(RedisElection, a_grant_broken_by_hand_reaches_an_observer_by_the_re_read)
{
	auto locker = as("default", admin_pw), follower = as("default", admin_pw);
	ASSERT_TRUE(locker && follower);
	const std::string e = unique_resource("broken/");
	auto lead = locker->campaign(e, "v", opts(10s));
	ASSERT_TRUE(lead) << lead.error();
	auto seen = follower->leader(e);
	ASSERT_TRUE(seen && seen->has_leader);
	auto waiting = told(*follower, e, *seen);
	std::this_thread::sleep_for(100ms);
	ASSERT_TRUE(server->admin({"DEL", "pglease:lock:" + e})); // no message: nothing publishes a DEL
	auto broken_at = Clock::now();
	auto [view, at] = waiting.get();
	ASSERT_TRUE(view) << view.error();
	EXPECT_FALSE(view->has_leader);
	EXPECT_LT(latency(broken_at, at), 1500) << "the re-read came later than a second";
	auto p = lead->proclaim("again");
	ASSERT_FALSE(p);
	EXPECT_EQ(p.error().code, Errc::lost);
}

// total_connections -- the server's count of connections it accepted
long long
total_connections(Server &server)
{
	auto r = server.admin({"INFO", "stats"});
	if (!r || !r->is_string())
		return -1;
	auto at = r->text.find("total_connections_received:");
	return at == std::string::npos ? -1 : std::atoll(r->text.c_str() + at + 27);
}

TEST_F(RedisElection, a_follower_observing_in_a_loop_keeps_one_subscription)
{
	auto follower = as("default", admin_pw);
	ASSERT_TRUE(follower);
	const std::string e = unique_resource("loop/");
	auto seen = follower->leader(e); // the pool's connection, before counting
	ASSERT_TRUE(seen) << seen.error();
	const auto before = total_connections(*server);
	for (int i = 0; i < 5; ++i) {
		auto same = follower->observe(e, *seen, 150ms);
		ASSERT_FALSE(same);
		EXPECT_EQ(same.error().code, Errc::timeout) << same.error();
	}
	// the admin's INFO connections count too: two of them, and one subscriber
	EXPECT_LE(total_connections(*server) - before, 1 + 2) << "a subscription per observe call";
	auto subscribers = server->admin({"PUBSUB", "NUMSUB", "pglease:election:" + e});
	ASSERT_TRUE(subscribers && subscribers->is_array() && subscribers->elements.size() == 2);
	EXPECT_EQ(subscribers->elements[1].integer, 1) << "the subscription was not kept";
}

TEST_F(RedisElection, a_plain_lock_on_an_election_name_is_a_leader_without_a_value)
{
	auto locker = as("default", admin_pw);
	ASSERT_TRUE(locker);
	const std::string e = unique_resource("plain/");
	auto lock = locker->acquire(e, opts(10s));
	ASSERT_TRUE(lock) << lock.error();
	auto now = locker->leader(e);
	ASSERT_TRUE(now) << now.error();
	EXPECT_TRUE(now->has_leader);
	EXPECT_EQ(now->term, lock->token());
	EXPECT_EQ(now->value, "");
}

// elsewhere -- f() on a thread of its own: a thread that holds a lease may
// not wait for another (the no-nested rule)
template <class F>
auto
elsewhere(F f)
{
	return std::async(std::launch::async, std::move(f)).get();
}

// readers and permits keep the lock key as a sorted set: nobody leads there
// (issue 36, item 8: leader and observe answered WRONGTYPE as internal)
TEST_F(RedisElection, readers_or_permits_on_an_election_name_are_no_leader)
{
	auto locker = as("default", admin_pw), follower = as("default", admin_pw);
	ASSERT_TRUE(locker && follower);
	for (const bool readers : {true, false}) {
		SCOPED_TRACE(readers ? "readers" : "permits");
		const std::string e = unique_resource(readers ? "readers/" : "permits/");
		auto o = opts(10s);
		if (readers)
			o.mode = pglease::Mode::shared;
		else
			o.limit = 2;
		auto grant = locker->acquire(e, o);
		ASSERT_TRUE(grant) << grant.error();
		auto now = follower->leader(e);
		ASSERT_TRUE(now) << now.error();
		EXPECT_FALSE(now->has_leader);
		auto same = follower->observe(e, *now, 300ms);
		ASSERT_FALSE(same);
		EXPECT_EQ(same.error().code, Errc::timeout) << same.error();
		auto c = elsewhere([&] { return locker->campaign(e, "v", opts(10s, 300ms)); });
		ASSERT_FALSE(c);
		// a campaign waits for readers (as a writer does); on permits, a mismatch
		EXPECT_EQ(c.error().code, readers ? Errc::timeout : Errc::invalid_argument) << c.error();
		auto waiting = told(*follower, e, *now);
		std::this_thread::sleep_for(100ms);
		ASSERT_TRUE(grant->release());
		auto lead = elsewhere([&] { return locker->campaign(e, "after", opts(10s)); });
		ASSERT_TRUE(lead) << lead.error();
		auto [view, at] = waiting.get();
		ASSERT_TRUE(view) << view.error();
		EXPECT_TRUE(view->has_leader);
		EXPECT_EQ(view->value, "after");
	}
}

// a leader whose lock was broken and whose name then took readers: its
// proclaim is lost, not internal
TEST_F(RedisElection, a_proclaim_where_readers_took_the_name_is_lost)
{
	auto locker = as("default", admin_pw);
	ASSERT_TRUE(locker);
	const std::string e = unique_resource("proclaim-readers/");
	auto lead = locker->campaign(e, "v", opts(10s));
	ASSERT_TRUE(lead) << lead.error();
	ASSERT_TRUE(server->admin({"DEL", "pglease:lock:" + e}));
	auto o = opts(10s);
	o.mode = pglease::Mode::shared;
	auto reader = elsewhere([&] { return locker->acquire(e, o); });
	ASSERT_TRUE(reader) << reader.error();
	auto p = lead->proclaim("again");
	ASSERT_FALSE(p);
	EXPECT_EQ(p.error().code, Errc::lost) << p.error();
}

// A redis-server without persistence, of this test alone: it is restarted.
TEST(RedisElectionEpoch, a_restart_without_data_starts_a_new_epoch_that_followers_show)
{
	ScriptServer bare("redis.sh");
	ASSERT_TRUE(bare.start()) << "install redis-server: scripts/install-deps.sh";
	const std::string url = "redis://127.0.0.1:" + std::to_string(bare.port());
	auto leader = pglease::connect(url, quick_backoff()), follower = pglease::connect(url, quick_backoff());
	ASSERT_TRUE(leader && follower);
	const std::string e = "epoch";
	for (int i = 0; i < 2; ++i)
		ASSERT_TRUE((*leader)->campaign(e, "old", opts(10s))); // terms 1 and 2, resigned
	auto lead = (*leader)->campaign(e, "old", opts(10s));
	ASSERT_TRUE(lead) << lead.error();
	ASSERT_EQ(lead->term(), 3);
	auto seen = (*follower)->leader(e);
	ASSERT_TRUE(seen && seen->has_leader);
	EXPECT_FALSE(seen->epoch.empty()) << "a campaign names the epoch";
	std::mutex mu;
	std::optional<Clock::time_point> shown_new; // when the observer showed "new"
	auto observer = pglease::ElectionObserver::start(**follower, e, [&](const LeaderView &v) {
		std::lock_guard<std::mutex> lk(mu);
		if (v.has_leader && v.value == "new" && !shown_new)
			shown_new = Clock::now();
	});
	ASSERT_TRUE(observer) << observer.error();

	ASSERT_TRUE(bare.kill());
	ASSERT_TRUE(bare.start());
	std::optional<pglease::Leadership> next;
	ASSERT_TRUE(eventually(
	    [&] {
		    auto won = elsewhere([&] { return (*leader)->campaign(e, "new", opts(10s)); });
		    if (won)
			    next.emplace(std::move(*won));
		    return next.has_value();
	    },
	    3s));
	const auto elected_at = Clock::now();
	EXPECT_EQ(next->term(), 1) << "without its data the server counts terms from 1 again";

	// observe passes a term of another epoch, though lower than seen's (the
	// follower's first calls may meet its connection broken by the restart,
	// or the server still empty)
	pglease::Result<LeaderView> view = *seen;
	LeaderView last = *seen;
	const auto give_up = Clock::now() + 5s;
	while (Clock::now() < give_up) {
		view = (*follower)->observe(e, last, 1s);
		if (view && view->has_leader)
			break;
		if (view)
			last = *view;
		else if (view.error().code != Errc::unavailable && view.error().code != Errc::timeout)
			break;
	}
	ASSERT_TRUE(view) << view.error();
	EXPECT_TRUE(view->has_leader);
	EXPECT_EQ(view->term, 1);
	EXPECT_EQ(view->value, "new");
	EXPECT_NE(view->epoch, seen->epoch);
	EXPECT_FALSE(view->epoch.empty());
	EXPECT_TRUE(eventually(
	    [&] {
		    std::lock_guard<std::mutex> lk(mu);
		    return shown_new.has_value();
	    },
	    3s))
	    << "the ElectionObserver did not show the new leader within 3 s of its election";
	{
		std::lock_guard<std::mutex> lk(mu);
		if (shown_new)
			std::cout << "# ElectionObserver: the new leader shown " << latency(elected_at, *shown_new)
			          << " ms after its election\n";
	}
	auto again = (*follower)->leader(e);
	ASSERT_TRUE(again) << again.error();
	EXPECT_EQ(again->epoch, view->epoch) << "one epoch while the server keeps its data";
}

TEST(RedlockElection, redlock_offers_no_elections_and_says_why)
{
	// nothing listens on these ports: a refusal must come before any I/O
	auto ports = free_ports(3);
	std::string url = "redlock://";
	for (std::size_t i = 0; i < ports.size(); ++i)
		url += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(ports[i]);
	auto locker = pglease::connect(url, quick_backoff());
	ASSERT_TRUE(locker) << locker.error();
	EXPECT_FALSE((*locker)->capabilities().election);
	auto start = Clock::now();
	auto c = (*locker)->campaign("e", "v", opts(10s));
	ASSERT_FALSE(c);
	EXPECT_EQ(c.error().code, Errc::invalid_argument);
	EXPECT_NE(c.error().message.find("Redlock provider offers no leader election"), std::string::npos)
	    << c.error().message;
	auto l = (*locker)->leader("e");
	ASSERT_FALSE(l);
	EXPECT_EQ(l.error().code, Errc::invalid_argument);
	auto o = (*locker)->observe("e", {}, 1s);
	ASSERT_FALSE(o);
	EXPECT_EQ(o.error().code, Errc::invalid_argument);
	EXPECT_LT(ms_since(start), 200) << "refused after I/O";
	std::cout << "  " << c.error().message << "\n";
}

} // namespace
