// zookeeper/target.hpp -- where the ZooKeeper provider connects and where its
// lock nodes live: a zookeeper:// URL (docs/design.md#urls), and the one path
// component a resource name becomes.
//
// zookeeper://h1:p1[,h2:p2...][/chroot]
// - the host:port list every provider reads (detail/endpoints.hpp: a name,
//   an IPv4 address or a bracketed IPv6 literal, [::1]:2181; a port 1-65535)
//   (credentials, query strings: refused, not ignored; error messages never
//   show credentials: the provider takes none, authentication is issue 22);
// - /chroot is the parent of every resource's lock folder and defaults to
//   /pglease; it must be an absolute ZooKeeper path without empty, "." or
//   ".." components, outside the server's own /zookeeper tree.  It is prefixed by this provider, not handed
//   to the C client as its chroot, so that missing ancestors can be created.
#pragma once

#include <string>
#include <string_view>

#include "pglease/result.hpp"

namespace pglease::detail::zookeeper {

struct Target {
	std::string hosts; ///< "h1:p1,h2:p2", as zookeeper_init takes it (IPv6 unbracketed: "::1:2181")
	std::string root;  ///< "/pglease" or the URL's chroot
};

/// Parse zookeeper://h1:p1[,h2:p2...][/chroot]; Errc::invalid_argument with
/// what is wrong otherwise.
[[nodiscard]] Result<Target> parse_url(std::string_view url) noexcept;

/// The resource as one path component: every byte outside [A-Za-z0-9_-] is
/// written %XX (upper-case hex), so '/' cannot nest, "." and ".." cannot
/// occur, and no control or non-ASCII byte reaches the server.  "a/b.c"
/// becomes "a%2Fb%2Ec".  Injective, so two resources never share a folder.
[[nodiscard]] std::string encode_resource(std::string_view resource);

} // namespace pglease::detail::zookeeper
