// etcd/url.hpp -- what an etcd:// or etcds:// URL says: the endpoints, the
// credentials and the TLS material, checked before any I/O.
//
//   etcd://[user:password@]h1:p1[,h2:p2...][/][?lock_prefix=P&election_prefix=P]
//   etcds://[user:password@]h1:p1[,h2:p2...][/][?cacert=PATH&cert=PATH&key=PATH
//                                              &lock_prefix=P&election_prefix=P]
//
// lock_prefix= and election_prefix= (percent-decoded; may be empty) are
// put before a lock's resource or an election's name to make its etcd key
// prefix "<prefix><name>/", the layout of etcd's concurrency.Mutex and
// Election (`etcdctl lock NAME` / `etcdctl elect NAME` with NAME =
// "<prefix><name>").  Defaults: "pglease/lock/", "pglease/election/".  At
// most 256 bytes of UTF-8 without NUL, each given at most once.
//
// etcds:// speaks HTTPS to every endpoint: the server's certificate is
// verified against cacert= (or ClientOptions::tls_ca_file; neither: the
// system's CA store) and its host name checked, always.  cert= and key= (or
// tls_cert_file, tls_key_file) give a client certificate; one without the
// other is refused.  A URL parameter wins over the ClientOptions field of the
// same material.  Every file named must be readable (invalid_argument naming
// the path otherwise).  TLS material with etcd:// (plain HTTP) is refused
// rather than ignored.  User and password are percent-decoded; no message
// quotes the password.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "detail/endpoints.hpp"
#include "pglease/options.hpp"
#include "pglease/result.hpp"

namespace pglease::detail::etcd {

struct Target {
	std::vector<HostPort> endpoints;
	bool tls = false;
	std::string ca_file;   // empty: the system's CA store
	std::string cert_file; // with key_file, or both empty
	std::string key_file;
	std::string user; // empty: no authentication
	std::string password;
	std::string lock_prefix = "pglease/lock/";
	std::string election_prefix = "pglease/election/";
};

/// The target of url, its TLS material completed from options; or
/// Errc::invalid_argument naming what is wrong (never the password).
Result<Target> parse_target(std::string_view url, const ClientOptions &options) noexcept;

} // namespace pglease::detail::etcd
