// redis/endpoint.hpp -- where the Redis providers connect: the nodes of a
// redis:// or redlock:// URL (docs/design.md#urls).
//
// Decisions the parser enforces:
// - a port is required (no silent 6379) and must be 1-65535; a host must not be
//   empty and is a DNS name or IPv4 address (letters, digits, '.', '-', '_'),
//   or an IPv6 address written in brackets, redis://[::1]:6400: a host with a
//   space could never be reached, so it is refused here, not at every call;
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

#include "pglease/result.hpp"

namespace pglease::detail::redis {

struct Endpoint {
	std::string host;
	int port = 0;
};

bool operator==(const Endpoint &a, const Endpoint &b) noexcept;
/// "host:port", or "[v6]:port"
[[nodiscard]] std::string to_string(const Endpoint &endpoint);

struct Target {
	bool redlock = false;        ///< redlock:// (else redis://)
	std::vector<Endpoint> nodes; ///< one for redis://, three or more for redlock://
	int db = 0;                  ///< SELECTed on every node when not 0
};

/// Parse redis://host:port[/db] or redlock://h1:p1,h2:p2,h3:p3[,...][/db];
/// Errc::invalid_argument with what is wrong otherwise.
[[nodiscard]] Result<Target> parse_url(std::string_view url) noexcept;

} // namespace pglease::detail::redis
