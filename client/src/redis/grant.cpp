// redis/grant.cpp -- what the Redis recipes share: a lock script's answer,
// the renewal and release of a grant by its value (renew.lua, release.lua:
// one pair for locks, readers and permits; an election's in
// redis/election.cpp), and the grant object a lease renews and releases.
#include "redis/grant.hpp"

#include <algorithm>

#include "redis/election.hpp"
#include "redis/lua.hpp"

namespace pglease::detail::redis {

namespace {

const Script renew_script{std::string{lua::renew}};
const Script release_script{std::string{lua::release}};

// script_error -- the Error for an error reply of a lock script: the
// acquire script's own refusals name the key they found damaged (damaged
// server state: Errc::internal, which is not retryable)
Error
script_error(const Reply &reply, const Node &node, const Keys &keys)
{
	std::string where = "redis " + to_string(node.endpoint()) + ": ";
	std::string_view text = reply.text;
	if (text.rfind("ERR ", 0) == 0) // what Redis puts before a one-word error_reply
		text.remove_prefix(4);
	if (text.rfind("PGLEASE_EXHAUSTED", 0) == 0)
		return Error{
		    Errc::internal, "",
		    where + "the token counter " + keys.counter + " reached " + std::to_string(max_token) +
		        " (2^53-1, the largest exact token): no higher token can be granted; nothing was changed"};
	if (text.rfind("PGLEASE_COUNTER ", 0) == 0)
		return Error{Errc::internal, "",
		             where + "the token counter " + keys.counter + " holds \"" +
		                 std::string{text.substr(16)} + "\", not an integer from 0 to " +
		                 std::to_string(max_token - 1) +
		                 " (damaged or foreign data); "
		                 "nothing was changed, the lease is not granted until it is repaired"};
	if (text.rfind("PGLEASE_MISMATCH ", 0) == 0) {
		std::string_view kind = text.substr(17);
		kind = kind.substr(0, kind.find(' '));
		bool own = kind.rfind("own:", 0) == 0;
		if (own)
			kind.remove_prefix(4);
		return Error{Errc::invalid_argument, "LS003",
		             where +
		                 (own ? "this holder's own grant of the resource is " : "the resource is held as ") +
		                 describe_kind(kind) +
		                 ": every holder and waiter of a resource asks for the same mode and limit; "
		                 "nothing was changed"};
	}
	if (text.rfind("PGLEASE_LOCK", 0) == 0)
		return Error{
		    Errc::internal, "",
		    where + "the lock " + keys.lock +
		        " names this holder but no valid token (damaged or foreign data); nothing was changed"};
	return error_from_reply(reply, node.endpoint());
}

// compare_and -- run renew_script or release_script for one grant within
// timeout (0: the node's command timeout); true: done
Result<bool>
compare_and(Node &node, const Script &script, const Keys &keys, std::string_view match, std::string_view mode,
            std::string_view last_arg, milliseconds timeout) noexcept
{
	try {
		// release.lua names the queue's head in its message (renew.lua has no use for the keys)
		return acted(node.eval(script, {keys.lock, keys.queue, keys.beats}, {match, mode, last_arg}, timeout),
		             node, keys);
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

// RedisGrant -- one grant: its value names it.  A renewal ends by the grant's
// local deadline: past it the lease is lost anyway, and a renewal still in
// flight would only keep a lock nobody counts on.  An election's grant also
// proclaims (redis/election.cpp), compared with the lock in the same script.
class RedisGrant final : public Grant {
public:
	RedisGrant(std::shared_ptr<Node> node, Keys keys, bool election, std::string value, milliseconds grace,
	           Clock::time_point valid_until)
	    : node_(std::move(node)), keys_(std::move(keys)), election_(election), value_(std::move(value)),
	      grace_(grace), valid_until_(valid_until)
	{
	}

	Result<bool> renew(milliseconds ttl) noexcept override
	{
		auto sent = Clock::now();
		auto budget = left_of(valid_until_, grace_);
		if (budget <= milliseconds{0})
			return Error{Errc::lost, "", "the local deadline passed before the renewal"};
		auto renewed = renew_grant(*node_, keys_, election_, value_, ttl, budget);
		if (renewed && *renewed)
			valid_until_ = deadline_after(sent, ttl);
		return renewed;
	}
	Result<bool> release() noexcept override { return release_grant(*node_, keys_, election_, value_); }
	Result<bool> proclaim(std::string_view value) noexcept override
	{
		if (!election_)
			return Grant::proclaim(value);
		return redis::proclaim(*node_, keys_, value_, value, grace_);
	}

private:
	std::shared_ptr<Node> node_;
	Keys keys_;
	bool election_;
	std::string value_;
	milliseconds grace_;
	Clock::time_point valid_until_;
};

} // namespace

// margin_of -- what each local deadline leaves out of the TTL.  The server
// counts a key's expiry on its wall clock in whole ms (the key lives while
// its ms clock is at most the script's start + ttl, so never less than
// ttl after the send), but that clock's rate may differ from the client's
// steady clock (NTP slews it by up to 500 ppm) and the two are read at
// different moments: ttl/1000 (twice the slew) + 2 ms (the ms steps of
// both, and as much again), the clock-drift allowance of the distlock
// page's formula with a single node's rate; a holder never relies on its
// lease up to the instant the server lets the key go.
milliseconds
margin_of(milliseconds ttl) noexcept
{
	return ttl / 1000 + milliseconds{2};
}

milliseconds
left_of(Clock::time_point deadline, milliseconds cap) noexcept
{
	if (deadline == Clock::time_point::max())
		return cap;
	return std::min(cap, std::chrono::ceil<milliseconds>(deadline - Clock::now()));
}

std::string
describe_kind(std::string_view kind)
{
	if (kind == "lock")
		return "an exclusive lock";
	if (kind == "shared")
		return "shared leases (readers)";
	if (kind.rfind("limit:", 0) == 0)
		return "permits of a semaphore of " + std::string{kind.substr(6)};
	return "\"" + std::string{kind.substr(0, 32)} + "\" (damaged or foreign data)";
}

std::string
kind_of(const LeaseOptions &options)
{
	if (options.mode == Mode::shared)
		return "shared";
	if (options.limit > 0)
		return "limit:" + std::to_string(options.limit);
	return "lock";
}

Result<long long>
integer_of(const Result<Reply> &reply, const Node &node, const Keys &keys)
{
	if (!reply)
		return reply.error();
	if (reply->is_error())
		return script_error(*reply, node, keys);
	if (!reply->is_integer())
		return Error{Errc::internal, "",
		             "redis " + to_string(node.endpoint()) + ": a lock script answered no integer"};
	return reply->integer;
}

Result<bool>
acted(const Result<Reply> &reply, const Node &node, const Keys &keys)
{
	auto done = integer_of(reply, node, keys);
	if (!done)
		return done.error();
	return *done == 1;
}

Result<bool>
renew_by_match(Node &node, const Keys &keys, std::string_view match, bool by_value, milliseconds ttl,
               milliseconds timeout) noexcept
{
	try {
		return compare_and(node, renew_script, keys, match, by_value ? "value" : "token",
		                   std::to_string(ttl.count()), timeout);
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

Result<bool>
release_by_match(Node &node, const Keys &keys, std::string_view match, bool by_value,
                 milliseconds timeout) noexcept
{
	return compare_and(node, release_script, keys, match, by_value ? "value" : "token", keys.released,
	                   timeout);
}

Result<bool>
renew_grant(Node &node, const Keys &keys, bool election, std::string_view value, milliseconds ttl,
            milliseconds timeout) noexcept
{
	if (election)
		return renew_leader(node, keys, value, ttl, timeout);
	return renew_by_match(node, keys, value, true, ttl, timeout);
}

Result<bool>
release_grant(Node &node, const Keys &keys, bool election, std::string_view value,
              milliseconds timeout) noexcept
{
	if (election)
		return resign(node, keys, value, timeout);
	return release_by_match(node, keys, value, true, timeout);
}

std::unique_ptr<Grant>
make_grant(std::shared_ptr<Node> node, Keys keys, bool election, std::string value, milliseconds grace,
           Clock::time_point valid_until)
{
	return std::make_unique<RedisGrant>(std::move(node), std::move(keys), election, std::move(value), grace,
	                                    valid_until);
}

} // namespace pglease::detail::redis
