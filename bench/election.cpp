// election.cpp -- the election benchmark's driver (bench/election.sh, make
// bench): for each provider named on the command line, how long an election
// takes to move on and to tell its followers.
//
//   pglease_election_bench --worker PATH [--rounds N] NAME=URL...
//
// Per provider, one Markdown table row:
//   resign -> next leader  a candidate waits while the leader resigns: from
//                          the resign call to the waiter's campaign returning
//                          (N rounds; p50, max)
//   killed -> new leader   the leader is a process (election_worker once,
//                          TTL 2 s) killed with SIGKILL: from the kill to the
//                          waiter's campaign returning; bounded below by the
//                          TTL (N/4 rounds, at least 3; p50, max)
//   change -> observer     the leader proclaims a new value; from the call to
//                          a follower's observe returning it, on another
//                          connection (4N changes; p50, p99)
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "pglease/pglease.hpp"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double
ms_since(Clock::time_point t0, Clock::time_point t1)
{
	return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

double
pct(std::vector<double> v, double p)
{
	if (v.empty())
		return -1;
	std::sort(v.begin(), v.end());
	auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
	return v[std::min(i, v.size() - 1)];
}

pglease::LeaseOptions
options(std::chrono::milliseconds ttl, std::chrono::milliseconds wait)
{
	pglease::LeaseOptions o;
	o.ttl = ttl;
	o.wait = wait;
	return o;
}

// handover -- resign -> the waiting candidate elected, in ms
std::vector<double>
handover(pglease::Locker &locker, const std::string &election, int rounds)
{
	std::vector<double> out;
	for (int i = 0; i < rounds; i++) {
		auto a = locker.campaign(election, "a", options(10s, 10s));
		if (!a) {
			std::fprintf(stderr, "campaign: %s\n", a.error().message.c_str());
			continue;
		}
		std::atomic<bool> started{false};
		auto b = std::async(std::launch::async, [&] {
			started = true;
			auto r = locker.campaign(election, "b", options(10s, 10s));
			return std::make_pair(Clock::now(), r ? r->term() : -1);
		});
		while (!started)
			std::this_thread::sleep_for(1ms);
		std::this_thread::sleep_for(100ms); // b is queued or watching
		auto t0 = Clock::now();
		(void)a->resign();
		auto [t1, term] = b.get();
		if (term > 0)
			out.push_back(ms_since(t0, t1));
		// b's Leadership ended with its thread's result: resigned in the async's destructor
	}
	return out;
}

// killed -- SIGKILL of a leading process -> the waiting candidate elected, in ms
std::vector<double>
killed(pglease::Locker &locker, const std::string &url, const std::string &election, const char *worker,
       int rounds)
{
	std::vector<double> out;
	for (int i = 0; i < rounds; i++) {
		int fds[2];
		if (pipe(fds) != 0)
			break;
		pid_t pid = fork();
		if (pid == 0) {
			dup2(fds[1], 1);
			close(fds[0]);
			close(fds[1]);
			execl(worker, worker, "once", url.c_str(), election.c_str(), "doomed", "2000",
			      static_cast<char *>(nullptr));
			_exit(127);
		}
		close(fds[1]);
		char line[128] = {0};
		FILE *f = fdopen(fds[0], "r");
		bool elected = f && std::fgets(line, sizeof line, f) && std::strncmp(line, "elected ", 8) == 0;
		if (elected) {
			auto b = std::async(std::launch::async, [&] {
				auto r = locker.campaign(election, "b", options(10s, 20s));
				return std::make_pair(Clock::now(), r ? r->term() : -1);
			});
			std::this_thread::sleep_for(200ms);
			auto t0 = Clock::now();
			kill(pid, SIGKILL);
			auto [t1, term] = b.get();
			if (term > 0)
				out.push_back(ms_since(t0, t1));
		}
		kill(pid, SIGKILL);
		waitpid(pid, nullptr, 0);
		if (f)
			std::fclose(f);
	}
	return out;
}

// informed -- proclaim -> a follower's observe returns the value, in ms
std::vector<double>
informed(pglease::Locker &locker, pglease::Locker &follower, const std::string &election, int changes)
{
	std::vector<double> out;
	auto lead = locker.campaign(election, "v0", options(30s, 10s));
	if (!lead)
		return out;
	std::atomic<bool> stop{false};
	std::vector<Clock::time_point> seen_at(static_cast<std::size_t>(changes) + 1);
	std::atomic<int> seen{-1};
	std::thread observer([&] {
		pglease::LeaderView v;
		while (!stop) {
			auto next = follower.observe(election, v, 500ms);
			if (!next)
				continue;
			v = *next;
			int n = v.value.size() > 1 ? std::atoi(v.value.c_str() + 1) : -1;
			if (n >= 0 && n <= changes) {
				seen_at[static_cast<std::size_t>(n)] = Clock::now();
				seen = n;
			}
		}
	});
	for (int i = 1; i <= changes; i++) {
		// the follower is asleep in its observe of the last value
		std::this_thread::sleep_for(20ms);
		auto t0 = Clock::now();
		if (!lead->proclaim("v" + std::to_string(i)))
			break;
		auto end = Clock::now() + 5s;
		while (seen.load() < i && Clock::now() < end)
			std::this_thread::sleep_for(100us);
		if (seen.load() >= i)
			out.push_back(ms_since(t0, seen_at[static_cast<std::size_t>(i)]));
	}
	stop = true;
	observer.join();
	return out;
}

} // namespace

int
main(int argc, char **argv)
{
	const char *worker = nullptr;
	int rounds = 20;
	std::vector<std::pair<std::string, std::string>> providers;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (a == "--worker" && i + 1 < argc)
			worker = argv[++i];
		else if (a == "--rounds" && i + 1 < argc)
			rounds = std::max(4, std::atoi(argv[++i]));
		else if (auto eq = a.find('='); eq != std::string::npos)
			providers.emplace_back(a.substr(0, eq), a.substr(eq + 1));
		else {
			std::fprintf(stderr, "usage: pglease_election_bench --worker PATH [--rounds N] NAME=URL...\n");
			return 64;
		}
	}
	if (!worker || providers.empty()) {
		std::fprintf(stderr, "usage: pglease_election_bench --worker PATH [--rounds N] NAME=URL...\n");
		return 64;
	}
	std::printf("| provider | resign -> next leader p50 / max (ms) | killed -> new leader p50 / max (ms, TTL 2 s) "
	            "| change -> observer p50 / p99 (ms) |\n|---|---|---|---|\n");
	int failed = 0;
	for (auto &[name, url] : providers) {
		auto l1 = pglease::connect(url);
		auto l2 = pglease::connect(url);
		if (!l1 || !l2) {
			std::fprintf(stderr, "%s: %s\n", name.c_str(), (!l1 ? l1 : l2).error().message.c_str());
			failed++;
			continue;
		}
		std::string base = "bench-election:" + name + "/" + std::to_string(getpid());
		auto h = handover(**l1, base + "/handover", rounds);
		auto k = killed(**l1, url, base + "/killed", worker, std::max(3, rounds / 4));
		auto o = informed(**l1, **l2, base + "/observe", 4 * rounds);
		if (h.empty() || k.empty() || o.empty())
			failed++;
		std::printf("| %s | %.1f / %.1f | %.0f / %.0f | %.2f / %.2f |\n", name.c_str(), pct(h, 0.5), pct(h, 1),
		            pct(k, 0.5), pct(k, 1), pct(o, 0.5), pct(o, 0.99));
		std::fflush(stdout);
	}
	return failed ? 1 : 0;
}
