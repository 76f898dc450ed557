// redis/endpoint.hpp -- where the Redis providers connect: the nodes, the
// credentials and the TLS of a redis://, rediss://, redlock://, redlocks://
// or redis+sentinel:// URL (docs/design.md#urls).
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
// - credentials are optional userinfo, [user:]password@ before the nodes:
//   redis://:PASSWORD@host:port (AUTH PASSWORD: the default user, as
//   requirepass sets it) or redis://USER:PASSWORD@host:port (AUTH USER
//   PASSWORD: a Redis 6+ ACL user).  The userinfo ends at the URL's last '@',
//   and the user at its first ':', so a password may hold '@', ':' or '/'
//   as they are; %XX escapes are decoded in both (a '%' not followed by two
//   hex digits is refused).  A userinfo without ':' (redis://secret@h:p: a
//   user or a password?) and an empty password are refused.  redlock://
//   takes the credentials once, for every node: Redlock's nodes are one
//   deployment's peers, and a URL has one userinfo;
// - redis+sentinel://[[user]:password@]s1:p1[,s2:p2...]/MASTER_NAME[/db]
//   names one or more Sentinels (distinct) and the master they monitor
//   (redis/sentinel.hpp asks them for its address).  The credentials are the
//   data nodes' (the master and, after a failover, the replica promoted):
//   the Sentinels themselves are asked without AUTH, and a Sentinel that
//   wants a password is refused as Errc::permission at the first call.
//   MASTER_NAME is required, %XX-decoded, and may not hold a space, a
//   control character or '/'.  rediss+sentinel:// (TLS to Sentinels and
//   nodes) is refused as not supported;
// - rediss:// and redlocks:// are the same over TLS (redlocks:// rather
//   than a TLS flag: one scheme per transport, as etcd:// and etcds://).
//   Their query takes the TLS material, cacert=, cert=, key= (paths,
//   %XX-decoded), or ClientOptions::tls_ca_file, tls_cert_file and
//   tls_key_file, the URL winning, read as every provider reads it
//   (detail/tls.hpp); every file is checked and loaded here, before any
//   I/O (Errc::invalid_argument naming the path).  The query begins at the
//   first '?' after the userinfo, so a '@' in a path is written %40.  TLS
//   material given to redis:// or redlock:// is refused rather than
//   ignored; so are other query parameters and fragments;
// - no message quotes a password: the URL is shown with its userinfo and its
//   query masked ("redis://***@host:port", "?***").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "detail/endpoints.hpp"
#include "pglease/options.hpp"
#include "pglease/result.hpp"
#include "redis/transport.hpp"

namespace pglease::detail::redis {

using Endpoint = detail::HostPort;

/// What AUTH sends right after each connect: nothing when password is
/// empty; AUTH password when user is empty; AUTH user password otherwise.
struct Credentials {
	std::string user;
	std::string password;
	[[nodiscard]] bool given() const noexcept { return !password.empty(); }
};

struct Target {
	bool redlock = false;        ///< redlock:// or redlocks:// (else redis://, rediss://, redis+sentinel://)
	bool sentinel = false;       ///< redis+sentinel://: nodes are the Sentinels
	std::string master_name;     ///< redis+sentinel://: the master the Sentinels monitor
	std::vector<Endpoint> nodes; ///< one for redis://, three or more for redlock://
	int db = 0;                  ///< SELECTed on every node when not 0
	Credentials credentials;     ///< the same on every node
	Tls tls;                     ///< rediss://, redlocks://: every node's TLS; else null
};

/// Parse redis[s]://[[user]:password@]host:port[/db][?TLS],
/// redlock[s]://[[user]:password@]h1:p1,h2:p2,h3:p3[,...][/db][?TLS] or
/// redis+sentinel://[[user]:password@]s1:p1[,...]/MASTER_NAME[/db], the
/// TLS material completed from options; Errc::invalid_argument with what is
/// wrong otherwise.
[[nodiscard]] Result<Target> parse_url(std::string_view url, const ClientOptions &options = {}) noexcept;

} // namespace pglease::detail::redis
