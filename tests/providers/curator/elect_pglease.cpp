// elect_pglease.cpp -- the pglease side of tests/providers/zk_curator.sh: a
// candidate or a follower of one election, printing what it sees.
//
//   elect_pglease URL NAME leader
//       one leader() read: "leader term=T value=V" or "none"
//   elect_pglease URL NAME campaign VALUE TTL_MS STOPFILE [NEW_VALUE]
//       campaign (waiting up to 60 s): "elected term=T" once leader; with
//       NEW_VALUE, proclaim it after 1 s ("proclaimed NEW_VALUE"); then hold
//       (auto-renewed) until STOPFILE exists: resign and "resigned"; "lost"
//       if the leadership ends first
//   elect_pglease URL NAME observe MS
//       an ElectionObserver for MS ms: one line per change,
//       "view term=T value=V" or "view none"
//
// Every line is flushed as it happens (the script reads them while this
// runs); an error prints "error CODE: MESSAGE" and exits 2.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>

#include "pglease/pglease.hpp"

namespace {

using namespace std::chrono_literals;

int
failed(const pglease::Error &error)
{
	std::cout << "error " << error.code << ": " << error.message << std::endl;
	return 2;
}

void
print(const pglease::LeaderView &view, const char *what)
{
	if (view.has_leader)
		std::cout << what << " term=" << view.term << " value=" << view.value << std::endl;
	else
		std::cout << what << " none" << std::endl;
}

int
campaign(pglease::Locker &locker, const std::string &name, const std::string &value, long ttl_ms,
         const std::string &stopfile, const char *new_value)
{
	pglease::LeaseOptions options;
	options.ttl = std::chrono::milliseconds{ttl_ms};
	options.wait = 60s;
	auto won = locker.campaign(name, value, options);
	if (!won)
		return failed(won.error());
	std::atomic<bool> lost{false};
	won->on_lost([&](const pglease::Error &) { lost = true; });
	std::cout << "elected term=" << won->term() << std::endl;
	if (new_value) {
		std::this_thread::sleep_for(1s);
		if (auto done = won->proclaim(new_value); !done)
			return failed(done.error());
		std::cout << "proclaimed " << won->value() << std::endl;
	}
	while (!std::filesystem::exists(stopfile)) {
		if (lost) {
			std::cout << "lost" << std::endl;
			return 1;
		}
		std::this_thread::sleep_for(50ms);
	}
	if (auto done = won->resign(); !done)
		return failed(done.error());
	std::cout << "resigned" << std::endl;
	return 0;
}

} // namespace

int
main(int argc, char **argv)
{
	if (argc < 4) {
		std::cerr << "usage: elect_pglease URL NAME leader | campaign VALUE TTL_MS STOPFILE [NEW_VALUE] | "
		             "observe MS\n";
		return 64;
	}
	const std::string url = argv[1], name = argv[2], cmd = argv[3];
	auto locker = pglease::connect(url);
	if (!locker)
		return failed(locker.error());
	if (cmd == "leader") {
		auto view = (*locker)->leader(name);
		if (!view)
			return failed(view.error());
		print(*view, "leader");
		return 0;
	}
	if (cmd == "campaign" && (argc == 7 || argc == 8))
		return campaign(**locker, name, argv[4], std::stol(argv[5]), argv[6], argc == 8 ? argv[7] : nullptr);
	if (cmd == "observe" && argc == 5) {
		auto observer = pglease::ElectionObserver::start(
		    **locker, name, [](const pglease::LeaderView &view) { print(view, "view"); },
		    [](const pglease::Error &e) { std::cout << "observe-error " << e.message << std::endl; });
		if (!observer)
			return failed(observer.error());
		std::this_thread::sleep_for(std::chrono::milliseconds{std::stol(argv[4])});
		return 0;
	}
	std::cerr << "elect_pglease: unknown command " << cmd << "\n";
	return 64;
}
