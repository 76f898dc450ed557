// leader_worker.cpp -- a leader-elected worker: of every instance running,
// one leads and writes, the others follow (make demo-election runs three).
//
//   pglease_leader_worker NAME SECONDS      (DSN from libpq's environment)
//
// Every instance follows the election "leader-worker" with an
// ElectionObserver, printing each change as it happens ("sees leader VALUE
// term T", "sees no leader"), and campaigns with its NAME as the value.  The
// leader appends a row to the table leader_log every 300 ms, each append
// fenced with its term: lease.fence("leader-worker", term) in the write's own
// transaction (pglease::fenced), so a leader deposed while it was frozen has
// its late write rejected by the server (Errc::lost); it then campaigns
// again.  After SECONDS it resigns and exits.  The table is made by whoever
// runs the instances (scripts/demo-election.sh):
//   CREATE TABLE leader_log (seq bigserial PRIMARY KEY, writer text, term bigint, entry int)
//
// Prints one line per event: "<ms since epoch> NAME <event> ...".
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>

#include <pqxx/pqxx>

#include "pglease/pglease.hpp"
#include "pglease/postgres.hpp"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr const char *election = "leader-worker";

std::mutex g_out; // the observer's thread prints too: one line at a time

void
say(const std::string &name, const std::string &what)
{
	using namespace std::chrono;
	const auto ms = duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
	std::lock_guard<std::mutex> lock(g_out);
	std::cout << ms << " " << name << " " << what << std::endl;
}

// lead -- append fenced entries while this term is current, until the
// deadline; returns when deposed (the server refused a write) or done
void
lead(pglease::Locker &client, pglease::Leadership &leadership, const std::string &name,
     Clock::time_point deadline)
{
	const std::string term = std::to_string(leadership.term());
	say(name, "elected term " + term);
	for (int entry = 1; Clock::now() < deadline; entry++) {
		// no local check first: after a freeze, the server decides
		auto wrote = pglease::fenced(client, leadership.lease(), [&](pqxx::work &tx) {
			tx.exec_params0("INSERT INTO leader_log (writer, term, entry) VALUES ($1, $2, $3)", name,
			                leadership.term(), entry);
		});
		if (!wrote) {
			if (wrote.error().code == pglease::Errc::lost)
				say(name, "write REJECTED term " + term + " (deposed: " + wrote.error().message + ")");
			else
				say(name, "write failed term " + term + ": " + wrote.error().message);
			return;
		}
		say(name, "wrote entry " + std::to_string(entry) + " term " + term);
		std::this_thread::sleep_for(300ms);
	}
	if (auto resigned = leadership.resign(); resigned)
		say(name, "resigned term " + term);
}

} // namespace

int
main(int argc, char **argv)
{
	if (argc != 3) {
		std::cerr << "usage: pglease_leader_worker NAME SECONDS   (DSN from libpq's environment)\n";
		return 64;
	}
	const std::string name = argv[1];
	const auto deadline = Clock::now() + std::chrono::seconds{std::atoi(argv[2])};
	auto locker = pglease::connect(""); // libpq's environment: PGHOST, PGDATABASE, ...
	// The observer waits in the server (observe sleeps there until the
	// election changes) on a locker of its own, named NAME-observer, so
	// that pg_stat_activity tells that wait from the leader's writes.
	auto observer_locker = pglease::connect("application_name=" + name + "-observer");
	if (!locker || !observer_locker) {
		std::cerr << (locker ? observer_locker.error() : locker.error()) << "\n";
		return 64;
	}
	pglease::Locker &client = **locker;
	pglease::Locker &observing = **observer_locker;

	auto observer = pglease::ElectionObserver::start(
	    observing, election,
	    [&](const pglease::LeaderView &view) {
		    say(name, view.has_leader ? "sees leader " + view.value + " term " + std::to_string(view.term)
		                              : std::string{"sees no leader"});
	    },
	    [&](const pglease::Error &e) { say(name, "observe: " + e.message); });
	if (!observer) {
		say(name, "cannot observe: " + observer.error().message);
		return 1;
	}
	pglease::LeaseOptions options;
	options.ttl = 2s;  // a frozen or killed leader is replaced within it
	options.wait = 1s; // then look at the deadline, and campaign again
	while (Clock::now() < deadline) {
		auto leadership = client.campaign(election, name, options);
		if (leadership) {
			lead(client, *leadership, name, deadline);
			continue;
		}
		if (leadership.error().code != pglease::Errc::timeout) {
			say(name, "campaign: " + leadership.error().message);
			std::this_thread::sleep_for(500ms);
		}
	}
	say(name, "done");
	return 0;
}
