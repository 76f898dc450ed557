// redis/election.cpp -- leader election on one Redis node (redis://,
// rediss://, redis+sentinel://): the campaign, the leader's renewal,
// resignation and proclaim, the election's view, and observe by pub/sub.
//
// Recipe: an election is the lock recipe of redis/lock.cpp (the Redis
// distlock page's single-instance lock) with a value: the campaign script
// (campaign.lua) takes pglease:lock:<e> exactly as acquire does and, in the same script,
// sets pglease:value:<e> = "<term>:<since ms>:<value>" with the same PX; the
// leader's renewal extends both, its resignation deletes both.  The term is
// the lock's token (the pglease:token:<e> counter); since is the server's
// TIME when the term began.  The lock key alone says who leads: the value
// key counts only while its term is the lock's (a value left by an ended
// term is never shown), so a lock that expires or is broken (DEL) ends the
// leadership and its value together.  A lock key that holds a resource's
// readers or permits (a sorted set) leads nobody: "no leader", not
// WRONGTYPE.
//
// Epoch: terms strictly increase only while the node keeps its counter; a
// node restarted without its data counts from 1 again.  The campaign script
// keeps pglease:token:<e> NUL "epoch" beside the counter: a new one (the
// server's TIME in us) whenever it finds the counter new or the key missing.
// Every view carries it, and observe compares terms only within one epoch
// (client/src/election.cpp), so a follower shows the leader of a restarted
// node's term 1 rather than dropping it as older than the last term seen.
//
// Push: every campaign that grants, every proclaim and every resignation
// PUBLISHes on pglease:election:<e>.  An observer reads the view, SUBSCRIBEs,
// reads again (a change between the first read and the subscription is not
// missed), then sleeps until a message, the current grant's PTTL (an expiry
// publishes nothing), or a one-second re-read (a message lost to a
// reconnect, a failover to a replica, a grant broken by hand, or a
// subscription refused by the ACL: then polling once a second).  The
// subscription is kept for the locker's next observe of that election
// (Subscriptions, at most 30 s old: behind Sentinel the master may have
// moved), so a follower calling observe in a loop does not connect each time.
#include "redis/election.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <thread>

#include "detail/provider.hpp"
#include "redis/grant.hpp"
#include "redis/lua.hpp"

namespace pglease::detail::redis {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The longest sleep between two reads of an observer.
constexpr milliseconds recheck{1000};

const Script campaign_script{std::string{lua::campaign}};
const Script renew_leader_script{std::string{lua::renew_leader}};
const Script resign_script{std::string{lua::resign}};
const Script proclaim_script{std::string{lua::proclaim}};
const Script read_script{std::string{lua::read}};

// leading_integer -- the decimal integer s starts with, up to stop (or its
// end); nullopt when there is none or it does not fit
std::optional<std::int64_t>
leading_integer(std::string_view s, std::size_t &stop) noexcept
{
	std::int64_t n = 0;
	auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
	if (ec != std::errc{} || end == s.data())
		return std::nullopt;
	stop = static_cast<std::size_t>(end - s.data());
	return n;
}

// A read: the view and the lock's PTTL (ms; < 0 when none).
struct Read {
	LeaderView view;
	long long pttl = -2;
};

// view_of -- the read script's answer as a view: the lock names the term;
// the value key's value and since count only when its term is the lock's
Result<Read>
view_of(const Reply &reply, const Node &node)
{
	if (!reply.is_array() || reply.elements.size() != 5 || !reply.elements[3].is_integer())
		return Error{Errc::internal, "",
		             "redis " + to_string(node.endpoint()) + ": the election's read script answered no view"};
	const std::string &lock = reply.elements[0].text;
	const std::string &value = reply.elements[1].text;
	Read read;
	read.pttl = reply.elements[3].integer;
	read.view.epoch = reply.elements[4].text;
	std::size_t stop = 0;
	if (lock.empty()) {
		// nobody leads: the term that ended is at most the counter
		read.view.term = leading_integer(reply.elements[2].text, stop).value_or(0);
		return read;
	}
	auto term = leading_integer(lock, stop);
	if (!term || stop >= lock.size() || lock[stop] != ':')
		return Error{Errc::internal, "",
		             "redis " + to_string(node.endpoint()) +
		                 ": the lock holds no \"<token>:<holder>\" (damaged or foreign data)"};
	read.view.has_leader = true;
	read.view.term = *term;
	const std::string prefix = lock.substr(0, stop + 1);
	if (value.compare(0, prefix.size(), prefix) != 0)
		return read; // a plain lock on the name, or a value that outlived its term
	std::string_view rest{value};
	rest.remove_prefix(prefix.size());
	auto since = leading_integer(rest, stop);
	if (!since || stop >= rest.size() || rest[stop] != ':')
		return read;
	read.view.value = std::string{rest.substr(stop + 1)};
	read.view.since = std::chrono::system_clock::time_point{
	    std::chrono::duration_cast<std::chrono::system_clock::duration>(milliseconds{*since})};
	return read;
}

Result<Read>
read(Node &node, const Keys &keys, milliseconds timeout) noexcept
{
	try {
		auto reply = node.eval(read_script, {keys.lock, keys.value, keys.counter, keys.epoch}, {}, timeout);
		if (!reply)
			return reply.error();
		if (reply->is_error())
			return error_from_reply(*reply, node.endpoint());
		return view_of(*reply, node);
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

// left -- what is left before deadline, at most cap
milliseconds
left(Clock::time_point deadline, milliseconds cap) noexcept
{
	if (deadline == Clock::time_point::max())
		return cap;
	auto d = std::chrono::ceil<milliseconds>(deadline - Clock::now());
	return std::clamp(d, milliseconds{0}, cap);
}

} // namespace

Result<Reply>
ask_campaign(Node &node, const Keys &keys, std::string_view holder, std::string_view ttl,
             std::string_view value, milliseconds timeout) noexcept
{
	try {
		return node.eval(campaign_script, {keys.lock, keys.counter, keys.value, keys.epoch},
		                 {holder, ttl, value, keys.election}, timeout);
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

Result<bool>
renew_leader(Node &node, const Keys &keys, std::string_view grant, milliseconds ttl,
             milliseconds timeout) noexcept
{
	try {
		return acted(node.eval(renew_leader_script, {keys.lock, keys.value},
		                       {grant, "value", std::to_string(ttl.count())}, timeout),
		             node, keys);
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

Result<bool>
resign(Node &node, const Keys &keys, std::string_view grant, milliseconds timeout) noexcept
{
	try {
		return acted(node.eval(resign_script, {keys.lock, keys.value},
		                       {grant, "value", keys.released, keys.election}, timeout),
		             node, keys);
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

Result<bool>
proclaim(Node &node, const Keys &keys, std::string_view grant, std::string_view value,
         milliseconds timeout) noexcept
{
	try {
		std::string term_prefix{grant.substr(0, grant.find(':') + 1)};
		auto reply = node.eval(proclaim_script, {keys.lock, keys.value},
		                       {grant, term_prefix, value, keys.election}, timeout);
		if (!reply)
			return reply.error();
		if (reply->is_error())
			return error_from_reply(*reply, node.endpoint());
		if (!reply->is_integer())
			return Error{Errc::internal, "",
			             "redis " + to_string(node.endpoint()) + ": the proclaim script answered no integer"};
		return reply->integer == 1;
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

Result<LeaderView>
read_view(Node &node, const Keys &keys, milliseconds timeout) noexcept
{
	auto r = read(node, keys, timeout);
	if (!r)
		return r.error();
	return std::move(r->view);
}

std::optional<Subscription>
Subscriptions::take(std::string_view channel) noexcept
{
	try {
		std::lock_guard<std::mutex> lk(mu_);
		const auto too_old = Clock::now() - max_age;
		idle_.erase(std::remove_if(idle_.begin(), idle_.end(),
		                           [&](const Subscription &s) { return s.opened < too_old; }),
		            idle_.end());
		for (auto it = idle_.begin(); it != idle_.end(); ++it)
			if (it->subscriber.channel() == channel) {
				std::optional<Subscription> found{std::move(*it)};
				idle_.erase(it);
				return found;
			}
	} catch (...) {
		// a failed lock: no subscription to reuse
	}
	return std::nullopt;
}

void
Subscriptions::keep(Subscription s) noexcept
{
	if (!s.subscriber.usable() || s.opened < Clock::now() - max_age)
		return;
	try {
		std::lock_guard<std::mutex> lk(mu_);
		if (idle_.size() >= max_idle)
			idle_.erase(idle_.begin()); // the oldest kept
		idle_.push_back(std::move(s));
	} catch (...) {
		// not kept: the next call subscribes again
	}
}

// next_view -- read; subscribe (unless a kept subscription is reused) and
// read again; then sleep on the channel until a message, the grant's expiry
// or the re-read interval, and read again
Result<LeaderView>
next_view(Node &node, const Keys &keys, const LeaderView &seen, Clock::time_point deadline,
          milliseconds grace, Subscriptions &kept) noexcept
{
	try {
		std::optional<Subscription> told = kept.take(keys.election);
		bool reused = told.has_value(), subscribed = reused;
		for (;;) {
			auto r = read(node, keys, grace);
			if (!r)
				return r.error();
			if (changed(seen, r->view) || Clock::now() >= deadline) {
				if (told)
					kept.keep(std::move(*told));
				return std::move(r->view);
			}
			if (!subscribed) {
				subscribed = true; // once: without it (refused, unreachable), re-reads alone
				if (auto sub = node.subscribe(keys.election, std::min(grace, left(deadline, grace))))
					told.emplace(Subscription{std::move(*sub), Clock::now()});
				continue;
			}
			auto pause = left(deadline, recheck);
			if (r->view.has_leader && r->pttl >= 0)
				pause = std::min(pause, milliseconds{r->pttl + 1});
			if (told && told->subscriber.usable()) {
				if (auto message = told->subscriber.wait(pause); message)
					continue;
				told.reset(); // the subscription broke
				if (reused) { // it broke while kept (a restart, say): one new one
					reused = subscribed = false;
					continue;
				}
			}
			std::this_thread::sleep_for(pause); // re-reads from now on
		}
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

} // namespace pglease::detail::redis
