// redis/waker.cpp -- one subscriber connection per locker and its reader
// thread (redis/waker.hpp).
#include "redis/waker.hpp"

#include <algorithm>

namespace pglease::detail::redis {

namespace {

constexpr std::size_t kept_messages = 32;                  // per channel, for the calls that look late
constexpr std::chrono::milliseconds open_timeout{1000};    // a connect and its SUBSCRIBE
constexpr std::chrono::milliseconds reopen_pause{100};     // after a failed one

} // namespace

Waker::~Waker()
{
	{
		std::lock_guard<std::mutex> lk(mu_);
		stopping_ = true;
	}
	cv_.notify_all();
	if (reader_.joinable())
		reader_.join();
}

bool
Waker::known(const std::string &channel) noexcept
{
	std::lock_guard<std::mutex> lk(mu_);
	return channels_.count(channel) > 0;
}

Waker::Interest::Interest(Waker &waker, std::string channel) : waker_(waker), channel_(std::move(channel))
{
	std::lock_guard<std::mutex> lk(waker_.mu_);
	waker_.channels_[channel_].waiters++;
	if (!waker_.reader_.joinable() && !waker_.stopping_)
		waker_.reader_ = std::thread([this_waker = &waker_] { this_waker->run(); });
	waker_.cv_.notify_all();
}

Waker::Interest::~Interest()
{
	std::lock_guard<std::mutex> lk(waker_.mu_);
	auto it = waker_.channels_.find(channel_);
	if (it != waker_.channels_.end() && --it->second.waiters == 0)
		it->second.idle_since = Clock::now();
}

std::pair<std::uint64_t, bool>
Waker::Interest::mark() const noexcept
{
	std::lock_guard<std::mutex> lk(waker_.mu_);
	const Channel &c = waker_.channels_[channel_];
	return {c.count, c.confirmed};
}

bool
Waker::Interest::subscribed(Clock::time_point until) noexcept
{
	std::unique_lock<std::mutex> lk(waker_.mu_);
	return waker_.cv_.wait_until(lk, until, [&] { return waker_.channels_[channel_].confirmed; });
}

bool
Waker::Interest::wait(std::uint64_t seen, const std::function<bool(std::string_view)> &accept,
                      Clock::time_point until) noexcept
{
	std::unique_lock<std::mutex> lk(waker_.mu_);
	auto woken = [&] {
		const Channel &c = waker_.channels_[channel_];
		if (c.count == seen)
			return false;
		// more came than are kept: one of them may have been ours
		if (c.recent.empty() || c.recent.front().first > seen + 1)
			return true;
		return std::any_of(c.recent.begin(), c.recent.end(),
		                   [&](const auto &m) { return m.first > seen && accept(m.second); });
	};
	return waker_.cv_.wait_until(lk, until, woken);
}

// prepare -- (under mu_) forget the channels idle past linger, wait while
// none is left (the connection goes with the last), and name in fresh those
// to subscribe on the connection: all of them when it is gone.  false: stopping
bool
Waker::prepare(std::unique_lock<std::mutex> &lk, std::optional<Subscriber> &sub,
               std::vector<std::string> &fresh) noexcept
{
	for (;;) {
		if (stopping_)
			return false;
		auto now = Clock::now();
		for (auto it = channels_.begin(); it != channels_.end();)
			it = it->second.waiters == 0 && now - it->second.idle_since > linger ? channels_.erase(it)
			                                                                    : std::next(it);
		if (!channels_.empty())
			break;
		sub.reset();
		cv_.wait(lk);
	}
	const bool gone = !sub || !sub->usable();
	fresh.clear();
	for (auto &[name, c] : channels_) {
		if (gone)
			c.sent = c.confirmed = false;
		if (!c.sent)
			fresh.push_back(name);
	}
	return true;
}

// connect -- a new subscriber, SUBSCRIBEd to the first fresh channel (the
// others are sent by run).  false: none to be had now
bool
Waker::connect(std::optional<Subscriber> &sub, std::vector<std::string> &fresh) noexcept
{
	sub.reset();
	auto opened = node_.subscribe(fresh.front(), open_timeout);
	if (!opened)
		return false;
	sub.emplace(std::move(*opened));
	{
		std::lock_guard<std::mutex> lk(mu_);
		if (auto it = channels_.find(fresh.front()); it != channels_.end())
			it->second.sent = it->second.confirmed = true;
	}
	cv_.notify_all();
	fresh.erase(fresh.begin());
	return true;
}

void
Waker::deliver(const Message &m) noexcept
{
	try {
		std::lock_guard<std::mutex> lk(mu_);
		auto it = channels_.find(m.channel);
		if (it == channels_.end())
			return;
		Channel &c = it->second;
		if (m.subscribed) {
			c.confirmed = true;
		} else {
			c.recent.emplace_back(++c.count, m.payload);
			if (c.recent.size() > kept_messages)
				c.recent.pop_front();
		}
	} catch (...) {
		// out of memory: the calls wake by their poll
	}
	cv_.notify_all();
}

// run -- the reader thread: subscribe what is new, read for a tick, deliver
void
Waker::run() noexcept
{
	std::optional<Subscriber> sub;
	std::vector<std::string> fresh;
	for (;;) {
		{
			std::unique_lock<std::mutex> lk(mu_);
			if (!prepare(lk, sub, fresh))
				return;
		}
		if ((!sub || !sub->usable()) && !connect(sub, fresh)) {
			std::unique_lock<std::mutex> lk(mu_);
			cv_.wait_for(lk, reopen_pause, [&] { return stopping_; });
			continue;
		}
		if (!fresh.empty()) {
			std::vector<std::string_view> argv{"SUBSCRIBE"};
			argv.insert(argv.end(), fresh.begin(), fresh.end());
			if (!sub->send(argv))
				continue; // unusable: a new connection next
			std::lock_guard<std::mutex> lk(mu_);
			for (auto &name : fresh)
				if (auto it = channels_.find(name); it != channels_.end())
					it->second.sent = true;
		}
		auto m = sub->wait(tick);
		if (m && *m)
			deliver(**m);
	}
}

} // namespace pglease::detail::redis
