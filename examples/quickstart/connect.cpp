// Quick start, any provider: the same lease through pglease::connect(URL).
// Usage: quickstart_connect URL   (memory:, redis://, etcd://, zookeeper://,
// postgresql:// or a conninfo; make db and make servers print them)
#include <iostream>
#include <pglease/pglease.hpp>

int
main(int argc, char **argv)
{
	using namespace std::chrono_literals;
	if (argc != 2) {
		std::cerr << "usage: " << argv[0] << " URL   (e.g. memory: or redis://127.0.0.1:PORT)\n";
		return 64;
	}
	auto locker = pglease::connect(argv[1]);
	if (!locker) {
		std::cerr << "connect: " << locker.error() << "\n"; // malformed URL, provider not linked in
		return 1;
	}
	pglease::LeaseOptions options;
	options.ttl = 10s;
	options.wait = 5s;
	auto lease = (*locker)->acquire("reports/nightly", options);
	if (!lease) {
		std::cerr << "not acquired: " << lease.error() << "\n"; // the same Errc codes for every provider
		return 1;
	}
	lease->on_lost([](const pglease::Error &e) { std::cerr << "lease lost: " << e << "\n"; });

	// Send the token with each write; the storage keeps the highest token it
	// has seen and rejects a write carrying a lower one (a stale holder's).
	for (int part = 1; part <= 3 && lease->valid(); ++part)
		std::cout << "write part-" << part << " with token " << lease->token() << "\n";

	std::cout << (*locker)->provider() << ": token " << lease->token()
	          << ((*locker)->capabilities().fencing_token ? "" : " (this provider has no fencing token)") << "\n";
	return lease->release() ? 0 : 1;
}
