// redis/waker.hpp -- the wake-ups of a locker's waiting calls (issue 38):
// ONE subscriber connection per locker, whatever the number of waiting
// calls and resources, instead of a connection per waiting call.  A
// reader thread owns the connection: it SUBSCRIBEs to a channel when a
// call first waits on it, keeps it while calls wait and for `linger` after
// the last (a hot resource's waiters come back at once), reads the
// messages and wakes the calls; it reconnects after an error (the calls
// meanwhile wake by their own poll), and ends its connection when no
// channel is left.  Messages carry what release.lua says: "released", or
// "turn:<holder>" when the lock's queue names whose turn it is, so the
// other waiters sleep on.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "redis/node.hpp"

namespace pglease::detail::redis {

class Waker {
public:
	using Clock = std::chrono::steady_clock;
	/// How long a channel stays subscribed after its last waiting call.
	static constexpr std::chrono::seconds linger{5};
	/// The reader's longest read between looks at new channels: a new
	/// channel is subscribed within it.
	static constexpr std::chrono::milliseconds tick{10};

	/// node outlives the waker (the locker declares it first).
	explicit Waker(Node &node) noexcept : node_(node) {}
	~Waker();
	Waker(const Waker &) = delete;
	Waker &operator=(const Waker &) = delete;

	/// A waiting call's interest in one channel, while it waits.
	class Interest {
	public:
		Interest(Waker &waker, std::string channel);
		~Interest();
		Interest(const Interest &) = delete;
		Interest &operator=(const Interest &) = delete;
		/// The messages counted so far, and whether the channel is
		/// subscribed: a wait from here misses no message only then.
		[[nodiscard]] std::pair<std::uint64_t, bool> mark() const noexcept;
		/// Block until the channel is subscribed (true) or until.
		bool subscribed(Clock::time_point until) noexcept;
		/// Block until a message after seen that accept takes (true), or until.
		bool wait(std::uint64_t seen, const std::function<bool(std::string_view)> &accept,
		          Clock::time_point until) noexcept;

	private:
		Waker &waker_;
		std::string channel_;
	};

	/// Whether channel is subscribed or being subscribed (a call waited on
	/// it lately): a new call may then join it before its first try.
	[[nodiscard]] bool known(const std::string &channel) noexcept;

private:
	struct Channel {
		int waiters = 0;
		bool sent = false;      // SUBSCRIBE sent on the current connection
		bool confirmed = false; // and confirmed
		std::uint64_t count = 0; // messages so far
		std::deque<std::pair<std::uint64_t, std::string>> recent; // the last few
		Clock::time_point idle_since{};
	};

	void run() noexcept;
	bool prepare(std::unique_lock<std::mutex> &lk, std::optional<Subscriber> &sub,
	             std::vector<std::string> &fresh) noexcept;
	bool connect(std::optional<Subscriber> &sub, std::vector<std::string> &fresh) noexcept;
	void deliver(const Message &m) noexcept;

	Node &node_;
	std::mutex mu_;
	std::condition_variable cv_; // the calls' wake-ups, and the reader's when idle
	std::map<std::string, Channel> channels_;
	bool stopping_ = false;
	std::thread reader_;
};

} // namespace pglease::detail::redis
