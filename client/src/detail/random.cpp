// detail/random.cpp -- random bits for holder labels (random.hpp).
#include "detail/random.hpp"

#include <sys/random.h>

#include <cstdio>
#include <random>

namespace pglease::detail {

std::uint64_t
random_bits() noexcept
{
	std::uint64_t bits = 0;
	if (getrandom(&bits, sizeof bits, 0) == static_cast<ssize_t>(sizeof bits))
		return bits;
	try {
		std::random_device random;
		return (static_cast<std::uint64_t>(random()) << 32) | random();
	} catch (...) {
		return bits; // no source at all: the label still has host and PID
	}
}

std::string
random_hex()
{
	char hex[17];
	std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(random_bits()));
	return hex;
}

} // namespace pglease::detail
