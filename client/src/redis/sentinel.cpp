// redis/sentinel.cpp -- asking the Sentinels for the master (sentinel.hpp:
// the order, the errors and why).
#include "redis/sentinel.hpp"

#include <algorithm>
#include <new>
#include <optional>

namespace pglease::detail::redis {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// What asking one Sentinel came to, when it named no master.
struct Outcome {
	int down = 0;           // unreachable, timed out, or an answer that made no sense
	int unknown = 0;        // answered nil: monitors no master of that name
	std::string last_error; // the last down one's
	std::optional<Error> refused;
};

} // namespace

// ask -- one Sentinel's answer: the address, or Errc::invalid_argument for
// nil, Errc::permission for a refusal (NOAUTH, NOPERM), Errc::unavailable
// for anything else
Result<Endpoint>
Sentinels::ask(const Endpoint &sentinel, Timeouts timeouts) noexcept
{
	auto connection = Connection::open(sentinel, timeouts);
	if (!connection)
		return Error{Errc::unavailable, "", "sentinel: " + connection.error().message};
	auto reply = connection->command({"SENTINEL", "get-master-addr-by-name", master_name_});
	if (!reply)
		return Error{Errc::unavailable, "", "sentinel: " + reply.error().message};
	if (reply->is_nil())
		return Error{Errc::invalid_argument, "", ""};
	if (reply->is_error()) {
		Error e = error_from_reply(*reply, sentinel);
		if (e.code == Errc::permission)
			return Error{Errc::permission, "",
			             "sentinel: " + e.message +
			                 " (the Sentinels are asked without a password: the URL's credentials are the "
			                 "data nodes')"};
		return Error{Errc::unavailable, "", "sentinel: " + e.message};
	}
	if (reply->is_array() && reply->elements.size() == 2 && reply->elements[0].is_string() &&
	    reply->elements[1].is_string() && !reply->elements[0].text.empty()) {
		if (int port = pglease::detail::port_of(reply->elements[1].text); port > 0)
			return Endpoint{reply->elements[0].text, port};
	}
	return Error{Errc::unavailable, "", "sentinel " + to_string(sentinel) + ": no address in its answer"};
}

// answered -- the Sentinel that named the master is asked first next time
void
Sentinels::answered(const Endpoint &sentinel) noexcept
{
	std::lock_guard<std::mutex> lk(mu_);
	auto it = std::find(sentinels_.begin(), sentinels_.end(), sentinel);
	if (it != sentinels_.end())
		std::rotate(sentinels_.begin(), it, it + 1);
}

Result<Endpoint>
Sentinels::master(Timeouts timeouts, Clock::time_point deadline) noexcept
{
	try {
		std::vector<Endpoint> order;
		{
			std::lock_guard<std::mutex> lk(mu_);
			order = sentinels_;
		}
		Outcome outcome;
		for (const Endpoint &sentinel : order) {
			auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now());
			if (left < milliseconds{1}) {
				outcome.down++;
				outcome.last_error = "no time left to ask sentinel " + to_string(sentinel);
				break;
			}
			Timeouts t{std::min(timeouts.connect, left), std::min(timeouts.command, left)};
			auto address = ask(sentinel, t);
			if (address) {
				answered(sentinel);
				return address;
			}
			if (address.error().code == Errc::permission)
				outcome.refused = address.error();
			else if (address.error().code == Errc::invalid_argument)
				outcome.unknown++;
			else {
				outcome.down++;
				outcome.last_error = address.error().message;
			}
		}
		if (outcome.refused)
			return *outcome.refused;
		std::string name = "\"" + master_name_ + "\"";
		if (outcome.down == 0)
			return Error{Errc::invalid_argument, "",
			             "no Sentinel of the URL monitors a master named " + name +
			                 " (SENTINEL get-master-addr-by-name answered nil on all " +
			                 std::to_string(outcome.unknown) + ")"};
		return Error{Errc::unavailable, "",
		             "no Sentinel named the master " + name + ": " + std::to_string(outcome.down) + " of " +
		                 std::to_string(order.size()) + " unreachable (last: " + outcome.last_error + ")" +
		                 (outcome.unknown > 0 ? ", the others do not know it" : "")};
	} catch (const std::bad_alloc &) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

Result<void>
Sentinels::is_master(Connection &connection) noexcept
{
	try {
		auto role = connection.command({"ROLE"});
		if (!role)
			return role.error();
		if (role->is_error()) {
			Error e = error_from_reply(*role, connection.endpoint());
			if (e.code != Errc::permission)
				e.code = Errc::unavailable;
			return e;
		}
		if (role->is_array() && !role->elements.empty() && role->elements[0].text == "master")
			return {};
		std::string is = role->is_array() && !role->elements.empty() ? role->elements[0].text : "?";
		return Error{Errc::unavailable, "",
		             "redis " + to_string(connection.endpoint()) + " is a " + is +
		                 ", not the master (a Sentinel's stale answer, or a failover under way)"};
	} catch (const std::bad_alloc &) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

} // namespace pglease::detail::redis
