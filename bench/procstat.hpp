// procstat.hpp -- machine and process CPU time from /proc, for the benchmark drivers
// (bench/lease_bench.cpp, bench/handoff.cpp).
#pragma once

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

// whole-machine CPU jiffies: busy and total, from /proc/stat ("cpu" line)
inline bool cpu_jiffies(unsigned long long &busy, unsigned long long &total)
{
	std::ifstream f("/proc/stat");
	std::string cpu;
	unsigned long long v[8] = {0};
	if (!(f >> cpu) || cpu != "cpu")
		return false;
	for (auto &x : v)
		f >> x;
	// user nice system idle iowait irq softirq steal
	total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
	busy = total - v[3] - v[4];
	return true;
}

// utime + stime of a process ("self" or a pid), in /proc/stat's clock ticks (0 if it is gone)
inline unsigned long long proc_jiffies(const std::string &pid)
{
	std::ifstream f("/proc/" + pid + "/stat");
	std::string line;
	if (!std::getline(f, line))
		return 0;
	// the command name (field 2) may hold spaces: count fields after its ')'
	auto p = line.rfind(')');
	if (p == std::string::npos)
		return 0;
	std::istringstream in(line.substr(p + 2));
	std::string field;
	unsigned long long ut = 0, st = 0;
	for (int i = 3; i <= 15 && (in >> field); i++)
	{
		if (i == 14)
			ut = std::strtoull(field.c_str(), nullptr, 10);
		if (i == 15)
			st = std::strtoull(field.c_str(), nullptr, 10);
	}
	return ut + st;
}

inline unsigned long long proc_jiffies(int pid)
{
	return pid > 0 ? proc_jiffies(std::to_string(pid)) : 0;
}

// 1-minute load average
inline double loadavg1()
{
	std::ifstream f("/proc/loadavg");
	double l;
	return (f >> l) ? l : NAN;
}
