// options.cpp -- Strategy names, durations and describe() (docs/decision-tree.md).
#include "pglease/options.hpp"

#include <sstream>

namespace pglease {

std::string_view
to_string(Strategy strategy) noexcept
{
	switch (strategy) {
	case Strategy::lease:
		return "Lease";
	case Strategy::ephemeral:
		return "Ephemeral";
	case Strategy::advisory:
		return "Advisory";
	}
	return "Lease";
}

std::string_view
to_string(Mode mode) noexcept
{
	return mode == Mode::shared ? "shared" : "exclusive";
}

std::string
format_duration(std::chrono::milliseconds d)
{
	const long long ms = d.count();
	if (ms == 0)
		return "0s";
	if (ms % 3600000 == 0)
		return std::to_string(ms / 3600000) + "h";
	if (ms % 60000 == 0)
		return std::to_string(ms / 60000) + "m";
	if (ms % 1000 == 0)
		return std::to_string(ms / 1000) + "s";
	return std::to_string(ms) + "ms";
}

std::string
describe(const LeaseOptions &options)
{
	Strategy s =
	    options.session_bound && options.strategy == Strategy::lease ? Strategy::ephemeral : options.strategy;
	std::ostringstream out;
	out << "Provider: PostgreSQL\n"
	    << "Strategy: " << to_string(s) << "\n"
	    << "TTL: " << format_duration(options.ttl) << "\n"
	    << "Safety: " << (s == Strategy::advisory ? "none" : "fencing") << "\n";
	return out.str();
}

} // namespace pglease
