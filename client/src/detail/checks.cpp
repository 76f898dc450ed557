// detail/checks.cpp -- the argument checks every provider's calls share
// (labels: length, NUL bytes, UTF-8), and the saturating time arithmetic
// of deadlines (detail/provider.hpp).
#include "detail/provider.hpp"

namespace pglease {
namespace detail {

namespace {

// utf8_error_at -- the offset of the first byte that is not part of valid
// UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above
// U+10FFFF), or npos
std::size_t
utf8_error_at(std::string_view s) noexcept
{
	std::size_t i = 0;
	while (i < s.size()) {
		auto b = static_cast<unsigned char>(s[i]);
		std::size_t n;
		unsigned char lo = 0x80, hi = 0xBF; // allowed range of the second byte
		if (b < 0x80)
			n = 1;
		else if (b >= 0xC2 && b <= 0xDF)
			n = 2;
		else if (b >= 0xE0 && b <= 0xEF) {
			n = 3;
			if (b == 0xE0)
				lo = 0xA0; // overlong
			else if (b == 0xED)
				hi = 0x9F; // surrogates
		} else if (b >= 0xF0 && b <= 0xF4) {
			n = 4;
			if (b == 0xF0)
				lo = 0x90; // overlong
			else if (b == 0xF4)
				hi = 0x8F; // above U+10FFFF
		} else
			return i;
		if (i + n > s.size())
			return i;
		for (std::size_t k = 1; k < n; k++) {
			auto c = static_cast<unsigned char>(s[i + k]);
			if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF))
				return i;
		}
		i += n;
	}
	return std::string_view::npos;
}

} // namespace

Clock::time_point
deadline_after(Clock::time_point from, milliseconds d) noexcept
{
	if (d <= milliseconds{0})
		return from + d; // not reached with the checked values; kept exact
	auto room = std::chrono::duration_cast<milliseconds>(Clock::time_point::max() - from);
	if (d >= room)
		return Clock::time_point::max();
	return from + d;
}

milliseconds
saturating_add(milliseconds a, milliseconds b) noexcept
{
	if (b > milliseconds::zero() && a > milliseconds::max() - b)
		return milliseconds::max();
	return a + b;
}

Result<void>
check_label(std::string_view what, std::string_view value, std::size_t max_bytes) noexcept
{
	try {
		std::string name{what};
		if (value.size() > max_bytes)
			return Error{Errc::invalid_argument, "22023",
			             name + " is too long: " + std::to_string(value.size()) + " bytes, the limit is " +
			                 std::to_string(max_bytes)};
		if (auto nul = value.find('\0'); nul != std::string_view::npos)
			return Error{Errc::invalid_argument, "22023",
			             name + " contains a NUL byte (at byte " + std::to_string(nul) +
			                 "): names are UTF-8 text without NUL bytes"};
		if (auto bad = utf8_error_at(value); bad != std::string_view::npos)
			return Error{Errc::invalid_argument, "22021",
			             name + " is not valid UTF-8 (at byte " + std::to_string(bad) + ")"};
		return {};
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

Result<void>
check_resource(std::string_view resource) noexcept
{
	if (resource.empty())
		return Error{Errc::invalid_argument, "22023", "resource must not be empty"};
	return check_label("resource", resource, max_resource_bytes);
}

} // namespace detail
} // namespace pglease
