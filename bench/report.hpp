// bench/report.hpp -- the runs of one benchmark and what is written from
// them: latest.json (every run), latest.md (medians, min-max, targets) and
// latest.svg (the chart).  One copy for the whole benchmark.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "systems.hpp"

namespace bench {

/// One measurement: one system at one point of one scenario, one repetition.
struct Run {
	std::string scenario; ///< uncontended, hot, scale, renew
	std::string point;    ///< clients ("1", "8", "32") or resources ("1k", "1M")
	std::string system;   ///< System::key
	int rep = 0;
	std::map<std::string, double> m; ///< rate, acq_p50, acq_p99, rel_p50, handoff_p50, fairness, ...
	double busy_pct = 0;             ///< whole machine CPU busy during the window
	double load1 = 0;                ///< 1-min load average after the window
	std::string error;               ///< non-empty: the run failed
	std::string note;                ///< the last error a session saw (refusals included)
};

struct Report {
	std::vector<std::pair<std::string, std::string>> meta; ///< "key=value" lines of the header
	std::vector<System> systems;
	std::vector<Run> runs;
	int reps = 0;
	double duration = 0, hot_duration = 0;
};

void write_json(const Report &r, const std::string &path);
void write_markdown(const Report &r, const std::string &path);
void write_svg(const Report &r, const std::string &path);

} // namespace bench
