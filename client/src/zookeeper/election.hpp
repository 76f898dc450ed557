// zookeeper/election.hpp -- what the ZooKeeper provider's elections add to
// its locks: a candidate's campaign, reading and watching an election's
// folder, proclaiming on the leader's own node, and the session followers
// read through.
//
// An election is a lock whose nodes carry the candidate's value as data:
// exactly the layout of Curator's LeaderSelector (an InterProcessMutex whose
// _c_<guid>-lock-<seq> nodes carry the participant id), so a LeaderSelector
// on the same path and pglease candidates queue in one line and see each
// other's values (docs/election.md "ZooKeeper").  Leader = the lowest
// sequence; term = its node's czxid; since = its ctime; value = its data.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "detail/provider.hpp"
#include "pglease/election.hpp"
#include "pglease/result.hpp"
#include "zookeeper/nodes.hpp"
#include "zookeeper/session.hpp"
#include "zookeeper/target.hpp"

namespace pglease::detail::zookeeper {

/// A campaign: a lock (lock.cpp) in the election's folder
/// <root>/.election/<election> (target.hpp) whose one "lock-" node carries
/// the value (a LeaderSelector participant's id) instead of the holder
/// label; granted when it leads.  Its grant's proclaim is publish().
[[nodiscard]] Result<Granted> take_leadership(const Context &ctx, std::string_view election,
                                              std::string_view value, const LeaseOptions &options);

/// The election whose candidates queue in folder, now: getChildren, then
/// getData of the lowest lock node (the next one if it was deleted between
/// the two, as Curator's getLeader does).  watch: leave a child watch on the
/// folder (an exists watch while it does not exist) and a data watch on the
/// leader's node, whose firing is an event of the session.  Each request is
/// answered by until (bound: for the message).
[[nodiscard]] Result<LeaderView> read_view(Session &s, const std::string &folder, bool watch,
                                           Clock::time_point until, milliseconds bound) noexcept;

/// Block until the election differs from seen (pglease::changed) or the
/// deadline passes, and return the view then.  Woken by the watches
/// read_view leaves (a candidate's node created or deleted -- a session's
/// expiry deletes its node --, a proclaim's setData); reads again at least
/// every `safety` whatever the watches do.  Each request within grace.
[[nodiscard]] Result<LeaderView> next_view(Session &s, const std::string &folder, const LeaderView &seen,
                                           Clock::time_point deadline, milliseconds grace,
                                           milliseconds safety) noexcept;

/// A leader's proclaim: setData on its own node only if the node's version
/// is still the one it last saw (one server-side compare and write).  The
/// node's path carries the campaign's GUID and is deleted with its
/// ephemeral owner's session, and while it exists no lower sequence can
/// appear, so "the node with my path and version exists" is "my term is the
/// current one".  A version moved by another writer is read again (the node
/// must still have czxid == token and our session as its owner) and the
/// write retried.  true: published (version updated); false: the node is
/// gone or not ours; an error: unknown.
[[nodiscard]] Result<bool> publish(Session &s, const std::string &node, std::int64_t token, int &version,
                                   std::string_view value, Clock::time_point until,
                                   milliseconds bound) noexcept;

/// The session leader() and observe() read through: one per locker, opened
/// at first use and again after it expired or was closed; shared by every
/// follower thread (the C client multiplexes their requests).
class ReadSession {
public:
	ReadSession(Target target, milliseconds connect_timeout)
	    : target_(std::move(target)), connect_timeout_(connect_timeout)
	{
	}
	/// A connected (or reconnecting) session, or why none could be opened
	/// (a new one: connected by until, and within connect_timeout).
	Result<std::shared_ptr<Session>> get(Clock::time_point until) noexcept;

private:
	const Target target_;
	const milliseconds connect_timeout_;
	std::mutex mu_;
	std::shared_ptr<Session> session_;
};

} // namespace pglease::detail::zookeeper
