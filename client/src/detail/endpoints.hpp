// detail/endpoints.hpp -- the host:port list of a provider's URL
// (redis://, redlock://, etcd://, zookeeper://), parsed by one function so
// that every provider accepts and refuses the same hosts and ports.
//
// What a list is: one or more nodes separated by ','; a node is host:port or
// [IPv6]:port.
// - a host is a DNS name or an IPv4 address (letters, digits, '.', '-', '_';
//   at most 253 bytes), or in brackets an IPv6 address (hex digits, ':', '.'
//   for an embedded IPv4 tail, at least two ':', and an optional %zone of the
//   name characters).  A host with a space or a control byte could never be
//   resolved: it is refused here, before any I/O, not at every call;
// - an IPv6 address without brackets is refused (which ':' would start the
//   port?);
// - a port is required (no silent default) and is a decimal from 1 to 65535.
// The provider keeps what is its own: the scheme, credentials (decoded with
// percent_decoded, never quoted), a path (Redis /db, ZooKeeper chroot), a node named twice (Redlock).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pglease/result.hpp"

namespace pglease::detail {

/// One node of a URL: the host without brackets ("::1", not "[::1]").
struct HostPort {
	std::string host;
	int port = 0;
};

bool operator==(const HostPort &a, const HostPort &b) noexcept;
/// "host:port", or "[v6]:port" (as a URL writes it).
[[nodiscard]] std::string to_string(const HostPort &node);

/// A port as a URL or a server's answer writes it: a decimal from 1 to
/// 65535, or 0 when it is none.
[[nodiscard]] int port_of(std::string_view digits) noexcept;

/// The nodes of "h1:p1[,h2:p2...]", in order; Errc::invalid_argument whose
/// message says what is wrong, quoting the node (not the URL: the caller
/// prefixes it with the URL as its messages may show it).
[[nodiscard]] Result<std::vector<HostPort>> parse_host_list(std::string_view list) noexcept;

/// percent_decoded -- in with its %XX escapes decoded into out (a URL's user
/// or password, a query value); false when a '%' is not followed by two hex
/// digits.  The one decoder of every provider's URL.
bool percent_decoded(std::string_view in, std::string &out) noexcept;

} // namespace pglease::detail
