// redis/sha1.hpp -- SHA-1 as lowercase hex: the name EVALSHA gives a Lua script.
// Computed locally so a script's name is known before any server has seen it
// (and is the same on every Redlock node) without a crypto library dependency.
#pragma once

#include <string>
#include <string_view>

namespace pglease::detail::redis {

/// The 40 lowercase hex digits of SHA-1(data), as Redis's SCRIPT LOAD returns them.
[[nodiscard]] std::string sha1_hex(std::string_view data);

} // namespace pglease::detail::redis
