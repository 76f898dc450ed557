// share_pglease.cpp -- the pglease side of tests/providers/zk_curator_sharing.sh:
// a shared lease, a plain (exclusive) lease or a semaphore's permit, beside
// Curator's InterProcessReadWriteLock and InterProcessSemaphoreV2
// (ShareCurator.java) on the same folder.
//
//   share_pglease URL RESOURCE KIND WAIT_MS STOPFILE
//       KIND: shared, exclusive or permit:N.  Acquires (ttl 10 s, renewed),
//       waiting at most WAIT_MS, and prints "granted token=T" (then holds
//       until STOPFILE exists and releases: "released"), "timeout", or
//       "error CODE SQLSTATE: MESSAGE".
//   share_pglease URL RESOURCE permit:N loop ROUNDS HOLD_MS
//       ROUNDS times: a permit (waiting up to 60 s), held HOLD_MS; one line
//       per round, "held FROM TO" (epoch milliseconds, FROM taken after the
//       grant, TO before the release).
//
// Every line is flushed as it happens; an error exits 2.
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
	std::cout << "error " << error.code << " " << (error.sqlstate.empty() ? "-" : error.sqlstate) << ": "
	          << error.message << std::endl;
	return 2;
}

long long
epoch_ms()
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(
	           std::chrono::system_clock::now().time_since_epoch())
	    .count();
}

// options_of -- KIND as LeaseOptions (false: not a kind)
bool
options_of(const std::string &kind, pglease::LeaseOptions &options)
{
	options.ttl = 10s;
	if (kind == "shared")
		options.mode = pglease::Mode::shared;
	else if (kind.rfind("permit:", 0) == 0)
		options.limit = static_cast<std::uint32_t>(std::stoul(kind.substr(7)));
	else if (kind != "exclusive")
		return false;
	return true;
}

int
hold(pglease::Locker &locker, const std::string &resource, pglease::LeaseOptions options,
     const std::string &stopfile)
{
	auto lease = locker.acquire(resource, options);
	if (!lease && lease.error().code == pglease::Errc::timeout) {
		std::cout << "timeout" << std::endl;
		return 1;
	}
	if (!lease)
		return failed(lease.error());
	std::cout << "granted token=" << lease->token() << std::endl;
	while (!std::filesystem::exists(stopfile))
		std::this_thread::sleep_for(50ms);
	if (auto done = lease->release(); !done)
		return failed(done.error());
	std::cout << "released" << std::endl;
	return 0;
}

int
loop(pglease::Locker &locker, const std::string &resource, pglease::LeaseOptions options, int rounds,
     std::chrono::milliseconds held)
{
	options.wait = 60s;
	for (int i = 0; i < rounds; i++) {
		auto lease = locker.acquire(resource, options);
		if (!lease)
			return failed(lease.error());
		auto from = epoch_ms();
		std::this_thread::sleep_for(held);
		auto to = epoch_ms();
		if (auto done = lease->release(); !done)
			return failed(done.error());
		std::cout << "held " << from << " " << to << std::endl;
	}
	return 0;
}

} // namespace

int
main(int argc, char **argv)
{
	pglease::LeaseOptions options;
	if ((argc != 6 && argc != 7) || !options_of(argv[3], options)) {
		std::cerr << "usage: share_pglease URL RESOURCE shared|exclusive|permit:N WAIT_MS STOPFILE\n"
		             "       share_pglease URL RESOURCE permit:N loop ROUNDS HOLD_MS\n";
		return 64;
	}
	auto locker = pglease::connect(argv[1]);
	if (!locker)
		return failed(locker.error());
	if (argc == 7 && std::string{argv[4]} == "loop")
		return loop(**locker, argv[2], options, std::stoi(argv[5]),
		            std::chrono::milliseconds{std::stol(argv[6])});
	options.wait = std::chrono::milliseconds{std::stol(argv[4])};
	return hold(**locker, argv[2], options, argv[5]);
}
