// Quick start, PostgreSQL: take a lease, write under its fencing token, release.
// Usage: quickstart_postgres CONNINFO   (make db prints one)
#include <iostream>
#include <pglease/pglease.hpp>
#include <pglease/postgres.hpp> // pglease::fenced: its callback takes a pqxx::work

int
main(int argc, char **argv)
{
	using namespace std::chrono_literals;
	if (argc != 2) {
		std::cerr << "usage: " << argv[0] << " CONNINFO   (e.g. \"host=/tmp dbname=app\")\n";
		return 64;
	}
	auto locker = pglease::connect(argv[1]); // postgresql://... or key=value; redis://, etcd://, ...
	if (!locker) {
		std::cerr << locker.error() << "\n"; // a malformed URL: Errc::invalid_argument
		return 64;
	}
	pglease::Locker &client = **locker;
	pglease::LeaseOptions options;
	options.ttl = 30s; // renewed in the background every 10 s while held
	options.wait = 5s; // how long to wait while another process holds it
	auto lease = client.acquire("reports/nightly", options);
	if (!lease) {
		std::cerr << "not acquired: " << lease.error() << "\n"; // Errc::timeout, unavailable, ...
		return 1;
	}
	// Lost (expired, taken over): stop working. A write fenced below is refused anyway.
	lease->on_lost([](const pglease::Error &e) { std::cerr << "lease lost: " << e << "\n"; });

	// Commits only while this token is the current grant (else Errc::lost).
	auto wrote = pglease::fenced(client, *lease, [&](pqxx::work &tx) {
		tx.exec0("CREATE TABLE IF NOT EXISTS reports (token bigint PRIMARY KEY, made timestamptz)");
		tx.exec_params0("INSERT INTO reports VALUES ($1, now())", lease->token());
	});
	if (!wrote) {
		std::cerr << "write refused: " << wrote.error() << "\n";
		return 1;
	}
	std::cout << "token " << lease->token() << ": row written to table reports\n";
	if (auto released = lease->release(); !released) {
		std::cerr << "release: " << released.error() << "\n";
		return 1;
	}
	return 0;
}
