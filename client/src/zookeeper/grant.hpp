// zookeeper/grant.hpp -- the grant of every ZooKeeper recipe: its session
// and its nodes.  renew checks the node (expired session -> lost at once,
// disconnected -> Errc::unavailable); release deletes the nodes and pools
// the session; a grant not renewed by its local deadline has its session
// closed by the locker's watchdog (watchdog.hpp), so its nodes go
// server-side when it ends locally.
#pragma once

#include "detail/provider.hpp"
#include "zookeeper/nodes.hpp"

namespace pglease::detail::zookeeper {

/// The Granted of our nodes in folder (their czxid the token), checked free
/// at `checked`: the grant takes the session.  election: its proclaim sets
/// the node's data (election.hpp publish).
[[nodiscard]] Granted granted(Owned &session, const Context &ctx, const std::string &folder,
                              const LockNode &mine, bool election, const LeaseOptions &options,
                              Clock::time_point checked);

} // namespace pglease::detail::zookeeper
