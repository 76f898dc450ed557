// zookeeper/target.hpp -- where the ZooKeeper provider connects and where its
// lock nodes live: a zookeeper:// URL (docs/design.md#urls), the one path
// component a resource name becomes, an election's folder, and the names of
// the lock nodes in a folder.
//
// zookeeper://[user:password@]h1:p1[,h2:p2...][/chroot]
// - user:password: the digest scheme's credentials (%XX escapes decoded; the
//   user name without ':'); every session authenticates with them and every
//   node the provider creates gets the creator-only ACL (locker.cpp);
//   error messages never show the password;
// - the host:port list every provider reads (detail/endpoints.hpp: a name,
//   an IPv4 address or a bracketed IPv6 literal, [::1]:2181; a port 1-65535);
// - no TLS: Debian's C client has none, so zookeepers:// and the query
//   parameters cacert=, cert=, key= are refused saying so; any other query
//   or fragment is refused too, not ignored;
// - /chroot is the parent of every resource's lock folder and defaults to
//   /pglease; it must be an absolute ZooKeeper path without empty, "." or
//   ".." components, outside the server's own /zookeeper tree.  It is prefixed by this provider, not handed
//   to the C client as its chroot, so that missing ancestors can be created.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pglease/result.hpp"

namespace pglease::detail::zookeeper {

struct Target {
	std::string hosts; ///< "h1:p1,h2:p2", as zookeeper_init takes it (IPv6 unbracketed: "::1:2181")
	std::string root;  ///< "/pglease" or the URL's chroot
	std::string auth;  ///< "user:password" (decoded) for the digest scheme; empty: none
	std::string user;  ///< auth's user name (messages may show it)
};

/// Parse zookeeper://[user:password@]h1:p1[,h2:p2...][/chroot]; Errc::invalid_argument with
/// what is wrong otherwise.
[[nodiscard]] Result<Target> parse_url(std::string_view url) noexcept;

/// The resource as one path component: every byte outside [A-Za-z0-9_-] is
/// written %XX (upper-case hex), so '/' cannot nest, "." and ".." cannot
/// occur, and no control or non-ASCII byte reaches the server.  "a/b.c"
/// becomes "a%2Fb%2Ec".  Injective, so two resources never share a folder.
[[nodiscard]] std::string encode_resource(std::string_view resource);

/// The folder of an election's candidates: <root>/.election/<encoded name>.
/// No resource's folder (<root>/<encoded>) can be ".election" ('.' is always
/// encoded), so a lock and an election of the same name never share nodes.
[[nodiscard]] std::string election_folder(const Target &target, std::string_view election);

/// The sequence ZooKeeper appended to a lock node's name
/// (_c_<guid>-lock-<10 digits>: Curator's InterProcessMutex with protection,
/// which its LeaderSelector uses too), or -1 for any other name.
[[nodiscard]] long long sequence_of(const std::string &name);
/// The lock nodes among children, lowest sequence (the holder, or the
/// leader) first; other names left out.
[[nodiscard]] std::vector<std::string> lock_nodes_in_order(std::vector<std::string> children);

/// The nodes of a resource's queue (lock.cpp, shared.cpp), by the name Curator gives
/// each recipe's nodes, protected (_c_<guid>-<name><10 digits>):
/// lock: "lock-", InterProcessMutex (and pglease's locks since issue 23);
/// read and write: "__READ__" and "__WRIT__", InterProcessReadWriteLock.
enum class NodeKind { lock, read, write };
struct QueueNode {
	std::string name;
	long long sequence = -1;
	NodeKind kind = NodeKind::lock;
};
/// Every queue node among children, lowest sequence first (one folder's
/// sequence numbers come from one counter, whatever the name); other names
/// (a semaphore's "locks" and "leases", foreign nodes) left out.
[[nodiscard]] std::vector<QueueNode> queue_in_order(const std::vector<std::string> &children);
/// What a request whose own nodes' names begin with own_prefix waits for:
/// the name of the nearest earlier node it must see gone, or empty when it
/// is granted.  A reader (shared) waits for every earlier writer: a "__WRIT__"
/// node, or a "lock-" node (a plain lock, Curator's mutex); an exclusive
/// request waits for every earlier node.  Its own nodes (a writer has two,
/// consecutive: lock.cpp) are not in its way.  Empty as well when none of
/// the nodes is its own (the caller checks that first).
[[nodiscard]] std::string blocker(const std::vector<QueueNode> &queue, const std::string &own_prefix,
                                  bool shared);
/// Whether one of the names is an own node (begins with own_prefix).
[[nodiscard]] bool has_own(const std::vector<QueueNode> &queue, const std::string &own_prefix);

} // namespace pglease::detail::zookeeper
