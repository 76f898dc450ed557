// advise_render.cpp -- the advice as `pglease advise` prints it: the four
// lines, the explanation with --explain, then the code of --emit.
#include "advise.hpp"

#include "advise_emit.hpp"
#include "duration.hpp"

namespace pglease::cli {

std::string
render(const Advice &advice, const AdviseInput &input)
{
	// with --emit sql the whole output is one psql script: what is not SQL is
	// a comment, so it can be piped into psql as it is
	const bool sql = input.emit == "sql" && advice.provider == "PostgreSQL" && advice.strategy != "Election";
	const std::string config = sql ? "-- " : "";
	const std::string note = sql ? "-- " : "# ";
	std::string text =
	    config + "Provider: " + advice.provider + "\n" + config + "Strategy: " + advice.strategy + "\n" +
	    config + "TTL: " + format_duration(advice.ttl) + "\n" + config + "Safety: " + advice.safety + "\n";
	if (input.explain)
		for (const std::string &line : advice.explanation)
			text += note + line + "\n";
	return text + emit_code(advice, input);
}

} // namespace pglease::cli
