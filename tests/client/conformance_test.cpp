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
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "conformance.hpp"
#include "memory/space.hpp"
#include "pglease/pglease.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using pglease::Errc;
using test_support::eventually;
using test_support::in_other_thread;
using test_support::opts;

using namespace conformance;

namespace {

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
	EXPECT_EQ(c.election, d.election);
	EXPECT_EQ(c.reclaim, d.reclaim);
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
	// The wait is judged by the server's wall clock (PostgreSQL: the server's
	// clock is the only clock), measured here on steady_clock: a wall clock
	// stepped or slewed by a millisecond meanwhile (seen once: 499.47 ms of a
	// 500 ms wait) is no early timeout.
	EXPECT_GE(took, 495ms);
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

// ---- names and durations every provider takes alike (issue 19) ------------------

// free_for_another -- resource can be taken at once by another locker of the
// same provider (so nothing of a refused call holds it)
#define EXPECT_FREE_FOR_ANOTHER(resource)                                                                    \
	do {                                                                                                     \
		auto other_ = pglease::connect(GetParam().url);                                                      \
		ASSERT_TRUE(other_) << other_.error();                                                               \
		auto got_ = in_other_thread([&] { return (*other_)->try_acquire((resource), opts(5s)); });           \
		EXPECT_TRUE(got_) << "a refused call left " << (resource) << " taken: " << got_.error();             \
	} while (0)

TEST_P(Conformance, NulBytesInResourceOrHolderAreRefusedAndTakeNothing)
{
	std::string base = unique_resource();
	for (const std::string &name : {base + std::string{"\0-eu", 4}, base + std::string{"\0-us", 4}}) {
		auto r = locker->acquire(name, opts(10s));
		ASSERT_FALSE(r) << "granted token " << r->token() << " to a name with a NUL byte";
		EXPECT_EQ(r.error().code, Errc::invalid_argument) << r.error();
		EXPECT_FALSE(pglease::is_retryable(r.error()));
	}
	EXPECT_FREE_FOR_ANOTHER(base);
	auto o = opts(10s);
	o.holder = std::string{"job\0A", 5};
	auto held = locker->acquire(base, o);
	ASSERT_FALSE(held) << "granted token " << held->token() << " to a holder with a NUL byte";
	EXPECT_EQ(held.error().code, Errc::invalid_argument) << held.error();
	EXPECT_FREE_FOR_ANOTHER(base);
}

TEST_P(Conformance, InvalidUtf8InResourceOrHolderIsRefused)
{
	std::string base = unique_resource();
	for (const std::string &bad : {std::string{"\xff\xfe"}, std::string{"\xc0\xaf"},
	                               std::string{"\xed\xa0\x80"}, std::string{"caf\xc3"}}) {
		auto r = locker->acquire(base + bad, opts(10s));
		ASSERT_FALSE(r) << "granted a resource that is not UTF-8";
		EXPECT_EQ(r.error().code, Errc::invalid_argument) << r.error();
		auto o = opts(10s);
		o.holder = "job" + bad;
		auto h = locker->acquire(base, o);
		ASSERT_FALSE(h) << "granted a holder that is not UTF-8";
		EXPECT_EQ(h.error().code, Errc::invalid_argument) << h.error();
	}
	EXPECT_FREE_FOR_ANOTHER(base);
	// valid multi-byte UTF-8 is a name like any other
	auto ok = locker->acquire(base + "/caf\xc3\xa9-\xe6\x97\xa5\xf0\x9f\x94\x92", opts(10s));
	EXPECT_TRUE(ok) << ok.error();
}

TEST_P(Conformance, NamesUpTo256BytesWorkLongerOnesAreRefusedBeforeAnyIo)
{
	std::string base = unique_resource() + "/";
	std::string longest = base + std::string(pglease::max_resource_bytes - base.size(), 'x');
	auto ok = locker->acquire(longest, opts(10s));
	ASSERT_TRUE(ok) << "a 256-byte resource must work: " << ok.error();
	EXPECT_TRUE(ok->release());
	for (std::size_t size : {pglease::max_resource_bytes + 1, std::size_t{1} << 20}) {
		auto t0 = std::chrono::steady_clock::now();
		auto r = locker->acquire(base + std::string(size - base.size(), 'x'), opts(10s));
		ASSERT_FALSE(r) << size << "-byte resource granted";
		EXPECT_EQ(r.error().code, Errc::invalid_argument) << r.error();
		EXPECT_LT(std::chrono::steady_clock::now() - t0, 100ms) << "checked before any I/O";
		auto o = opts(10s);
		o.holder = std::string(size, 'h');
		auto h = locker->acquire(base, o);
		ASSERT_FALSE(h) << size << "-byte holder granted";
		EXPECT_EQ(h.error().code, Errc::invalid_argument) << h.error();
	}
	auto o = opts(10s);
	o.holder = std::string(pglease::max_holder_bytes, 'h');
	auto h = locker->acquire(base + "holder", o);
	EXPECT_TRUE(h) << "a 256-byte holder must work: " << h.error();
}

TEST_P(Conformance, TokenCallsRefuseBadArgumentsBeforeAnyIo)
{
	std::string r = unique_resource();
	for (auto res :
	     {locker->renew("", 1, 1s), locker->renew(r, 0, 1s), locker->renew(r, 1, 0ms),
	      locker->renew(r + std::string{"\0x", 2}, 1, 1s), locker->renew(std::string(300, 'r'), 1, 1s),
	      locker->release("", 1), locker->release(r, -5), locker->release(r + "\xff", 1)}) {
		ASSERT_FALSE(res);
		EXPECT_EQ(res.error().code, Errc::invalid_argument) << res.error();
	}
}

// issue 22: the holder forms check the holder too (an empty one never means
// "any holder"), and exist exactly where the token-only calls do
TEST_P(Conformance, HolderTokenCallsRefuseBadHoldersAndMatchTheTokenCallsSupport)
{
	std::string r = unique_resource();
	for (auto res :
	     {locker->renew(r, 1, "", 1s), locker->release(r, 1, ""),
	      locker->renew(r, 1, std::string{"a\0b", 3}, 1s), locker->release(r, 1, std::string(300, 'h')),
	      locker->release(r, 1, "\xff"), locker->renew(r, 0, "h", 1s)}) {
		ASSERT_FALSE(res);
		EXPECT_EQ(res.error().code, Errc::invalid_argument) << res.error();
	}
	auto token_only = locker->release(r, 1);
	auto with_holder = locker->release(r, 1, "h");
	auto renewed = locker->renew(r, 1, "h", 1s);
	if (!token_only) {
		EXPECT_EQ(token_only.error().code, Errc::invalid_argument) << token_only.error();
		ASSERT_FALSE(with_holder) << "a provider without token calls released by token and holder";
		EXPECT_EQ(with_holder.error().code, Errc::invalid_argument) << with_holder.error();
		ASSERT_FALSE(renewed);
		EXPECT_EQ(renewed.error().code, Errc::invalid_argument) << renewed.error();
	} else {
		EXPECT_FALSE(*token_only) << "released a grant nobody took";
		ASSERT_TRUE(with_holder) << with_holder.error();
		EXPECT_FALSE(*with_holder) << "released a grant nobody took";
		ASSERT_TRUE(renewed) << renewed.error();
		EXPECT_FALSE(*renewed) << "renewed a grant nobody took";
	}
}

TEST_P(Conformance, HugeWaitWaitsForTheReleaseInsteadOfTimingOutAtOnce)
{
	auto r = unique_resource();
	auto held = locker->acquire(r, opts(30s));
	ASSERT_TRUE(held) << held.error();
	auto t0 = std::chrono::steady_clock::now();
	auto waiter = std::async(std::launch::async, [&] {
		auto o = opts(10s, std::chrono::milliseconds::max());
		return locker->acquire(r, o);
	});
	EXPECT_EQ(waiter.wait_for(700ms), std::future_status::timeout)
	    << "a wait of milliseconds::max() returned at once";
	ASSERT_TRUE(held->release());
	ASSERT_EQ(waiter.wait_for(20s), std::future_status::ready)
	    << "the waiter was not granted after the release";
	auto got = waiter.get();
	EXPECT_TRUE(got) << "after "
	                 << std::chrono::duration_cast<std::chrono::milliseconds>(
	                        std::chrono::steady_clock::now() - t0)
	                        .count()
	                 << " ms: " << got.error();
}

// A grant's local deadline counts from the request's start; after a wait
// longer than the TTL nothing of it would be left: the lease must still start
// valid, with most of a TTL before its local deadline, and stay held.
TEST_P(Conformance, GrantAfterAWaitLongerThanTheTtlStartsValidAndStaysHeld)
{
	auto r = unique_resource();
	auto held = locker->acquire(r, opts(30s));
	ASSERT_TRUE(held) << held.error();
	auto waiter = std::async(std::launch::async, [&] {
		auto got = locker->acquire(r, opts(1s, 20s));
		bool valid_at_return = got && got->valid();
		auto remaining = got ? got->remaining() : std::chrono::milliseconds{0};
		return std::make_tuple(std::move(got), valid_at_return, remaining);
	});
	std::this_thread::sleep_for(2500ms); // two and a half of the waiter's TTLs
	ASSERT_TRUE(held->release());
	ASSERT_EQ(waiter.wait_for(20s), std::future_status::ready) << "the waiter was not granted after the release";
	auto [got, valid_at_return, remaining] = waiter.get();
	ASSERT_TRUE(got) << got.error();
	EXPECT_TRUE(valid_at_return) << "granted after a wait longer than its TTL, the lease started lost";
	EXPECT_GT(remaining, 500ms) << "the local deadline still counted from the start of the wait";
	std::this_thread::sleep_for(2500ms); // renewed meanwhile
	EXPECT_TRUE(got->valid());
	auto contender = in_other_thread([&] { return locker->try_acquire(r, opts(10s)); });
	ASSERT_FALSE(contender) << "granted twice";
	EXPECT_EQ(contender.error().code, Errc::timeout) << contender.error();
}

TEST_P(Conformance, HugeTtlIsRefusedNamingTheMaximumOrHeldAndValid)
{
	using years = std::chrono::duration<long long, std::ratio<31557600>>;
	for (auto ttl : {std::chrono::milliseconds::max(),
	                 std::chrono::duration_cast<std::chrono::milliseconds>(years{1000})}) {
		auto r = locker->acquire(unique_resource(), opts(ttl));
		if (r) {
			EXPECT_TRUE(r->valid()) << "granted for " << ttl.count() << " ms, but not valid at once";
			EXPECT_GT(r->remaining(), std::chrono::hours{24 * 365});
			continue;
		}
		EXPECT_EQ(r.error().code, Errc::invalid_argument) << r.error();
		EXPECT_NE(r.error().message.find("maximum"), std::string::npos)
		    << "the refusal must name the provider's maximum: " << r.error();
	}
}

INSTANTIATE_TEST_SUITE_P(Providers, Conformance, ::testing::ValuesIn(providers_from_env()),
                         [](const ::testing::TestParamInfo<Provider> &info) { return info.param.name; });

// Two acquires of one holder label are two holders (issue 36, item 1): the
// second waits like any other; the label is stored with 64 random bits.  With
// reclaim the label names one grant, which an acquire of it takes back (same
// token); where no provider can (capabilities().reclaim) it is refused before
// any I/O; and reclaim without a label is refused.
TEST_P(Conformance, OneLabelIsOneHolderUnlessReclaimed)
{
	auto r = unique_resource();
	auto o = opts(10s);
	o.holder = "nightly@box";
	auto first = locker->acquire(r, o);
	ASSERT_TRUE(first) << first.error();
	EXPECT_EQ(first->holder().rfind("nightly@box~", 0), 0u) << first->holder();
	EXPECT_EQ(first->holder().size(), std::string{"nightly@box~"}.size() + 16) << first->holder();
	auto second = in_other_thread([&] { return locker->try_acquire(r, o); });
	ASSERT_FALSE(second) << "one label, two holders: token " << second->token() << " beside " << first->token();
	EXPECT_EQ(second.error().code, Errc::timeout) << second.error();
	ASSERT_TRUE(first->release());

	o.reclaim = true;
	auto kept = locker->acquire(r, o);
	if (!locker->capabilities().reclaim) {
		ASSERT_FALSE(kept) << "reclaim granted where capabilities().reclaim is false";
		EXPECT_EQ(kept.error().code, Errc::invalid_argument) << kept.error();
		EXPECT_FREE_FOR_ANOTHER(r);
	} else {
		ASSERT_TRUE(kept) << kept.error();
		EXPECT_EQ(kept->holder(), "nightly@box");
		auto again = in_other_thread([&] { return locker->try_acquire(r, o); });
		ASSERT_TRUE(again) << "reclaim did not take back its own grant: " << again.error();
		EXPECT_EQ(again->token(), kept->token());
		(void)again->detach();
		ASSERT_TRUE(kept->release());
	}
	o.holder.clear();
	auto unnamed = locker->acquire(r, o);
	ASSERT_FALSE(unnamed) << "reclaim without a label was granted";
	EXPECT_EQ(unnamed.error().code, Errc::invalid_argument) << unnamed.error();
	// a 256-byte label still fits: it is shortened to make room for the bits
	o.reclaim = false;
	o.holder = std::string(pglease::max_holder_bytes, 'h');
	auto longest = locker->acquire(r, o);
	ASSERT_TRUE(longest) << longest.error();
	EXPECT_EQ(longest->holder().size(), pglease::max_holder_bytes) << longest->holder();
}

// Each conformance.NAME run starts only NAME's servers and names what it
// wants in PGLEASE_CONFORMANCE_WANT (tests/providers/conformance.sh); a wanted
// provider that is not named would leave its filter matching no case at all.
TEST(ConformanceSetup, EveryWantedProviderIsNamed)
{
	const char *env = std::getenv("PGLEASE_CONFORMANCE");
	const char *want = std::getenv("PGLEASE_CONFORMANCE_WANT");
	ASSERT_TRUE(env && want) << "PGLEASE_CONFORMANCE(_WANT) is not set: run this suite through 'make test' "
	                            "(tests/providers/conformance.sh starts the servers and names them)";
	auto wanted = split(want, ' ');
	wanted.erase(std::remove(wanted.begin(), wanted.end(), std::string()), wanted.end());
	ASSERT_FALSE(wanted.empty()) << "PGLEASE_CONFORMANCE_WANT names no provider";
	std::vector<std::string> names;
	for (const auto &p : providers_from_env())
		names.push_back(p.name);
	for (const auto &w : wanted)
		EXPECT_NE(std::find(names.begin(), names.end(), w), names.end()) << w << " is not named";
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

TEST(Connect, NoMessageShowsTheUrlsPassword)
{
	const std::string pw = "Pw-s3cr3t-8c1";
	for (const std::string &url :
	     {"redis://user:" + pw + "@127.0.0.1:1/0", "redis://:" + pw + "@127.0.0.1:1",
	      "redis://u:" + pw + "@:x/99", "redlock://u:" + pw + "@127.0.0.1:1,127.0.0.1:2,127.0.0.1:3",
	      "etcd://u:" + pw + "@127.0.0.1:1", "etcd://u:" + pw + "@a b:1",
	      "zookeeper://u:" + pw + "@127.0.0.1:1", "foo://u:" + pw + "@h",
	      "postgresql://u:" + pw + "@h/db?nonsense=1", "host=h password=" + pw + " port"}) {
		auto r = pglease::connect(url);
		if (!r) {
			EXPECT_EQ(r.error().message.find(pw), std::string::npos) << r.error();
			continue;
		}
		auto lease = (*r)->acquire("conf/password", opts(1s));
		ASSERT_FALSE(lease) << pglease::redact(url);
		EXPECT_EQ(lease.error().message.find(pw), std::string::npos) << lease.error();
	}
}

TEST(Connect, PostgresUrlsAndConninfoGiveThePostgresLocker)
{
	for (const char *url : {"postgresql://localhost/db", "dbname=x host=/tmp", ""}) {
		auto r = pglease::connect(url);
		ASSERT_TRUE(r) << url << ": " << r.error();
		EXPECT_EQ((*r)->provider(), "PostgreSQL");
		EXPECT_TRUE((*r)->capabilities().fenced_write);
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

// Strategies a provider has not are refused before any I/O, with one rule for
// every provider (LockerBase::check_strategy): no acquire or campaign holds
// an advisory lock, and a session-bound grant only where
// capabilities().ephemeral says so; nothing is taken.
TEST_P(Conformance, StrategiesTheProviderHasNotAreRefusedBeforeAnyIo)
{
	auto r = unique_resource();
	auto advisory = opts(10s);
	advisory.strategy = pglease::Strategy::advisory;
	auto ephemeral = opts(10s);
	ephemeral.strategy = pglease::Strategy::ephemeral;
	auto bound = opts(10s);
	bound.session_bound = true;
	const bool has_sessions = locker->capabilities().ephemeral;
	auto a = locker->acquire(r, advisory);
	ASSERT_FALSE(a) << "Strategy::advisory granted a lease";
	EXPECT_EQ(a.error().code, Errc::invalid_argument) << a.error();
	EXPECT_EQ(a.error().sqlstate, "22023") << a.error();
	for (const auto *o : {&ephemeral, &bound}) {
		auto l = locker->acquire(r, *o);
		if (has_sessions) {
			ASSERT_TRUE(l) << l.error();
			ASSERT_TRUE(l->release());
		} else {
			ASSERT_FALSE(l) << "a session-bound grant where capabilities().ephemeral is false";
			EXPECT_EQ(l.error().code, Errc::invalid_argument) << l.error();
			EXPECT_EQ(l.error().sqlstate, "22023") << l.error();
		}
	}
	if (locker->capabilities().election) {
		auto c = locker->campaign(r + "-election", "v", advisory);
		ASSERT_FALSE(c) << "Strategy::advisory won an election";
		EXPECT_EQ(c.error().code, Errc::invalid_argument) << c.error();
	}
	EXPECT_FREE_FOR_ANOTHER(r);
}
