// error.cpp -- Errc names and the SQLSTATE mapping (README "SQLSTATEs").
#include "pglease/error.hpp"

namespace pglease {

std::string_view
to_string(Errc code) noexcept
{
	switch (code) {
	case Errc::timeout:
		return "timeout";
	case Errc::lost:
		return "lost";
	case Errc::nested:
		return "nested";
	case Errc::unavailable:
		return "unavailable";
	case Errc::invalid_argument:
		return "invalid_argument";
	case Errc::permission:
		return "permission";
	case Errc::not_installed:
		return "not_installed";
	case Errc::internal:
		return "internal";
	}
	return "internal";
}

std::ostream &
operator<<(std::ostream &os, Errc code)
{
	return os << to_string(code);
}

std::ostream &
operator<<(std::ostream &os, const Error &error)
{
	os << error.code;
	if (!error.sqlstate.empty())
		os << " (" << error.sqlstate << ")";
	if (!error.message.empty())
		os << ": " << error.message;
	return os;
}

Errc
errc_from_sqlstate(std::string_view s) noexcept
{
	if (s == "LS001")
		return Errc::lost;
	if (s == "LS002")
		return Errc::nested;
	if (s == "22023" || s == "22004" || s == "22007" || s == "0A000")
		return Errc::invalid_argument;
	if (s == "42501")
		return Errc::permission;
	// schema, function or table of the extension missing; 55000: needs preload
	if (s == "3F000" || s == "42883" || s == "42P01" || s == "55000")
		return Errc::not_installed;
	// statement_timeout / cancel, lock_timeout
	if (s == "57014" || s == "55P03")
		return Errc::timeout;
	// connection exceptions, shutdown/termination, too many connections,
	// read-only standby (after failover the old primary may refuse writes)
	if (s.rfind("08", 0) == 0 || s.rfind("57P", 0) == 0 || s == "53300" || s == "25006")
		return Errc::unavailable;
	return Errc::internal;
}

bool
is_retryable(const Error &error) noexcept
{
	switch (error.code) {
	case Errc::timeout:
	case Errc::unavailable:
		return true;
	case Errc::internal:
		// serialization failure / deadlock: retry the transaction
		return error.sqlstate.rfind("40", 0) == 0;
	default:
		return false;
	}
}

} // namespace pglease
