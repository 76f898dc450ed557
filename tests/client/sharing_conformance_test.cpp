// sharing_conformance_test.cpp -- reader-writer leases and semaphores
// (docs/shared-leases.md): the same behaviours for every provider behind
// pglease::connect(url) that has them, each against its real server (the
// providers of conformance.hpp; this file is part of conformance_test).  A
// provider whose capabilities() lack shared_mode or semaphore is asserted to
// refuse such requests before any I/O, never skipped.
#include <algorithm>
#include <chrono>
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
