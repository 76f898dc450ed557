// duration.hpp -- durations as the pglease CLI reads and prints them.
//
// One spelling for every duration a user types or reads: an integer or a
// decimal with a unit (`250ms`, `30s`, `5m`, `2h`, `1.5s`), or a plain number
// meaning seconds. The printed form is the shortest exact one and is also
// valid PostgreSQL interval input, so it can be pasted into SQL unchanged.
#ifndef PGLEASE_CLI_DURATION_HPP
#define PGLEASE_CLI_DURATION_HPP

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "pglease/options.hpp"

namespace pglease::cli {

// parse_duration -- `250ms`, `30s`, `5m`, `2h`, `1.5s`, `30` (seconds).
// std::nullopt for empty text, a sign, anything but digits + one unit, a value
// that is not a whole number of milliseconds (`0.5ms`: a lock timeout is never
// silently rounded), and a value that does not fit in milliseconds.
[[nodiscard]] std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) noexcept;

// format_duration -- the library's (pglease/options.hpp): the shortest exact
// form, 30000 -> "30s", 1500 -> "1500ms"; parse_duration reads it back.
using pglease::format_duration;

} // namespace pglease::cli

#endif // PGLEASE_CLI_DURATION_HPP
