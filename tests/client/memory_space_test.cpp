// memory_space_test.cpp -- the in-memory provider's lock table (LockSpace)
// and its registry of named spaces: grants, tokens, expiry, renew, release,
// FIFO waits and their bounds.  No server; every wait is bounded, and timings
// are checked as relative facts with a grace for a loaded machine.
#include "memory/space.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using pglease::Errc;
using pglease::detail::memory::lock_space;
using pglease::detail::memory::LockSpace;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds long_ttl = 10s;
constexpr milliseconds long_wait = 5s;
/// Scheduling slack allowed on top of an expected instant.
constexpr milliseconds grace = 150ms;

milliseconds
since(Clock::time_point start)
{
	return std::chrono::duration_cast<milliseconds>(Clock::now() - start);
}

/// Wait (bounded) until n acquires are queued on resource.
::testing::AssertionResult
QueuedWithin(const LockSpace &space, const std::string &resource, std::size_t n)
{
	const auto start = Clock::now();
	while (space.waiters(resource) != n) {
		if (since(start) > long_wait)
			return ::testing::AssertionFailure()
			       << space.waiters(resource) << " waiters on " << resource << ", expected " << n;
		std::this_thread::sleep_for(1ms);
	}
	return ::testing::AssertionSuccess();
}

TEST(MemorySpace, contended_try_times_out_and_release_passes_on_a_higher_token)
{
	LockSpace space;
	auto first = space.acquire("r", "a", long_ttl, 0ms);
	ASSERT_TRUE(first) << first.error();

	auto contended = space.acquire("r", "b", long_ttl, 0ms);
	ASSERT_FALSE(contended) << "a try on a held resource was granted";
	EXPECT_EQ(contended.error().code, Errc::timeout);

	auto released = space.release("r", *first);
	ASSERT_TRUE(released && *released) << "release of the current grant did not end it";
	EXPECT_FALSE(space.held("r", *first));

	auto second = space.acquire("r", "b", long_ttl, 0ms);
	ASSERT_TRUE(second) << second.error();
	EXPECT_GT(*second, *first) << "the token of the next grant went backwards";
}

TEST(MemorySpace, first_token_is_one_and_tokens_survive_the_resource_going_idle)
{
	LockSpace space;
	auto first = space.acquire("r", "a", long_ttl, 0ms);
	ASSERT_TRUE(first);
	EXPECT_EQ(*first, 1);
	ASSERT_TRUE(*space.release("r", *first));
	EXPECT_EQ(space.waiters("r"), 0u);

	// the idle entry is gone; its successor must still get a higher token
	auto second = space.acquire("r", "a", long_ttl, 0ms);
	ASSERT_TRUE(second);
	EXPECT_GT(*second, *first);
}

TEST(MemorySpace, expired_grant_is_taken_over_at_its_expiry_with_a_higher_token)
{
	LockSpace space;
	constexpr milliseconds ttl = 100ms;
	auto first = space.acquire("r", "a", ttl, 0ms);
	ASSERT_TRUE(first);

	const auto start = Clock::now();
	auto second = space.acquire("r", "b", long_ttl, long_wait);
	const auto waited = since(start);
	ASSERT_TRUE(second) << second.error();
	EXPECT_GT(*second, *first);
	EXPECT_GE(waited, ttl - 10ms) << "taken over before the grant expired";
	EXPECT_LT(waited, ttl + grace) << "the waiter was not woken at the grant's expiry";
	EXPECT_FALSE(space.held("r", *first));
	EXPECT_TRUE(space.held("r", *second));
}

TEST(MemorySpace, renew_keeps_a_grant_past_its_original_ttl)
{
	LockSpace space;
	constexpr milliseconds ttl = 100ms;
	auto token = space.acquire("r", "a", ttl, 0ms);
	ASSERT_TRUE(token);

	std::this_thread::sleep_for(ttl / 2);
	auto renewed = space.renew("r", *token, 4 * ttl);
	ASSERT_TRUE(renewed && *renewed) << "renew of the current grant failed";

	std::this_thread::sleep_for(ttl);
	EXPECT_TRUE(space.held("r", *token)) << "the grant ended at its original expiry";
	auto contended = space.acquire("r", "b", long_ttl, 0ms);
	EXPECT_FALSE(contended) << "another holder took a renewed grant";
}

TEST(MemorySpace, stale_token_renew_and_release_return_false_and_change_nothing)
{
	LockSpace space;
	auto stale = space.acquire("r", "a", long_ttl, 0ms);
	ASSERT_TRUE(stale);
	ASSERT_TRUE(*space.release("r", *stale));
	auto current = space.acquire("r", "b", long_ttl, 0ms);
	ASSERT_TRUE(current);

	auto renewed = space.renew("r", *stale, long_ttl);
	ASSERT_TRUE(renewed);
	EXPECT_FALSE(*renewed) << "renew of a released token succeeded";
	auto released = space.release("r", *stale);
	ASSERT_TRUE(released);
	EXPECT_FALSE(*released) << "release of a released token succeeded";
	EXPECT_TRUE(space.held("r", *current)) << "a stale token disturbed the current grant";
	EXPECT_FALSE(space.held("r", *stale));

	auto unknown = space.release("never-granted", *current);
	ASSERT_TRUE(unknown);
	EXPECT_FALSE(*unknown);
}

TEST(MemorySpace, renew_and_release_of_an_expired_grant_return_false)
{
	LockSpace space;
	constexpr milliseconds ttl = 30ms;
	auto token = space.acquire("r", "a", ttl, 0ms);
	ASSERT_TRUE(token);
	std::this_thread::sleep_for(2 * ttl);

	auto renewed = space.renew("r", *token, long_ttl);
	ASSERT_TRUE(renewed);
	EXPECT_FALSE(*renewed) << "renew re-granted an expired grant";
	EXPECT_FALSE(space.held("r", *token));
	auto released = space.release("r", *token);
	ASSERT_TRUE(released);
	EXPECT_FALSE(*released);

	auto next = space.acquire("r", "b", long_ttl, 0ms);
	ASSERT_TRUE(next) << "the expired resource was not free";
	EXPECT_GT(*next, *token);
}

TEST(MemorySpace, same_holder_reacquire_returns_the_same_token_and_a_new_expiry)
{
	LockSpace space;
	constexpr milliseconds ttl = 100ms;
	auto first = space.acquire("r", "a", ttl, 0ms);
	ASSERT_TRUE(first);
	std::this_thread::sleep_for(ttl / 2);

	auto again = space.acquire("r", "a", 4 * ttl, 0ms);
	ASSERT_TRUE(again) << again.error();
	EXPECT_EQ(*again, *first);

	std::this_thread::sleep_for(ttl);
	EXPECT_TRUE(space.held("r", *first)) << "the re-acquire did not extend the grant";
}

TEST(MemorySpace, waiters_are_granted_in_arrival_order)
{
	LockSpace space;
	constexpr int n = 5;
	auto holder = space.acquire("r", "holder", long_ttl, 0ms);
	ASSERT_TRUE(holder);

	std::mutex mu;
	std::vector<int> order;
	std::vector<std::int64_t> tokens;
	std::vector<std::thread> threads;
	for (int i = 0; i < n; ++i) {
		threads.emplace_back([&, i] {
			auto token = space.acquire("r", "waiter " + std::to_string(i), long_ttl, long_wait);
			if (!token)
				return;
			{
				std::lock_guard<std::mutex> lock(mu);
				order.push_back(i);
				tokens.push_back(*token);
			}
			(void)space.release("r", *token);
		});
		ASSERT_TRUE(QueuedWithin(space, "r", static_cast<std::size_t>(i + 1)));
	}
	ASSERT_TRUE(*space.release("r", *holder));
	for (auto &thread : threads)
		thread.join();

	ASSERT_EQ(order.size(), static_cast<std::size_t>(n)) << "not every waiter was granted";
	for (int i = 0; i < n; ++i)
		EXPECT_EQ(order[i], i) << "grant " << i << " went to waiter " << order[i];
	for (int i = 1; i < n; ++i)
		EXPECT_GT(tokens[i], tokens[i - 1]);
}

TEST(MemorySpace, newcomer_try_does_not_barge_past_a_queued_waiter)
{
	LockSpace space;
	auto holder = space.acquire("r", "holder", long_ttl, 0ms);
	ASSERT_TRUE(holder);

	pglease::Result<std::int64_t> queued = pglease::Error{};
	std::thread waiter([&] { queued = space.acquire("r", "queued", long_ttl, long_wait); });
	ASSERT_TRUE(QueuedWithin(space, "r", 1));

	// released and, at once, tried by a newcomer: the queued waiter may not
	// have run yet, but the resource is already its
	ASSERT_TRUE(*space.release("r", *holder));
	auto newcomer = space.acquire("r", "newcomer", long_ttl, 0ms);
	waiter.join();
	EXPECT_FALSE(newcomer) << "a newcomer's try was granted ahead of a queued waiter";
	ASSERT_TRUE(queued) << "the queued waiter was not granted: " << queued.error();
	EXPECT_TRUE(space.held("r", *queued));
}

TEST(MemorySpace, waiter_is_woken_by_release_not_at_its_deadline)
{
	LockSpace space;
	auto holder = space.acquire("r", "holder", long_ttl, 0ms);
	ASSERT_TRUE(holder);

	pglease::Result<std::int64_t> granted = pglease::Error{};
	Clock::time_point granted_at;
	std::thread waiter([&] {
		granted = space.acquire("r", "waiter", long_ttl, long_wait);
		granted_at = Clock::now();
	});
	ASSERT_TRUE(QueuedWithin(space, "r", 1));
	const auto released_at = Clock::now();
	ASSERT_TRUE(*space.release("r", *holder));
	waiter.join();

	ASSERT_TRUE(granted) << granted.error();
	const auto delay = std::chrono::duration_cast<milliseconds>(granted_at - released_at);
	EXPECT_LT(delay, grace) << "granted " << delay.count() << " ms after the release (wait was "
	                        << long_wait.count() << " ms)";
}

TEST(MemorySpace, wait_returns_timeout_within_wait_plus_a_grace)
{
	LockSpace space;
	auto holder = space.acquire("r", "holder", long_ttl, 0ms);
	ASSERT_TRUE(holder);

	constexpr milliseconds wait = 100ms;
	const auto start = Clock::now();
	auto late = space.acquire("r", "waiter", long_ttl, wait);
	const auto waited = since(start);
	ASSERT_FALSE(late);
	EXPECT_EQ(late.error().code, Errc::timeout);
	EXPECT_GE(waited, wait) << "gave up before its wait";
	EXPECT_LT(waited, wait + grace) << "overran its wait";
	EXPECT_EQ(space.waiters("r"), 0u) << "a timed-out waiter stayed queued";
}

TEST(MemorySpace, timed_out_front_waiter_hands_the_queue_on)
{
	LockSpace space;
	auto holder = space.acquire("r", "holder", long_ttl, 0ms);
	ASSERT_TRUE(holder);

	pglease::Result<std::int64_t> second = pglease::Error{};
	std::thread first_waiter([&] { (void)space.acquire("r", "short", long_ttl, 50ms); });
	ASSERT_TRUE(QueuedWithin(space, "r", 1));
	std::thread second_waiter([&] { second = space.acquire("r", "long", long_ttl, long_wait); });
	first_waiter.join(); // timed out
	ASSERT_TRUE(QueuedWithin(space, "r", 1));

	ASSERT_TRUE(*space.release("r", *holder));
	second_waiter.join();
	ASSERT_TRUE(second) << "the waiter behind a timed-out one was not granted: " << second.error();
}

TEST(MemorySpace, next_waiter_takes_over_at_the_expiry_of_the_grant_before_it)
{
	LockSpace space;
	auto holder = space.acquire("r", "holder", long_ttl, 0ms);
	ASSERT_TRUE(holder);

	// the first waiter keeps its grant (short ttl) and never releases: the
	// second must wake at that grant's expiry, not at its own deadline
	constexpr milliseconds short_ttl = 100ms;
	pglease::Result<std::int64_t> first = pglease::Error{};
	pglease::Result<std::int64_t> second = pglease::Error{};
	Clock::time_point second_at;
	std::thread first_waiter([&] { first = space.acquire("r", "first", short_ttl, long_wait); });
	ASSERT_TRUE(QueuedWithin(space, "r", 1));
	std::thread second_waiter([&] {
		second = space.acquire("r", "second", long_ttl, long_wait);
		second_at = Clock::now();
	});
	ASSERT_TRUE(QueuedWithin(space, "r", 2));

	const auto released_at = Clock::now();
	ASSERT_TRUE(*space.release("r", *holder));
	first_waiter.join();
	second_waiter.join();
	ASSERT_TRUE(first) << first.error();
	ASSERT_TRUE(second) << second.error();
	EXPECT_GT(*second, *first);
	const auto delay = std::chrono::duration_cast<milliseconds>(second_at - released_at);
	EXPECT_GE(delay, short_ttl - 10ms);
	EXPECT_LT(delay, short_ttl + grace) << "the second waiter missed the first grant's expiry";
}

TEST(MemorySpace, unbounded_ttl_and_wait_saturate_instead_of_overflowing)
{
	LockSpace space;
	auto forever = space.acquire("r", "a", milliseconds::max(), 0ms);
	ASSERT_TRUE(forever) << forever.error();
	EXPECT_TRUE(space.held("r", *forever));

	pglease::Result<std::int64_t> patient = pglease::Error{};
	std::thread waiter([&] { patient = space.acquire("r", "b", long_ttl, milliseconds::max()); });
	ASSERT_TRUE(QueuedWithin(space, "r", 1));
	ASSERT_TRUE(*space.release("r", *forever));
	waiter.join();
	ASSERT_TRUE(patient) << patient.error();
	EXPECT_GT(*patient, *forever);
}

TEST(MemorySpace, named_spaces_are_separate_and_the_same_name_is_shared)
{
	auto one = lock_space("memory_space_test one");
	auto other = lock_space("memory_space_test other");
	auto one_again = lock_space("memory_space_test one");
	ASSERT_TRUE(one && other && one_again);
	EXPECT_EQ(one, one_again);
	EXPECT_NE(one, other);
	EXPECT_NE(lock_space(""), one);
	EXPECT_EQ(lock_space(""), lock_space(""));

	auto in_one = one->acquire("r", "a", long_ttl, 0ms);
	ASSERT_TRUE(in_one);
	auto in_other = other->acquire("r", "b", long_ttl, 0ms);
	EXPECT_TRUE(in_other) << "a grant in one space blocked another space";

	auto shared = one_again->acquire("r", "b", long_ttl, 0ms);
	EXPECT_FALSE(shared) << "the same name did not share its grants";
	EXPECT_TRUE(one_again->held("r", *in_one));
	EXPECT_TRUE(*one->release("r", *in_one));
	EXPECT_TRUE(*other->release("r", *in_other));
}

TEST(MemorySpace, invalid_arguments_are_refused)
{
	LockSpace space;
	auto expect_invalid = [](const auto &result, const char *what) {
		ASSERT_FALSE(result) << what << " was accepted";
		EXPECT_EQ(result.error().code, Errc::invalid_argument) << what << ": " << result.error();
	};
	expect_invalid(space.acquire("", "a", long_ttl, 0ms), "empty resource");
	expect_invalid(space.acquire("r", "", long_ttl, 0ms), "empty holder");
	expect_invalid(space.acquire("r", "a", 0ms, 0ms), "zero ttl");
	expect_invalid(space.acquire("r", "a", -1ms, 0ms), "negative ttl");
	expect_invalid(space.acquire("r", "a", long_ttl, -1ms), "negative wait");
	expect_invalid(space.renew("", 1, long_ttl), "renew of an empty resource");
	expect_invalid(space.renew("r", 1, 0ms), "renew with zero ttl");
	expect_invalid(space.release("", 1), "release of an empty resource");
	EXPECT_EQ(space.waiters("r"), 0u);

	auto after = space.acquire("r", "a", long_ttl, 0ms);
	ASSERT_TRUE(after);
	EXPECT_EQ(*after, 1) << "a refused request used up a token";
}

} // namespace
