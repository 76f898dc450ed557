// pglease/error.hpp -- errors without exceptions: an Errc code, the SQLSTATE
// and the server's message.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

namespace pglease {

/// What went wrong, in the terms a caller acts on.
enum class Errc {
	timeout,          ///< not granted within the wait, or a statement/lock timeout
	lost,             ///< the lease is no longer held (stale token, expired, taken over)
	nested,           ///< refused: this thread already holds a lease (no hold-and-wait)
	unavailable,      ///< the server cannot be reached now; retry later
	invalid_argument, ///< the request itself is wrong; retrying will not help
	permission,       ///< the role may not do this
	not_installed,    ///< the pg_lease extension is missing in this database
	internal,         ///< anything else (a bug, or an unexpected server error)
};

[[nodiscard]] std::string_view to_string(Errc code) noexcept;
std::ostream &operator<<(std::ostream &os, Errc code);

/// A failed operation: its code, the SQLSTATE (empty when none) and a message.
struct Error {
	Errc code = Errc::internal;
	std::string sqlstate;
	std::string message;
};

std::ostream &operator<<(std::ostream &os, const Error &error);

/// Connection trouble and timeouts may succeed later; the rest will not.
[[nodiscard]] bool is_retryable(const Error &error) noexcept;

/// TEXT with every password masked as "****": the password of a URL's
/// userinfo (scheme://user:PASSWORD@host), the value of a password= keyword
/// (libpq key=value strings, URL queries), and wherever it occurs, each such
/// password of DSN (the URL or conninfo the text may quote).  Every message
/// pglease makes from a URL goes through it; use it to log a DSN.
[[nodiscard]] std::string redact(std::string_view text, std::string_view dsn = {});

/// The Errc for a SQLSTATE of the pg_lease API (docs/sql.md "SQLSTATEs").
[[nodiscard]] Errc errc_from_sqlstate(std::string_view sqlstate) noexcept;

} // namespace pglease
