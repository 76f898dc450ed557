// zookeeper/pool.cpp -- the idle sessions of released grants (pool.hpp).
#include "zookeeper/pool.hpp"

namespace pglease::detail::zookeeper {

SessionPool::~SessionPool()
{
	for (auto &idle : idle_)
		Session::dispose(std::move(idle.second));
}

std::unique_ptr<Session>
SessionPool::take(milliseconds ttl) noexcept
{
	std::vector<std::unique_ptr<Session>> stale; // disposed of outside the lock
	std::unique_ptr<Session> found;
	{
		std::lock_guard<std::mutex> lk(mu_);
		for (auto it = idle_.begin(); it != idle_.end() && !found;) {
			if (it->first != ttl) {
				++it;
				continue;
			}
			auto s = std::move(it->second);
			it = idle_.erase(it);
			if (s->connected() && !s->expired())
				found = std::move(s);
			else
				stale.push_back(std::move(s));
		}
	}
	for (auto &s : stale)
		Session::dispose(std::move(s));
	return found;
}

void
SessionPool::give(std::unique_ptr<Session> session, milliseconds ttl) noexcept
{
	try {
		std::lock_guard<std::mutex> lk(mu_);
		if (idle_.size() < max_idle_) {
			idle_.emplace_back(ttl, std::move(session));
			return;
		}
	} catch (...) {
	}
	Session::dispose(std::move(session));
}

} // namespace pglease::detail::zookeeper
