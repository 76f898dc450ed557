// detail/tls.hpp -- the TLS material of a provider's URL (etcds://, rediss://,
// redlocks://), read one way for every provider: the query parameters
// cacert=, cert= and key= (paths, %XX-decoded), completed from the
// ClientOptions fields tls_ca_file, tls_cert_file and tls_key_file, and
// checked before any I/O.
//
// The rules (docs/production.md):
// - a URL parameter wins over the ClientOptions field of the same material;
// - no cacert: the system's CA store;
// - cert and key come together (a client certificate), or neither;
// - every file named must be a regular file this process can read;
// - an unknown parameter is refused rather than ignored.
// The caller keeps what is its own: which scheme takes TLS, and refusing
// material given to a plain one.  Messages name the paths, never a file's
// contents; they carry no URL (the caller prefixes its own, masked).
// Nothing here speaks TLS: the providers do (libcurl for etcd, OpenSSL for
// Redis), so the core library links neither.
#pragma once

#include <string>
#include <string_view>

#include "pglease/options.hpp"

namespace pglease::detail {

/// PEM files, each empty when not given.
struct TlsFiles {
	std::string ca_file;   ///< empty: the system's CA store
	std::string cert_file; ///< with key_file, or both empty
	std::string key_file;

	[[nodiscard]] bool any() const noexcept
	{
		return !ca_file.empty() || !cert_file.empty() || !key_file.empty();
	}
};

/// tls_query_problem -- "cacert=PATH&cert=PATH&key=PATH" (any subset, any
/// order) into files; "" when fine, else what is wrong.  May throw
/// std::bad_alloc.
[[nodiscard]] std::string tls_query_problem(std::string_view query, TlsFiles &files);

/// tls_files_from -- what files does not name yet, taken from options.
void tls_files_from(const ClientOptions &options, TlsFiles &files);

/// tls_files_problem -- "" when files are usable (a certificate with its
/// key, each file readable), else what is wrong, naming the path.  May throw
/// std::bad_alloc.
[[nodiscard]] std::string tls_files_problem(const TlsFiles &files);

} // namespace pglease::detail
