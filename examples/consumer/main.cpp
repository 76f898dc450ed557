// The README's C++ quick start, built against the installed package.
#include <iostream>
#include <pglease/pglease.hpp>
#include <pglease/postgres.hpp> // Client::fenced

int
main()
{
	using namespace std::chrono_literals;
	pglease::Client client{""}; // libpq environment: PGHOST, PGPORT, ...
	pglease::LeaseOptions options;
	options.ttl = 30s;
	options.wait = 5s;
	auto lease = client.acquire("reports/nightly", options);
	if (!lease) {
		std::cerr << "not acquired: " << lease.error() << "\n";
		return 1;
	}
	auto wrote = client.fenced(*lease, [&](pqxx::work &tx) {
		tx.exec_params("SELECT $1::bigint", lease->token()); // your writes here
	});
	std::cout << "token " << lease->token() << (wrote ? " wrote" : " rejected") << "\n"
	          << pglease::describe(options);
	return wrote ? 0 : 1;
}
