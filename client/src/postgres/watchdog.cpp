// postgres/watchdog.cpp -- CallDeadline: one thread per process shuts down
// the sockets of calls that outlived their deadlines.
//
// Locking: Watchdog::mu guards the table.  A socket is shut down only under
// mu and only while its call is registered; ~CallDeadline unregisters under
// mu before the caller can close the socket, so a closed (and reused) file
// descriptor is never touched.
#include "postgres/watchdog.hpp"

#include <sys/socket.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "detail/provider.hpp"

namespace pglease::detail {

namespace {

struct Watched {
	int fd;
	Clock::time_point deadline;
	bool fired;
};

struct Watchdog {
	std::mutex mu;
	std::condition_variable cv;
	std::map<std::uint64_t, Watched> calls;
	std::uint64_t next_id = 1;
	bool running = false;

	void loop()
	{
		std::unique_lock<std::mutex> lk(mu);
		for (;;) {
			auto now = Clock::now();
			auto wake = now + std::chrono::seconds{60};
			for (auto &[id, call] : calls) {
				if (call.fired)
					continue;
				if (call.deadline <= now) {
					::shutdown(call.fd, SHUT_RDWR);
					call.fired = true;
				} else
					wake = std::min(wake, call.deadline);
			}
			cv.wait_until(lk, wake);
		}
	}
};

// watchdog -- the process's one watchdog; its thread runs until exit (it
// is never destroyed, so no static destructor waits for it)
Watchdog &
watchdog()
{
	static Watchdog *w = new Watchdog;
	return *w;
}

} // namespace

CallDeadline::CallDeadline(int fd, std::chrono::milliseconds limit) noexcept
{
	if (fd < 0)
		return;
	try {
		Watchdog &w = watchdog();
		std::lock_guard<std::mutex> lk(w.mu);
		if (!w.running) {
			std::thread([&w] { w.loop(); }).detach();
			w.running = true;
		}
		id_ = w.next_id++;
		w.calls.emplace(id_, Watched{fd, deadline_after(Clock::now(), limit), false});
		w.cv.notify_one();
	} catch (...) {
		id_ = 0; // unwatched: bounded by the server's statement_timeout alone
	}
}

CallDeadline::~CallDeadline()
{
	if (id_ == 0)
		return;
	Watchdog &w = watchdog();
	std::lock_guard<std::mutex> lk(w.mu);
	w.calls.erase(id_);
}

bool
CallDeadline::fired() const noexcept
{
	if (id_ == 0)
		return false;
	Watchdog &w = watchdog();
	std::lock_guard<std::mutex> lk(w.mu);
	auto it = w.calls.find(id_);
	return it != w.calls.end() && it->second.fired;
}

} // namespace pglease::detail
