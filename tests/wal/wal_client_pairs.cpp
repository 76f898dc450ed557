// wal_client_pairs.cpp -- N uncontended acquire+release pairs through the
// C++ client (pglease::connect), for tests/wal/wal_per_pair.sh to count the
// WAL they write.
//
//   wal_client_pairs CONNINFO lease|token PAIRS RESOURCES
//
// lease: try_acquire and Lease::release, as an application does; token:
// try_acquire with a holder, then the token-level release naming that holder
// (Locker::release(resource, token, holder), as the CLI's release does).
// Resources are wal/1..RESOURCES, drawn at random (a fixed seed).  Exits 0
// when every pair was granted and released, else 1 with the first error on
// stderr.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>

#include <pglease/pglease.hpp>

namespace {

using namespace std::chrono_literals;

// one_pair -- acquire resource and release it by the way named; false with
// the reason in *why
bool
one_pair(pglease::Locker &locker, const std::string &resource, bool by_token, std::string *why)
{
	pglease::LeaseOptions o;
	o.ttl = 30s;
	o.auto_renew = false;
	o.holder = "wal-client";
	auto lease = locker.try_acquire(resource, o);
	if (!lease) {
		*why = "acquire " + resource + ": " + lease.error().message;
		return false;
	}
	if (!by_token) {
		auto released = lease->release();
		if (!released)
			*why = "release " + resource + ": " + released.error().message;
		return static_cast<bool>(released);
	}
	const std::string holder = lease->holder(); // the label as stored
	std::int64_t token = lease->detach();
	auto released = locker.release(resource, token, holder);
	if (!released)
		*why = "release " + resource + " by token and holder: " + released.error().message;
	else if (!*released)
		*why = "release " + resource + " by token and holder: not current";
	return released && *released;
}

} // namespace

int
main(int argc, char **argv)
{
	if (argc != 5 || (std::string{argv[2]} != "lease" && std::string{argv[2]} != "token")) {
		std::cerr << "usage: wal_client_pairs CONNINFO lease|token PAIRS RESOURCES\n";
		return 2;
	}
	const bool by_token = std::string{argv[2]} == "token";
	const long pairs = std::atol(argv[3]);
	const long resources = std::atol(argv[4]);
	auto locker = pglease::connect(argv[1]);
	if (!locker) {
		std::cerr << "wal_client_pairs: connect: " << locker.error().message << "\n";
		return 1;
	}
	std::minstd_rand rng(38);
	for (long i = 0; i < pairs; i++) {
		std::string why;
		if (!one_pair(**locker, "wal/" + std::to_string(1 + rng() % resources), by_token, &why)) {
			std::cerr << "wal_client_pairs: pair " << i << ": " << why << "\n";
			return 1;
		}
	}
	return 0;
}
