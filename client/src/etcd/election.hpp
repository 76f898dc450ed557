// etcd/election.hpp -- the reading side of an election on etcd, the layout
// of etcd's concurrency.Election (etcd/election.cpp): who leads, and the
// wait for the next change by a watch on the election's prefix.
#pragma once

#include <string>

#include "etcd/api.hpp"
#include "pglease/election.hpp"

namespace pglease::detail::etcd {

/// The election at prefix ("<election_prefix><name>/") now: its leader is
/// the key with the lowest create revision (term = that revision, value =
/// the key's value, since = the epoch: etcd records no time).  One read.
Result<LeaderView> leader_view(Api &api, const std::string &prefix, Clock::time_point deadline);

/// Block until the election's view differs from seen or the deadline, by a
/// watch on the prefix from the revision of the last read; return the view
/// then.  A compacted start revision re-reads and watches again.
Result<LeaderView> next_view(Api &api, const std::string &prefix, const LeaderView &seen,
                             Clock::time_point deadline);

} // namespace pglease::detail::etcd
