// zookeeper/nodes.hpp -- what the ZooKeeper provider's recipes share (lock.cpp,
// shared.cpp, permits.cpp, election.cpp): the locker's context, one
// acquire's deadlines, the session it opens, the resource's folder and who
// owns it, and the nodes a request creates, with Curator's protection
// against lost create replies (InterProcessMutex /
// CreateBuilder.withProtection): each name begins _c_<guid>-, so a create
// whose reply was lost (connection loss) is found again after the reconnect
// by the GUID in its name, never created twice.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "pglease/lease.hpp"
#include "pglease/options.hpp"
#include "pglease/result.hpp"
#include "zookeeper/pool.hpp"
#include "zookeeper/session.hpp"
#include "zookeeper/target.hpp"

namespace pglease::detail::zookeeper {

/// The resource folders a locker saw exist (a hint, never trusted: a
/// container goes once empty): a lock sends the folder's create just
/// before its multi when the folder is not known to exist, so a new
/// resource costs one round trip, not a multi refused ZNONODE (a
/// transaction in the server's log), the folder's create and the multi
/// again.
class FolderHints {
public:
	[[nodiscard]] bool exists(const std::string &folder);
	void seen(const std::string &folder, bool exists) noexcept;

private:
	static constexpr std::size_t most = 4096; // then forgotten all at once
	std::mutex mu_;
	std::unordered_set<std::string> seen_;
};

class Watchdog;

/// What every recipe of one locker reads: where its nodes live, its
/// options, its idle sessions, the folders it saw, and the watchdog of
/// its grants (grant.hpp).
struct Context {
	Target target;
	ClientOptions options;
	std::shared_ptr<SessionPool> pool;
	std::shared_ptr<FolderHints> folders;
	std::shared_ptr<Watchdog> watchdog;
};

/// The nodes a request created, all named prefix + recipe name + sequence.
struct LockNode {
	std::string prefix;
	std::vector<std::string> names; ///< the first one's czxid is the token
	std::int64_t czxid = 0;
	int version = 0;    ///< of its data
	bool alone = false; ///< its folder held only these nodes after their create: first
};

/// One acquire's bounds: the wait ends at give_up, every request and the
/// session setup at until (wait + statement_grace: one deadline for the
/// whole call); a permit's turn at the semaphore's mutex may come until
/// turn_until (permits.cpp), a lock's by give_up.
struct Bounds {
	Clock::time_point give_up, until;
	milliseconds bound;
	Clock::time_point turn_until;
};
/// One acquire's deadlines, from now.
[[nodiscard]] Bounds bounds_of(const Context &ctx, const LeaseOptions &options);

/// A check of whether waiting on makes sense (empty: it always does).
using Hopeless = std::function<Result<bool>()>;

/// An error after which the session may come back.
[[nodiscard]] bool retryable(int rc);
/// The Error of a request that failed (answered) or was abandoned.
[[nodiscard]] Error failure(const Answer &a, const std::string &hosts, const std::string &what,
                            milliseconds bound);
/// LS003: the request disagrees with the resource's grants or waiters.
[[nodiscard]] Error mismatch(std::string_view resource, const std::string &why);
/// Errc::timeout: not granted within the wait.
[[nodiscard]] Error timed_out(std::string_view resource, const LeaseOptions &options);

/// A pooled session with this TTL, or a new one; a TTL above the servers'
/// maximum session timeout is refused naming it.
[[nodiscard]] Result<std::unique_ptr<Session>> open_session(const Context &ctx, milliseconds ttl,
                                                            const Bounds &b);

/// The resource's container node, and its persistent ancestors.
[[nodiscard]] Result<void> ensure_folder(Session &s, const Target &target, const std::string &folder,
                                         const Bounds &b);
/// With credentials: the folder (and an election's <root>/.election) and
/// the root let no identity but this client's change them (our node's ACL
/// names our identity); Errc::permission otherwise.
[[nodiscard]] Result<void> check_owned(Session &s, const Target &target, const std::string &folder,
                                       const std::string &node, const Bounds &b);

/// Our EPHEMERAL|SEQUENTIAL nodes _c_<guid>-<recipe><sequence> in folder,
/// one per recipe name (two: one transaction, consecutive sequences, that
/// tells whether ours are the folder's only children: LockNode::alone; the
/// folder's create sent just before it unless `folders` saw it exist), created once even
/// when a reply is lost; the folder is made when missing.
[[nodiscard]] Result<LockNode> create_lock_node(Session &s, const Target &target, const std::string &folder,
                                                const std::vector<std::string> &recipes,
                                                std::string_view data, const Bounds &b,
                                                FolderHints *folders = nullptr);
/// Delete one node, or several in one transaction.
Answer remove_nodes(Session &s, const std::vector<std::string> &paths, Clock::time_point until) noexcept;
/// The paths of node's names in folder.
[[nodiscard]] std::vector<std::string> paths_of(const std::string &folder, const LockNode &node);

} // namespace pglease::detail::zookeeper
