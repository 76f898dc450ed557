// detail/backoff.cpp -- the providers' jittered exponential backoff
// (backoff.hpp says why it has a floor and jitter).
#include "detail/backoff.hpp"

#include <algorithm>
#include <random>

namespace pglease::detail {

namespace {

using std::chrono::milliseconds;

constexpr milliseconds floor_delay{1};

// jitter -- uniform in [low, high]; one generator per thread, so no lock and
// no seeding per Backoff (a waiting acquire makes one per call)
milliseconds
jitter(milliseconds low, milliseconds high) noexcept
{
	thread_local std::mt19937_64 rng{std::random_device{}()};
	std::uniform_int_distribution<long long> spread(low.count(), high.count());
	return milliseconds{spread(rng)};
}

} // namespace

Backoff::Backoff(milliseconds first, milliseconds cap) noexcept
    : first_(std::max(first, floor_delay)), cap_(std::max(cap, floor_delay)), current_(first_)
{
}

milliseconds
Backoff::next() noexcept
{
	milliseconds d = current_;
	current_ = d > cap_ / 2 ? cap_ : std::min(d * 2, cap_);
	return jitter(std::max(d / 2, floor_delay), d);
}

void
Backoff::reset() noexcept
{
	current_ = first_;
}

} // namespace pglease::detail
