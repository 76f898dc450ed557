// ledger_worker.cpp -- a demo worker: append to a shared ledger, each
// append a fenced write under the lease "ledger" (make demo runs four).
//
//   pglease_ledger_worker NAME ROUNDS      (DSN from libpq's environment)
//
// Prints one line per event: "<ms since epoch> NAME <event> ...".
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include <pqxx/pqxx>

#include "pglease/pglease.hpp"
#include "pglease/postgres.hpp"

namespace {

long long
now_ms()
{
	using namespace std::chrono;
	return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

void
say(const std::string &name, const std::string &what)
{
	std::cout << now_ms() << " " << name << " " << what << std::endl;
}

} // namespace

int
main(int argc, char **argv)
{
	using namespace std::chrono_literals;
	pglease::LeaseOptions options;
	options.ttl = 2s;
	options.wait = 15s;
	if (argc == 2 && std::string{argv[1]} == "--describe") {
		std::cout << pglease::describe(options);
		return 0;
	}
	if (argc != 3) {
		std::cerr << "usage: pglease_ledger_worker NAME ROUNDS | --describe\n";
		return 64;
	}
	std::string name = argv[1];
	int rounds = std::atoi(argv[2]);
	options.holder = name;

	auto locker = pglease::connect(""); // libpq's environment: PGHOST, PGDATABASE, ...
	if (!locker) {
		std::cerr << locker.error() << "\n";
		return 64;
	}
	pglease::Locker &client = **locker;

	for (int i = 1; i <= rounds; i++) {
		auto lease = client.acquire("ledger", options);
		if (!lease) {
			say(name, "could not acquire: " + std::string{pglease::to_string(lease.error().code)});
			continue;
		}
		say(name, "acquired token " + std::to_string(lease->token()));
		std::this_thread::sleep_for(300ms); // the work; a SIGSTOP lands here
		auto wrote = pglease::fenced(client, *lease, [&](pqxx::work &tx) {
			tx.exec_params("INSERT INTO ledger (writer, token, entry) VALUES ($1, $2, $3)", name,
			               lease->token(), name + " entry " + std::to_string(i));
		});
		if (wrote)
			say(name, "wrote entry " + std::to_string(i) + " with token " + std::to_string(lease->token()));
		else {
			const std::string &m = wrote.error().message;
			say(name, "write REJECTED with token " + std::to_string(lease->token()) + ": " +
			              wrote.error().sqlstate + " " + m.substr(0, m.find('\n')));
		}
		(void)lease->release();
		std::this_thread::sleep_for(50ms);
	}
	say(name, "done");
	return 0;
}
