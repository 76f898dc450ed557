// zookeeper/election.cpp -- a candidate's campaign, an election's folder
// read and watched, the leader's proclaim, and the followers' read session
// (election.hpp).
#include "zookeeper/election.hpp"

#include <algorithm>

#include "zookeeper/recipes.hpp"

namespace pglease::detail::zookeeper {

namespace {

// The read session's timeout: it holds no node, so it only bounds how long
// the server keeps its watches across a lost connection.
constexpr milliseconds read_session_ttl{10000};

// no_folder -- nobody leads: the folder does not exist (never campaigned,
// or the server reaped the empty container).  With watch, an exists watch
// wakes the observer when it is made; true when it exists by now (read again)
Result<bool>
no_folder(Session &s, const std::string &folder, bool watch, Clock::time_point until, milliseconds bound)
{
	if (!watch)
		return false;
	auto a = s.exists(folder, true, until);
	if (a.answered && a.rc == ZNONODE)
		return false;
	if (!a.answered || a.rc != ZOK)
		return failure(a, s.hosts(), "exists " + folder, bound);
	return true;
}

} // namespace

Result<Granted>
take_leadership(const Context &ctx, std::string_view election, std::string_view value,
                const LeaseOptions &options)
{
	static const Recipe candidate{{"lock-"}, false, false, true};
	return take(ctx, election_folder(ctx.target, election), value, candidate, election, options);
}

Result<LeaderView>
read_view(Session &s, const std::string &folder, bool watch, Clock::time_point until,
          milliseconds bound) noexcept
{
	try {
		for (;;) {
			auto listed = s.children(folder, until, watch);
			if (listed.answered && listed.rc == ZNONODE) {
				auto made = no_folder(s, folder, watch, until, bound);
				if (!made)
					return made.error();
				if (*made)
					continue;
				return LeaderView{};
			}
			if (!listed.answered || listed.rc != ZOK)
				return failure(listed, s.hosts(), "get_children " + folder, bound);
			for (const auto &name : lock_nodes_in_order(std::move(listed.names))) {
				auto a = s.get_data(folder + "/" + name, watch, until);
				if (a.answered && a.rc == ZNONODE)
					continue; // left meanwhile: the next one leads (the child watch fires too)
				if (!a.answered || a.rc != ZOK)
					return failure(a, s.hosts(), "get_data " + folder + "/" + name, bound);
				LeaderView view;
				view.has_leader = true;
				view.value = std::move(a.data);
				view.term = a.stat.czxid;
				view.since = std::chrono::system_clock::time_point{milliseconds{a.stat.ctime}};
				return view;
			}
			return LeaderView{};
		}
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

Result<LeaderView>
next_view(Session &s, const std::string &folder, const LeaderView &seen, Clock::time_point deadline,
          milliseconds grace, milliseconds safety) noexcept
{
	for (;;) {
		auto events = s.generation();
		auto view = read_view(s, folder, true, deadline_after(Clock::now(), grace), grace);
		if (!view) {
			// a lost connection: wait for the client's reconnect (the server
			// keeps the session, and re-arms its watches) and read again
			if (view.error().code != Errc::unavailable || s.expired() || Clock::now() >= deadline ||
			    !s.wait_connected(deadline))
				return view;
			continue;
		}
		if (changed(seen, *view) || Clock::now() >= deadline)
			return view;
		(void)s.wait_event(events, std::min(deadline, deadline_after(Clock::now(), safety)));
	}
}

Result<bool>
publish(Session &s, const std::string &node, std::int64_t token, int &version, std::string_view value,
        Clock::time_point until, milliseconds bound) noexcept
{
	try {
		for (int attempt = 0; attempt < 3; attempt++) {
			auto a = s.set_data(node, value, version, until);
			if (a.answered && a.rc == ZOK) {
				version = a.stat.version;
				return a.stat.czxid == token;
			}
			if (a.answered && (a.rc == ZNONODE || a.rc == ZSESSIONEXPIRED || a.rc == ZINVALIDSTATE))
				return false;
			if (!a.answered || a.rc != ZBADVERSION)
				return failure(a, s.hosts(), "set_data " + node, bound);
			// someone else wrote our node's data: is it still our term's node?
			auto e = s.exists(node, false, until);
			if (e.answered && e.rc == ZNONODE)
				return false;
			if (!e.answered || e.rc != ZOK)
				return failure(e, s.hosts(), "exists " + node, bound);
			if (e.stat.czxid != token || e.stat.ephemeralOwner != s.id())
				return false;
			version = e.stat.version;
		}
		return Error{Errc::unavailable, "",
		             "zookeeper " + s.hosts() + ": set_data " + node +
		                 ": its version kept changing (another "
		                 "writer on the leader's node)"};
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

Result<std::shared_ptr<Session>>
ReadSession::get(Clock::time_point until) noexcept
{
	try {
		std::lock_guard<std::mutex> lk(mu_);
		if (session_ && !session_->closed() && !session_->expired())
			return session_;
		session_.reset(); // its other users keep it until their call ends
		auto opened =
		    Session::open(target_.hosts, read_session_ttl,
		                  std::min(until, deadline_after(Clock::now(), connect_timeout_)), target_.auth);
		if (!opened)
			return opened.error();
		session_ = std::shared_ptr<Session>(
		    opened->release(), [](Session *s) { Session::dispose(std::unique_ptr<Session>{s}); });
		return session_;
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

} // namespace pglease::detail::zookeeper
