// etcd_elect_probe.cpp -- the library's side of tests/providers/etcd_elect.sh,
// a pglease candidate or follower beside etcdctl's own election and lock:
//
//   etcd_elect_probe campaign URL ELECTION VALUE
//     campaign (TTL 3 s, waiting up to 60 s), print "elected TERM", then
//     obey stdin line by line: "proclaim V" prints "proclaimed ok" or
//     "proclaimed ERRC"; "resign" (or the end of stdin) resigns, prints
//     "resigned" and exits 0.  A failed campaign prints "failed ERRC: ..."
//     and exits 2.
//
//   etcd_elect_probe leader URL ELECTION
//     one leader() call: "leader TERM VALUE", "none", or "failed ERRC: ..."
//     (exit 2).
//
// Every line is flushed at once: the script reads them while the probe runs.
#include <chrono>
#include <iostream>
#include <string>

#include "pglease/pglease.hpp"

namespace {

using namespace std::chrono_literals;

int
failed(const pglease::Error &error)
{
	std::cout << "failed " << error.code << ": " << error.message << std::endl;
	return 2;
}

int
campaign(const std::string &url, const std::string &election, const std::string &value)
{
	auto locker = pglease::connect(url);
	if (!locker)
		return failed(locker.error());
	pglease::LeaseOptions options;
	options.ttl = 3s;
	options.wait = 60s;
	auto lead = (*locker)->campaign(election, value, options);
	if (!lead)
		return failed(lead.error());
	std::cout << "elected " << lead->term() << std::endl;
	std::string line;
	while (std::getline(std::cin, line) && line != "resign") {
		if (line.rfind("proclaim ", 0) != 0)
			continue;
		auto done = lead->proclaim(line.substr(9));
		if (done)
			std::cout << "proclaimed ok" << std::endl;
		else
			std::cout << "proclaimed " << done.error().code << std::endl;
	}
	auto resigned = lead->resign();
	if (!resigned)
		return failed(resigned.error());
	std::cout << "resigned" << std::endl;
	return 0;
}

int
leader(const std::string &url, const std::string &election)
{
	auto locker = pglease::connect(url);
	if (!locker)
		return failed(locker.error());
	auto view = (*locker)->leader(election);
	if (!view)
		return failed(view.error());
	if (view->has_leader)
		std::cout << "leader " << view->term << " " << view->value << std::endl;
	else
		std::cout << "none" << std::endl;
	return 0;
}

} // namespace

int
main(int argc, char **argv)
{
	std::string mode = argc > 1 ? argv[1] : "";
	if (mode == "campaign" && argc == 5)
		return campaign(argv[2], argv[3], argv[4]);
	if (mode == "leader" && argc == 4)
		return leader(argv[2], argv[3]);
	std::cerr << "usage: etcd_elect_probe campaign URL ELECTION VALUE | leader URL ELECTION\n";
	return 64;
}
