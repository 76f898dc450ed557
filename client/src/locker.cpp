// locker.cpp -- what a Locker answers where its provider writes nothing
// (pglease/locker.hpp): the token-level calls, refused with
// Errc::invalid_argument naming the provider.  Every provider's locker
// derives from detail::LockerBase, which checks the arguments and calls the
// provider's own renew_by_token / release_by_token instead.
#include <string>

#include "pglease/locker.hpp"

namespace pglease {

Result<bool>
Locker::renew(std::string_view, std::int64_t, std::chrono::milliseconds) noexcept
{
	return Error{Errc::invalid_argument, "",
	             "the " + std::string{provider()} + " provider cannot renew a lease by its token"};
}

Result<bool>
Locker::release(std::string_view, std::int64_t) noexcept
{
	return Error{Errc::invalid_argument, "",
	             "the " + std::string{provider()} + " provider cannot release a lease by its token"};
}

// a Locker of its own that knows no holders refuses rather than ignore one
Result<bool>
Locker::renew(std::string_view, std::int64_t, std::string_view, std::chrono::milliseconds) noexcept
{
	return Error{Errc::invalid_argument, "",
	             "the " + std::string{provider()} + " provider cannot renew a lease by its token and holder"};
}

Result<bool>
Locker::release(std::string_view, std::int64_t, std::string_view) noexcept
{
	return Error{Errc::invalid_argument, "",
	             "the " + std::string{provider()} +
	                 " provider cannot release a lease by its token and holder"};
}

} // namespace pglease
