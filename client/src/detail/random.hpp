// detail/random.hpp -- random bits for labels that must not repeat across
// machines, containers or reused PIDs (holder labels).
#pragma once

#include <cstdint>
#include <string>

namespace pglease::detail {

/// 64 bits from the kernel's generator (getrandom: no file to open, so it
/// works in a container without /dev/urandom); std::random_device only where
/// the call fails.
[[nodiscard]] std::uint64_t random_bits() noexcept;

/// random_bits() as 16 lowercase hex digits.
[[nodiscard]] std::string random_hex();

} // namespace pglease::detail
