// version.cpp -- dotted version comparison for the extension version check.
#include "pglease/version.hpp"

namespace pglease {

namespace {

// next_part -- the number at the front of v (0 if none), and v past its '.'
unsigned long long
next_part(std::string_view &v) noexcept
{
	unsigned long long n = 0;
	std::size_t i = 0;
	for (; i < v.size() && v[i] >= '0' && v[i] <= '9'; i++)
		n = n * 10 + static_cast<unsigned long long>(v[i] - '0');
	std::size_t dot = v.find('.', i);
	v = dot == std::string_view::npos ? std::string_view{} : v.substr(dot + 1);
	return n;
}

} // namespace

int
compare_versions(std::string_view a, std::string_view b) noexcept
{
	while (!a.empty() || !b.empty()) {
		unsigned long long x = next_part(a), y = next_part(b);
		if (x != y)
			return x < y ? -1 : 1;
	}
	return 0;
}

} // namespace pglease
