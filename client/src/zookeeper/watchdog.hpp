// zookeeper/watchdog.hpp -- the one thread of a locker that ends the
// sessions of its grants not renewed by their local deadline: closing a
// session deletes its nodes, so an unrenewed lease ends server-side when it
// ends locally, as with the other providers.  A thread per grant cost a
// clone and a join per acquire; this one starts with the locker's first
// grant and ends with the locker.
//
// Locking: Watchdog::mu_ guards the schedule; Watched::mu guards a grant's
// session and deadline (its grant takes it around every use of the
// session).  A grant may call watch() holding its Watched::mu; the thread
// never takes a Watched::mu while holding mu_.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "zookeeper/session.hpp"

namespace pglease::detail::zookeeper {

class Watchdog {
public:
	/// What the watchdog sees of a grant.
	struct Watched {
		std::mutex mu;
		std::unique_ptr<Session> session; ///< null once released or ended
		Clock::time_point deadline;       ///< the lease's local deadline
	};

	Watchdog() = default;
	~Watchdog();
	Watchdog(const Watchdog &) = delete;
	Watchdog &operator=(const Watchdog &) = delete;

	/// Look at w at `due` (its deadline now): if its deadline has passed by
	/// then, its session is disposed of; if it was renewed, looked at again
	/// at its new deadline.  A deadline moved earlier needs another call.
	void watch(const std::shared_ptr<Watched> &w, Clock::time_point due) noexcept;

private:
	void run() noexcept;

	std::mutex mu_;
	std::condition_variable cv_;
	bool stopping_ = false;
	std::multimap<Clock::time_point, std::weak_ptr<Watched>> due_;
	std::size_t sweep_at_ = 1024; // forget released grants' entries beyond this many
	std::thread thread_;
};

} // namespace pglease::detail::zookeeper
