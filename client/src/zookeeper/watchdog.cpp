// zookeeper/watchdog.cpp -- the watchdog of a locker's grants (watchdog.hpp).
#include "zookeeper/watchdog.hpp"

#include <optional>

namespace pglease::detail::zookeeper {

namespace {

// look -- w's session ends if its deadline has passed; else the time to
// look again (nullopt: released or ended, nothing to watch)
std::optional<Clock::time_point>
look(Watchdog::Watched &w) noexcept
{
	std::unique_lock<std::mutex> lk(w.mu);
	if (!w.session)
		return std::nullopt;
	if (Clock::now() < w.deadline)
		return w.deadline;
	auto ending = std::move(w.session);
	lk.unlock();
	Session::dispose(std::move(ending));
	return std::nullopt;
}

} // namespace

Watchdog::~Watchdog()
{
	{
		std::lock_guard<std::mutex> lk(mu_);
		stopping_ = true;
	}
	cv_.notify_all();
	if (thread_.joinable())
		thread_.join();
}

void
Watchdog::watch(const std::shared_ptr<Watched> &w, Clock::time_point due) noexcept
{
	try {
		std::lock_guard<std::mutex> lk(mu_);
		if (stopping_)
			return;
		if (due_.size() >= sweep_at_) { // released grants' entries, not yet due
			for (auto it = due_.begin(); it != due_.end();)
				it = it->second.expired() ? due_.erase(it) : std::next(it);
			sweep_at_ = std::max<std::size_t>(1024, 2 * due_.size());
		}
		due_.emplace(due, w);
		if (!thread_.joinable())
			thread_ = std::thread([this] { run(); });
		cv_.notify_all();
	} catch (...) {
		// out of memory or threads: this grant's session then ends when it
		// expires server-side, one TTL after the last renewal
	}
}

// run -- the thread: each grant looked at when due, with no lock held
void
Watchdog::run() noexcept
{
	std::unique_lock<std::mutex> lk(mu_);
	while (!stopping_) {
		const auto now = Clock::now();
		if (due_.empty() || due_.begin()->first > now) {
			auto until = due_.empty() ? now + std::chrono::hours{1}
			                          : std::min(due_.begin()->first, now + std::chrono::hours{1});
			cv_.wait_until(lk, until);
			continue;
		}
		auto w = due_.begin()->second.lock();
		due_.erase(due_.begin());
		if (!w)
			continue;
		lk.unlock();
		auto again = look(*w);
		lk.lock();
		if (again) {
			try {
				due_.emplace(*again, std::move(w));
			} catch (...) {
			}
		}
	}
}

} // namespace pglease::detail::zookeeper
