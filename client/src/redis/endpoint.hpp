// redis/endpoint.hpp -- where the Redis providers connect: the nodes of a
// redis:// or redlock:// URL (docs/design.md#urls).
//
// Decisions the parser enforces:
// - the nodes are a host:port list as every provider reads it
//   (detail/endpoints.hpp: a port 1-65535 is required, no silent 6379; a
//   host is a name, an IPv4 address or a bracketed IPv6 address,
//   redis://[::1]:6400);
// - redis:// names exactly one node, redlock:// names three or more distinct
//   nodes.  Even counts are accepted: Redlock's majority is N/2+1, so four
//   nodes need three grants and tolerate one failure, like three nodes do
//   (allowed, merely no gain).  A node named twice is refused: it would vote twice;
// - an optional /db (a decimal database number, 0 to INT_MAX-1: redis.conf's
//   databases is at most INT_MAX) applies to every node; whether the server
//   has that database is known at the first call, which then answers
//   Errc::invalid_argument;
// - credentials (user:password@), query strings and fragments are not
//   supported yet and are refused rather than ignored;
// - no message quotes a password: the URL is shown with its userinfo and its
//   query masked ("redis://***@host:port", "?***").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "detail/endpoints.hpp"
#include "pglease/result.hpp"

namespace pglease::detail::redis {

using Endpoint = detail::HostPort;

struct Target {
	bool redlock = false;        ///< redlock:// (else redis://)
	std::vector<Endpoint> nodes; ///< one for redis://, three or more for redlock://
	int db = 0;                  ///< SELECTed on every node when not 0
};

/// Parse redis://host:port[/db] or redlock://h1:p1,h2:p2,h3:p3[,...][/db];
/// Errc::invalid_argument with what is wrong otherwise.
[[nodiscard]] Result<Target> parse_url(std::string_view url) noexcept;

} // namespace pglease::detail::redis
