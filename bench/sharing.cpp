// sharing.cpp -- the shared-lease and semaphore benchmark's driver
// (bench/sharing.sh, make bench): for each provider named on the command
// line, what reader-writer leases and semaphores sustain.
//
//   pglease_sharing_bench [--seconds S] NAME=URL...
//
// Per provider, one Markdown table row:
//   shared pairs/s    8 clients (each a thread with a Locker of its own, so a
//                     connection of its own), each taking a shared lease on
//                     one resource and releasing it, in a loop, for S seconds:
//                     acquire+release pairs per second, all clients together
//   semaphore N=4     16 clients on one semaphore of 4, each acquiring a
//                     permit (waiting up to 30 s), holding it 2 ms and
//                     releasing it, for S seconds: grants per second, and
//                     fairness as the most grants one client got over the
//                     fewest (1.0 = perfectly even)
// A provider without the capability prints what it answered instead.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "pglease/pglease.hpp"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct Run {
	std::vector<long> counts; // grants per client
	std::string error;        // the first error seen, if any
	double seconds = 0;
};

// run -- `clients` threads, each with its own Locker, looping `one` until
// `seconds` have passed; counts of successful rounds per client
template <class One>
Run
run(const std::string &url, int clients, double seconds, One one)
{
	Run r;
	r.counts.assign(clients, 0);
	std::vector<std::unique_ptr<pglease::Locker>> lockers;
	for (int i = 0; i < clients; i++) {
		auto l = pglease::connect(url);
		if (!l) {
			r.error = pglease::to_string(l.error().code).data() + std::string{": "} + l.error().message;
			return r;
		}
		lockers.push_back(std::move(*l));
	}
	std::atomic<bool> stop{false};
	std::vector<std::string> errors(clients);
	std::vector<std::thread> threads;
	auto t0 = Clock::now();
	for (int i = 0; i < clients; i++)
		threads.emplace_back([&, i] {
			while (!stop.load()) {
				auto e = one(*lockers[i]);
				if (!e.empty()) {
					errors[i] = e;
					return;
				}
				r.counts[i]++;
			}
		});
	std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
	stop = true;
	for (auto &t : threads)
		t.join();
	r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
	for (auto &e : errors)
		if (!e.empty() && r.error.empty())
			r.error = e;
	return r;
}

std::string
text(const pglease::Error &e)
{
	return std::string{pglease::to_string(e.code)} + ": " + e.message;
}

// pairs -- one shared acquire + release; "" or what went wrong
std::string
shared_pair(pglease::Locker &l, const std::string &resource)
{
	pglease::LeaseOptions o;
	o.ttl = 10s;
	o.wait = 10s;
	o.mode = pglease::Mode::shared;
	o.auto_renew = false;
	auto lease = l.acquire(resource, o);
	if (!lease)
		return text(lease.error());
	if (auto r = lease->release(); !r)
		return text(r.error());
	return {};
}

std::string
permit_round(pglease::Locker &l, const std::string &resource)
{
	pglease::LeaseOptions o;
	o.ttl = 10s;
	o.wait = 30s;
	o.limit = 4;
	o.auto_renew = false;
	auto lease = l.acquire(resource, o);
	if (!lease)
		return text(lease.error());
	std::this_thread::sleep_for(2ms);
	if (auto r = lease->release(); !r)
		return text(r.error());
	return {};
}

std::string
cell_rate(const Run &r)
{
	if (!r.error.empty() && std::all_of(r.counts.begin(), r.counts.end(), [](long c) { return c == 0; }))
		return "refused (" + r.error.substr(0, 60) + ")";
	long total = 0;
	for (long c : r.counts)
		total += c;
	char buf[64];
	std::snprintf(buf, sizeof buf, "%.0f", r.seconds > 0 ? total / r.seconds : 0.0);
	return buf + std::string{r.error.empty() ? "" : " (an error: " + r.error.substr(0, 60) + ")"};
}

std::string
cell_fairness(const Run &r)
{
	if (r.counts.empty())
		return "-";
	auto [lo, hi] = std::minmax_element(r.counts.begin(), r.counts.end());
	if (*lo == 0)
		return *hi == 0 ? "-" : "a client got none";
	char buf[64];
	std::snprintf(buf, sizeof buf, "%.2f (%ld / %ld)", double(*hi) / double(*lo), *hi, *lo);
	return buf;
}

} // namespace

int
main(int argc, char **argv)
{
	double seconds = 10;
	std::vector<std::pair<std::string, std::string>> providers;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (a == "--seconds" && i + 1 < argc) {
			seconds = std::atof(argv[++i]);
		} else if (auto eq = a.find('='); eq != std::string::npos && eq > 0) {
			providers.emplace_back(a.substr(0, eq), a.substr(eq + 1));
		} else {
			std::fprintf(stderr, "usage: pglease_sharing_bench [--seconds S] NAME=URL...\n");
			return 64;
		}
	}
	if (providers.empty() || seconds <= 0) {
		std::fprintf(stderr, "usage: pglease_sharing_bench [--seconds S] NAME=URL...\n");
		return 64;
	}
	std::printf("| provider | shared acquire+release pairs/s (8 clients) | semaphore N=4, 16 clients: grants/s |"
	            " fairness: most / fewest grants per client |\n|---|---|---|---|\n");
	for (auto &[name, url] : providers) {
		const std::string stamp = std::to_string(Clock::now().time_since_epoch().count());
		Run shared = run(url, 8, seconds, [&](pglease::Locker &l) { return shared_pair(l, "bench-shared-" + stamp); });
		Run sem = run(url, 16, seconds, [&](pglease::Locker &l) { return permit_round(l, "bench-sem-" + stamp); });
		std::printf("| %s | %s | %s | %s |\n", name.c_str(), cell_rate(shared).c_str(), cell_rate(sem).c_str(),
		            cell_fairness(sem).c_str());
		std::fflush(stdout);
	}
	return 0;
}
