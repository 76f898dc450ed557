// duration.cpp -- parse and print the CLI's durations (see duration.hpp).
#include "duration.hpp"

#include <array>
#include <cstdint>
#include <limits>

namespace pglease::cli {

namespace {

using rep = std::chrono::milliseconds::rep;

struct DurationUnit {
	std::string_view suffix;
	rep milliseconds;
};

// Units a duration may be written in.
constexpr std::array<DurationUnit, 4> duration_units{{
    {"h", 3'600'000},
    {"m", 60'000},
    {"s", 1'000},
    {"ms", 1},
}};

constexpr rep rep_max = std::numeric_limits<rep>::max();

[[nodiscard]] constexpr bool
is_digit(char c) noexcept
{
	return c >= '0' && c <= '9';
}

// unit_milliseconds -- the length of one unit, or 0 when the suffix is unknown.
[[nodiscard]] rep
unit_milliseconds(std::string_view suffix) noexcept
{
	if (suffix.empty())
		return 1'000; // a plain number means seconds
	for (const DurationUnit &unit : duration_units)
		if (unit.suffix == suffix)
			return unit.milliseconds;
	return 0;
}

// parse_digits -- a non-empty run of digits as an integer; nullopt on overflow.
[[nodiscard]] std::optional<rep>
parse_digits(std::string_view digits) noexcept
{
	if (digits.empty())
		return std::nullopt;
	rep value = 0;
	for (char c : digits) {
		if (!is_digit(c))
			return std::nullopt;
		const rep digit = c - '0';
		if (value > (rep_max - digit) / 10)
			return std::nullopt;
		value = value * 10 + digit;
	}
	return value;
}

} // namespace

std::optional<std::chrono::milliseconds>
parse_duration(std::string_view text) noexcept
{
	std::size_t number_end = 0;
	while (number_end < text.size() && (is_digit(text[number_end]) || text[number_end] == '.'))
		++number_end;
	const rep unit = unit_milliseconds(text.substr(number_end));
	if (unit == 0)
		return std::nullopt;

	const std::string_view number = text.substr(0, number_end);
	const std::size_t dot = number.find('.');
	const std::optional<rep> whole = parse_digits(number.substr(0, dot));
	if (!whole || *whole > rep_max / unit)
		return std::nullopt;
	rep total = *whole * unit;

	if (dot != std::string_view::npos) {
		std::string_view fraction = number.substr(dot + 1);
		if (fraction.empty())
			return std::nullopt; // "1." is a typo, not a number
		while (fraction.size() > 1 && fraction.back() == '0')
			fraction.remove_suffix(1);
		// No unit (at most 2^7 * 5^5 in an hour) can make more than 7
		// significant decimals a whole number of milliseconds; this bound also
		// keeps fraction * unit far from overflow.
		if (fraction.size() > 7)
			return std::nullopt;
		const std::optional<rep> numerator = parse_digits(fraction);
		if (!numerator)
			return std::nullopt; // a second dot, or a sign after it
		rep denominator = 1;
		for (std::size_t i = 0; i < fraction.size(); ++i)
			denominator *= 10;
		if ((*numerator * unit) % denominator != 0)
			return std::nullopt;
		const rep fraction_ms = *numerator * unit / denominator;
		if (total > rep_max - fraction_ms)
			return std::nullopt;
		total += fraction_ms;
	}
	return std::chrono::milliseconds{total};
}

} // namespace pglease::cli
