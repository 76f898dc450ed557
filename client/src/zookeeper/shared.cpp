// zookeeper/shared.cpp -- shared leases (docs/shared-leases.md): Curator's
// InterProcessReadWriteLock in the resource's folder.  A reader queues
// _c_<guid>-__READ__<sequence> and waits for every earlier writer node (a
// "__WRIT__" or a "lock-" one), watching the nearest; a writer -- a plain
// lock (lock.cpp) -- queues two nodes in one transaction (consecutive
// sequences, one GUID): _c_<guid>-lock-<n>, which Curator's
// InterProcessMutex and earlier pglease clients sort and wait for, and
// _c_<guid>-__WRIT__<n+1>, which Curator's read-write lock sorts and waits
// for (each recipe ignores the other's names); it waits for every earlier
// node.  Which node is in whose way: target.hpp (queue_in_order, blocker).
// Elections keep the one "lock-" node.
#include "zookeeper/recipes.hpp"

namespace pglease::detail::zookeeper {

Result<Granted>
take_shared(const Context &ctx, const std::string &folder, std::string_view holder, std::string_view resource,
            const LeaseOptions &options)
{
	static const Recipe reader{{"__READ__"}, true, true, false};
	return take(ctx, folder, holder, reader, resource, options);
}

} // namespace pglease::detail::zookeeper
