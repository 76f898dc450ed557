// zookeeper/recipes.hpp -- the ZooKeeper provider's recipes, one room each:
// a lock (lock.cpp: the "Locks" recipe, which the others build on), a
// shared lease's reader (shared.cpp), a semaphore's permit (permits.cpp);
// an election's candidate is election.hpp's.  Each acquire takes a session
// of its own (a released grant's, or a new one), queues its nodes in the
// resource's folder <root>/<encoded resource> (target.hpp) and waits for
// its turn, within wait + statement_grace.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "detail/provider.hpp"
#include "zookeeper/nodes.hpp"

namespace pglease::detail::zookeeper {

/// What one request queues and how it waits.
struct Recipe {
	std::vector<std::string> names; ///< its nodes' recipe names, created in one transaction
	bool shared = false;            ///< waits for earlier writers only (a reader)
	bool check_semaphore = false;   ///< refused (LS003) beside a semaphore's permits
	bool election = false;          ///< the node carries a value the grant proclaims
};

/// Create the recipe's nodes in folder (data: a lock's holder label, an
/// election's value), then wait until no earlier node is in their way.
[[nodiscard]] Result<Granted> take(const Context &ctx, const std::string &folder, std::string_view data,
                                   const Recipe &recipe, std::string_view resource,
                                   const LeaseOptions &options);
/// Wait until no earlier node is in mine's way: the time of the listing
/// that showed it (lock.cpp has the details).
[[nodiscard]] Result<Clock::time_point> wait_turn(Session &s, const Target &target, const std::string &folder,
                                                  const LockNode &mine, bool shared, bool check_semaphore,
                                                  std::string_view resource, const LeaseOptions &options,
                                                  const Bounds &b, const Hopeless &hopeless = {});

/// A plain lock, a writer of a shared lease (lock.cpp).
[[nodiscard]] Result<Granted> take_lock(const Context &ctx, const std::string &folder,
                                        std::string_view holder, std::string_view resource,
                                        const LeaseOptions &options);
/// A reader of a shared lease (shared.cpp).
[[nodiscard]] Result<Granted> take_shared(const Context &ctx, const std::string &folder,
                                          std::string_view holder, std::string_view resource,
                                          const LeaseOptions &options);
/// A permit of a semaphore of options.limit (permits.cpp).
[[nodiscard]] Result<Granted> take_permit(const Context &ctx, const std::string &folder,
                                          std::string_view holder, std::string_view resource,
                                          const LeaseOptions &options);
/// Whether a semaphore's lease or queued request is in folder's "leases" or
/// "locks" (names: folder's children) -- a lock's check (permits.cpp).
[[nodiscard]] Result<bool> semaphore_in_use(Session &s, const Target &target, const std::string &folder,
                                            const std::vector<std::string> &names, const Bounds &b);

} // namespace pglease::detail::zookeeper
