// pg_tls_probe.cpp -- the library's side of tests/providers/pg_tls.sh:
//
//   pg_tls_probe DSN RESOURCE
//
// pglease::connect(DSN), acquire RESOURCE, and through the same locker a
// fenced transaction that reads whether its own connection
// is encrypted (pg_stat_ssl), then status().  One line per step on stdout:
//   STEP: ok [details]
//   STEP: ERRC retryable=0|1 ms=N: MESSAGE
// and exit 0 when every step passed, 2 at the first error (the script
// checks the Errc, that it came fast, and that no line holds the password).
#include <chrono>
#include <iostream>
#include <string>

#include "pglease/pglease.hpp"
#include "pglease/postgres.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// failed -- the error line of a step, and the exit status
int
failed(const char *step, const pglease::Error &error, Clock::time_point start)
{
	const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
	std::cout << step << ": " << error.code << " retryable=" << pglease::is_retryable(error) << " ms=" << ms
	          << ": " << error.message << "\n";
	return 2;
}

} // namespace

int
main(int argc, char **argv)
{
	if (argc != 3) {
		std::cerr << "usage: pg_tls_probe DSN RESOURCE\n";
		return 64;
	}
	const std::string dsn = argv[1], resource = argv[2];
	pglease::LeaseOptions options;
	options.ttl = std::chrono::seconds{10};

	auto start = Clock::now();
	auto locker = pglease::connect(dsn);
	if (!locker)
		return failed("connect", locker.error(), start);
	auto lease = (*locker)->acquire(resource, options);
	if (!lease)
		return failed("acquire", lease.error(), start);
	std::cout << "acquire: ok token=" << lease->token() << "\n";

	start = Clock::now();
	auto fenced = pglease::fenced(**locker, *lease, [](pqxx::work &tx) {
		return tx.exec1("SELECT ssl::text || ' ' || coalesce(version, '-') FROM pg_catalog.pg_stat_ssl "
		                "WHERE pid = pg_catalog.pg_backend_pid()")[0]
		    .as<std::string>();
	});
	if (!fenced)
		return failed("fenced", fenced.error(), start);
	std::cout << "fenced: ok ssl=" << *fenced << "\n";
	auto rows = pglease::status(**locker);
	if (!rows)
		return failed("status", rows.error(), start);
	std::cout << "status: ok leases=" << rows->size() << "\n";
	if (auto released = lease->release(); !released)
		return failed("release", released.error(), start);
	std::cout << "release: ok\n";
	return 0;
}
