// sharing_conformance_test.cpp -- reader-writer leases and semaphores
// (docs/shared-leases.md): the same behaviours for every provider behind
// pglease::connect(url) that has them, each against its real server (the
// providers of conformance.hpp; this file is part of conformance_test).  A
// provider whose capabilities() lack shared_mode or semaphore is asserted to
// refuse such requests before any I/O, never skipped.  The cases that kill
// (SIGKILL) or freeze (SIGSTOP) a holder run it as a process of its own:
// tests/client/sharing_worker.cpp hold, named by $PGLEASE_SHARING_WORKER.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "conformance.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using namespace conformance;
using pglease::Errc;
using pglease::Mode;
using test_support::in_other_thread;

namespace {

pglease::LeaseOptions
shared(std::chrono::milliseconds ttl, std::chrono::milliseconds wait = 0ms)
{
	auto o = test_support::opts(ttl, wait);
	o.mode = Mode::shared;
	return o;
}

pglease::LeaseOptions
exclusive(std::chrono::milliseconds ttl, std::chrono::milliseconds wait = 0ms)
{
	return test_support::opts(ttl, wait);
}

pglease::LeaseOptions
permit(std::uint32_t limit, std::chrono::milliseconds ttl, std::chrono::milliseconds wait = 0ms)
{
	auto o = test_support::opts(ttl, wait);
	o.limit = limit;
	return o;
}

using Pending = std::future<pglease::Result<pglease::Lease>>;

// queued -- an acquire in a thread of its own, given time to join the queue
Pending
queued(pglease::Locker &locker, const std::string &r, pglease::LeaseOptions o)
{
	auto f = std::async(std::launch::async, [&locker, r, o] { return locker.acquire(r, o); });
	std::this_thread::sleep_for(300ms);
	return f;
}

bool
ready(Pending &f, std::chrono::milliseconds within)
{
	return f.wait_for(within) == std::future_status::ready;
}

// lacks -- a provider without the capability must refuse the test's first
// request (Errc::invalid_argument); asserted here, and the test ends there
bool
lacks(bool capable, const pglease::Result<pglease::Lease> &first)
{
	if (capable)
		return false;
	EXPECT_FALSE(first) << "granted by a provider whose capabilities() deny it";
	if (!first) {
		EXPECT_EQ(first.error().code, Errc::invalid_argument) << first.error();
	}
	return true;
}

// hold_worker -- sharing_worker hold: one grant, renewed, in a process of its own
Worker
hold_worker(const std::string &url, const std::string &r, const char *mode, unsigned limit, long ttl_ms,
            const std::string &table = "")
{
	std::vector<std::string> args{"hold", url, r, mode, std::to_string(limit), std::to_string(ttl_ms)};
	if (!table.empty())
		args.push_back(table);
	return Worker{"PGLEASE_SHARING_WORKER", args};
}

// the token of a "held TOKEN" line, or 0
long long
held_token(const std::string &line)
{
	return line.rfind("held ", 0) == 0 ? std::atoll(line.c_str() + 5) : 0;
}

class Sharing : public Conformance {
protected:
	bool has_shared() { return locker->capabilities().shared_mode; }
	bool has_semaphore() { return locker->capabilities().semaphore; }
};

TEST_P(Sharing, CapabilitiesAreAsDocumented)
{
	auto c = locker->capabilities();
	auto d = documented(GetParam().name);
	EXPECT_EQ(c.shared_mode, d.shared_mode);
	EXPECT_EQ(c.semaphore, d.semaphore);
}

TEST_P(Sharing, WithoutTheCapabilityTheRequestIsRefusedNamingIt)
{
	auto r = unique_resource();
	auto s = in_other_thread([&] { return locker->try_acquire(r, shared(10s)); });
	if (has_shared()) {
		EXPECT_TRUE(s) << s.error();
	} else {
		ASSERT_FALSE(s);
		EXPECT_EQ(s.error().code, Errc::invalid_argument) << s.error();
		EXPECT_NE(s.error().message.find("shared_mode"), std::string::npos) << s.error();
	}
	auto p = in_other_thread([&] { return locker->try_acquire(unique_resource(), permit(2, 10s)); });
	if (has_semaphore()) {
		EXPECT_TRUE(p) << p.error();
	} else {
		ASSERT_FALSE(p);
		EXPECT_EQ(p.error().code, Errc::invalid_argument) << p.error();
		EXPECT_NE(p.error().message.find("semaphore"), std::string::npos) << p.error();
	}
}

TEST_P(Sharing, BadCombinationsAreRefusedBeforeAnyIo)
{
	auto r = unique_resource();
	auto o = shared(10s);
	o.limit = 3;
	auto both = locker->try_acquire(r, o);
	ASSERT_FALSE(both);
	EXPECT_EQ(both.error().code, Errc::invalid_argument) << both.error();
	auto huge = locker->try_acquire(r, permit(pglease::max_limit + 1, 10s));
	ASSERT_FALSE(huge);
	EXPECT_EQ(huge.error().code, Errc::invalid_argument) << huge.error();
	auto bad_mode = exclusive(10s);
	bad_mode.mode = static_cast<Mode>(7);
	auto odd = locker->try_acquire(r, bad_mode);
	ASSERT_FALSE(odd);
	EXPECT_EQ(odd.error().code, Errc::invalid_argument) << odd.error();
	// nothing was taken: an exclusive lock is free
	auto lock = in_other_thread([&] { return locker->try_acquire(r, exclusive(10s)); });
	EXPECT_TRUE(lock) << lock.error();
}

TEST_P(Sharing, SharedHoldersCoexistAndExcludeAWriter)
{
	{
		auto r = unique_resource();
		auto a = in_other_thread([&] { return locker->acquire(r, shared(10s)); });
		if (lacks(has_shared(), a))
			return;
		auto b = in_other_thread([&] { return locker->acquire(r, shared(10s)); });
		ASSERT_TRUE(a) << a.error();
		ASSERT_TRUE(b) << b.error();
		EXPECT_TRUE(a->valid());
		EXPECT_TRUE(b->valid());
		if (tokens()) {
			EXPECT_NE(a->token(), b->token()) << "each reader has its own token";
		}
		auto w = in_other_thread([&] { return locker->try_acquire(r, exclusive(10s)); });
		ASSERT_FALSE(w) << "a writer was granted beside two readers";
		EXPECT_EQ(w.error().code, Errc::timeout) << w.error();
		ASSERT_TRUE(a->release());
		auto w2 = in_other_thread([&] { return locker->try_acquire(r, exclusive(10s)); });
		ASSERT_FALSE(w2) << "a writer was granted beside one reader";
		ASSERT_TRUE(b->release());
		auto w3 = in_other_thread([&] { return locker->try_acquire(r, exclusive(10s)); });
		ASSERT_TRUE(w3) << w3.error();
		if (tokens()) {
			EXPECT_GT(w3->token(), std::max(a->token(), b->token()));
		}
		auto reader = in_other_thread([&] { return locker->try_acquire(r, shared(10s)); });
		ASSERT_FALSE(reader) << "a reader was granted beside a writer";
		EXPECT_EQ(reader.error().code, Errc::timeout) << reader.error();
	}
}

TEST_P(Sharing, AWaitingWriterHoldsBackLaterReadersAndIsGrantedWhenTheReadersLeave)
{
	auto r = unique_resource();
	auto first = in_other_thread([&] { return locker->acquire(r, shared(10s)); });
	if (lacks(has_shared(), first))
		return;
	ASSERT_TRUE(first) << first.error();
	Pending writer = queued(*locker, r, exclusive(10s, 15s));
	EXPECT_FALSE(ready(writer, 0ms)) << "the writer was granted beside a reader";
	auto late = in_other_thread([&] { return locker->try_acquire(r, shared(10s)); });
	ASSERT_FALSE(late) << "a reader overtook the waiting writer";
	EXPECT_EQ(late.error().code, Errc::timeout) << late.error();
	Pending later_reader = queued(*locker, r, shared(10s, 15s));
	ASSERT_TRUE(first->release());
	ASSERT_TRUE(ready(writer, 10s)) << "the writer was not granted when the reader left";
	auto w = writer.get();
	ASSERT_TRUE(w) << w.error();
	EXPECT_FALSE(ready(later_reader, 300ms)) << "a reader was granted beside the writer";
	if (tokens()) {
		EXPECT_GT(w->token(), first->token());
	}
	ASSERT_TRUE(w->release());
	ASSERT_TRUE(ready(later_reader, 10s)) << "the reader queued behind the writer was not granted";
	auto rd = later_reader.get();
	ASSERT_TRUE(rd) << rd.error();
	if (tokens()) {
		EXPECT_GT(rd->token(), w->token()) << "tokens increase across modes";
	}
}

TEST_P(Sharing, ReadersQueuedTogetherAreGrantedTogether)
{
	auto probe = in_other_thread([&] { return locker->try_acquire(unique_resource(), shared(10s)); });
	if (lacks(has_shared(), probe))
		return;
	auto r = unique_resource();
	auto writer = in_other_thread([&] { return locker->acquire(r, exclusive(10s)); });
	ASSERT_TRUE(writer) << writer.error();
	std::vector<Pending> readers;
	for (int i = 0; i < 3; ++i)
		readers.push_back(queued(*locker, r, shared(10s, 15s)));
	ASSERT_TRUE(writer->release());
	for (auto &f : readers) {
		ASSERT_TRUE(ready(f, 10s)) << "a queued reader was not granted after the writer left";
		auto got = f.get();
		EXPECT_TRUE(got) << got.error();
	}
}

TEST_P(Sharing, OneReadersExpiryFreesOnlyThatReader)
{
	auto r = unique_resource();
	auto lapsing_opts = shared(1s);
	lapsing_opts.auto_renew = false;
	auto lapsing = in_other_thread([&] { return locker->acquire(r, lapsing_opts); });
	if (lacks(has_shared(), lapsing))
		return;
	ASSERT_TRUE(lapsing) << lapsing.error();
	auto kept = in_other_thread([&] { return locker->acquire(r, shared(1s)); });
	ASSERT_TRUE(kept) << kept.error();
	Pending writer = queued(*locker, r, exclusive(10s, 15s));
	std::this_thread::sleep_for(2500ms); // the unrenewed reader's TTL has run out
	EXPECT_FALSE(lapsing->valid());
	EXPECT_TRUE(kept->valid()) << "the renewed reader lost its lease with the other reader";
	EXPECT_FALSE(ready(writer, 0ms)) << "the writer was granted while a renewed reader held";
	ASSERT_TRUE(kept->release());
	ASSERT_TRUE(ready(writer, 10s)) << "the writer was not granted when the last reader left";
	auto w = writer.get();
	EXPECT_TRUE(w) << w.error();
}

TEST_P(Sharing, SemaphoreGrantsLimitHoldersAndOneWaiterPerRelease)
{
	auto r = unique_resource();
	std::vector<pglease::Lease> held;
	std::vector<std::int64_t> tokens_seen;
	for (int i = 0; i < 3; ++i) {
		auto p = in_other_thread([&] { return locker->acquire(r, permit(3, 10s)); });
		if (i == 0 && lacks(has_semaphore(), p))
			return;
		ASSERT_TRUE(p) << "permit " << i << ": " << p.error();
		tokens_seen.push_back(p->token());
		held.push_back(std::move(*p));
	}
	auto fourth = in_other_thread([&] { return locker->try_acquire(r, permit(3, 10s)); });
	ASSERT_FALSE(fourth) << "a fourth permit of three";
	EXPECT_EQ(fourth.error().code, Errc::timeout) << fourth.error();
	Pending w1 = queued(*locker, r, permit(3, 10s, 15s));
	Pending w2 = queued(*locker, r, permit(3, 10s, 15s));
	ASSERT_TRUE(held[0].release());
	ASSERT_TRUE(ready(w1, 10s) || ready(w2, 0ms)) << "no waiter was granted after a release";
	std::this_thread::sleep_for(300ms);
	int granted = int(ready(w1, 0ms)) + int(ready(w2, 0ms));
	EXPECT_EQ(granted, 1) << "one release admitted " << granted << " waiters";
	if (locker->capabilities().fifo_wait) {
		EXPECT_TRUE(ready(w1, 0ms)) << "the later waiter overtook the earlier one";
	}
	ASSERT_TRUE(held[1].release());
	ASSERT_TRUE(ready(w1, 10s) && ready(w2, 10s)) << "the second waiter was not granted after a second release";
	auto a = w1.get();
	auto b = w2.get();
	ASSERT_TRUE(a) << a.error();
	ASSERT_TRUE(b) << b.error();
	if (tokens()) {
		std::sort(tokens_seen.begin(), tokens_seen.end());
		EXPECT_EQ(std::adjacent_find(tokens_seen.begin(), tokens_seen.end()), tokens_seen.end())
		    << "two permits share a token";
		EXPECT_GT(std::min(a->token(), b->token()), tokens_seen.back());
	}
}

TEST_P(Sharing, AnUnrenewedPermitComesBackAfterItsTtl)
{
	auto r = unique_resource();
	auto lapsing_opts = permit(1, 1s);
	lapsing_opts.auto_renew = false;
	auto lapsing = in_other_thread([&] { return locker->acquire(r, lapsing_opts); });
	if (lacks(has_semaphore(), lapsing))
		return;
	ASSERT_TRUE(lapsing) << lapsing.error();
	auto t0 = std::chrono::steady_clock::now();
	auto next = in_other_thread([&] { return locker->acquire(r, permit(1, 10s, 10s)); });
	ASSERT_TRUE(next) << next.error();
	EXPECT_LT(std::chrono::steady_clock::now() - t0, 3500ms) << "the expired permit came back late";
	if (tokens()) {
		EXPECT_GT(next->token(), lapsing->token());
	}
}

// A reader frozen (SIGSTOP) past its TTL loses its grant to a writer;
// thawed, it is told (on_lost) and, on PostgreSQL, its fenced write is
// refused by the server while the writer's exclusive fenced write lands.
TEST_P(Sharing, AFrozenReaderPastItsTtlIsToldLostAndItsFencedWriteIsRefused)
{
	if (!has_shared() || !has_server())
		return; // without shared_mode: the refusal cases; memory: a frozen process freezes its grants too
	auto r = unique_resource();
	const bool pg = GetParam().name == "postgres";
	const std::string table = "sharing_frozen_" + std::to_string(getpid());
	if (pg) {
		ASSERT_EQ(psql("DROP TABLE IF EXISTS " + table + "; CREATE TABLE " + table + " (token bigint)"), 0);
	}
	auto w = hold_worker(GetParam().url, r, "shared", 0, 1500, pg ? table : "");
	auto a = held_token(w.line());
	ASSERT_GT(a, 0) << "the reader was not granted";
	if (pg) {
		EXPECT_EQ(w.line(), "fenced ok") << "the reader's fenced write before the freeze";
	}
	w.signal(SIGSTOP);
	auto stopped_at = std::chrono::steady_clock::now();
	auto writer = in_other_thread([&] { return locker->acquire(r, exclusive(10s, 1500ms + expiry_slack() + 2s)); });
	ASSERT_TRUE(writer) << writer.error();
	// renewed every 500 ms, the reader's grant lasts at least 1 s past the stop
	EXPECT_GE(std::chrono::steady_clock::now() - stopped_at, 800ms) << "the writer was granted beside the reader";
	EXPECT_GT(writer->token(), a);
	w.signal(SIGCONT);
	auto lost = w.line();
	EXPECT_EQ(lost.rfind("lost ", 0), 0u) << "the thawed reader's on_lost was not called: " << lost;
	if (pg) {
		EXPECT_EQ(w.line(), "fenced lost LS001") << "the thawed reader's fenced write";
		EXPECT_NE(psql("SELECT lease.fence('" + r + "', " + std::to_string(a) + ")"), 0)
		    << "the server accepted the reader's token";
		EXPECT_EQ(psql("BEGIN; SELECT lease.fence('" + r + "', " + std::to_string(writer->token()) +
		               ", exclusive => true); INSERT INTO " + table + " VALUES (" +
		               std::to_string(writer->token()) + "); COMMIT"),
		          0)
		    << "the writer's exclusive fenced write was refused";
		EXPECT_EQ(test_support::capture("psql -X -A -t -d '" + GetParam().url +
		                                "' -c 'SELECT string_agg(token::text, chr(32) ORDER BY token) FROM " +
		                                table + "'"),
		          std::to_string(a) + " " + std::to_string(writer->token()) + "\n")
		    << "rows written: the reader's before the freeze and the writer's, nothing after";
		EXPECT_EQ(psql("DROP TABLE " + table), 0);
	}
	EXPECT_TRUE(writer->release());
}

// A holder killed (SIGKILL) with its permit: the permit comes back after its
// TTL (every provider here keeps a grant until its TTL or its session's
// timeout, which the TTL sets), to the waiter, with a higher token.
TEST_P(Sharing, AKilledHoldersPermitComesBackAfterItsTtl)
{
	if (!has_semaphore() || !has_server())
		return; // without semaphore: the refusal cases; memory: its grants end with its process
	auto r = unique_resource();
	auto w = hold_worker(GetParam().url, r, "exclusive", 2, 2000);
	auto a = held_token(w.line());
	ASSERT_GT(a, 0) << "the worker's permit was not granted";
	auto mine = in_other_thread([&] { return locker->acquire(r, permit(2, 10s)); });
	ASSERT_TRUE(mine) << mine.error();
	auto third = queued(*locker, r, permit(2, 10s, 2000ms + expiry_slack() + 3s));
	EXPECT_FALSE(ready(third, 300ms)) << "a third permit of 2 was granted";
	auto killed = std::chrono::steady_clock::now();
	w.signal(SIGKILL);
	auto got = third.get();
	ASSERT_TRUE(got) << got.error();
	EXPECT_GT(got->token(), std::max<long long>(a, mine->token()));
	EXPECT_LT(std::chrono::steady_clock::now() - killed, 2000ms + expiry_slack()) << "the permit came back late";
	w.reap();
}

TEST_P(Sharing, AMismatchedLimitIsRefusedAndChangesNothing)
{
	auto r = unique_resource();
	auto p = in_other_thread([&] { return locker->acquire(r, permit(3, 10s)); });
	if (lacks(has_semaphore(), p))
		return;
	ASSERT_TRUE(p) << p.error();
	for (auto limit : {2u, 4u}) {
		auto other = in_other_thread([&] { return locker->acquire(r, permit(limit, 10s, 2s)); });
		ASSERT_FALSE(other) << "limit " << limit << " granted beside limit 3";
		EXPECT_EQ(other.error().code, Errc::invalid_argument) << other.error();
	}
	auto lock = in_other_thread([&] { return locker->acquire(r, exclusive(10s, 2s)); });
	ASSERT_FALSE(lock) << "a lock granted beside a permit";
	EXPECT_EQ(lock.error().code, Errc::invalid_argument) << lock.error();
	// the semaphore is as it was: two more permits, then full
	auto q = in_other_thread([&] { return locker->acquire(r, permit(3, 10s)); });
	auto s = in_other_thread([&] { return locker->acquire(r, permit(3, 10s)); });
	EXPECT_TRUE(q) << q.error();
	EXPECT_TRUE(s) << s.error();
	auto full = in_other_thread([&] { return locker->try_acquire(r, permit(3, 10s)); });
	ASSERT_FALSE(full);
	EXPECT_EQ(full.error().code, Errc::timeout) << full.error();

	// a semaphore request on a resource held as a lock
	auto r2 = unique_resource();
	auto l2 = in_other_thread([&] { return locker->acquire(r2, exclusive(10s)); });
	ASSERT_TRUE(l2) << l2.error();
	auto p2 = in_other_thread([&] { return locker->acquire(r2, permit(2, 10s, 2s)); });
	ASSERT_FALSE(p2) << "a permit granted beside a lock";
	EXPECT_EQ(p2.error().code, Errc::invalid_argument) << p2.error();
}

INSTANTIATE_TEST_SUITE_P(Providers, Sharing, ::testing::ValuesIn(providers_from_env()),
                         [](const ::testing::TestParamInfo<Provider> &info) { return info.param.name; });

} // namespace
