// fault_worker.cpp -- a worker of the fault tests: loops acquire -> fenced
// write -> release on random resources and records what it saw.
//
//   pglease_fault_worker NAME RESOURCES SECONDS OUTFILE
//
// Runs for SECONDS, or until SIGTERM (it then ends its round and exits 0).
// DSN from libpq's environment, or from the file named by $FAULT_DSN_FILE
// (re-read after each failure, so a test can point workers at a promoted
// standby).  One line per event, flushed at once (the file survives any
// server crash):
//   G resource token holder send_us recv_us      a grant, client wall clock
//   A resource token write_id                    an acknowledged fenced write
//   R resource token sqlstate                    a rejected fenced write
//   U what                                       the server was unavailable
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include <pqxx/pqxx>

#include "pglease/pglease.hpp"
#include "pglease/postgres.hpp"

namespace {

volatile std::sig_atomic_t stop_requested = 0;

void
request_stop(int)
{
	stop_requested = 1;
}

long long
wall_us()
{
	using namespace std::chrono;
	return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

std::string
current_dsn()
{
	const char *file = std::getenv("FAULT_DSN_FILE");
	if (!file)
		return "";
	std::ifstream in{file};
	std::string dsn;
	std::getline(in, dsn);
	return dsn;
}

// connected -- the PostgreSQL locker of dsn (exits 64 on a malformed one)
std::unique_ptr<pglease::Locker>
connected(const std::string &dsn, const pglease::ClientOptions &co)
{
	auto locker = pglease::connect(dsn, co);
	if (!locker) {
		std::fprintf(stderr, "pglease_fault_worker: %s\n", locker.error().message.c_str());
		std::exit(64);
	}
	return std::move(*locker);
}

} // namespace

int
main(int argc, char **argv)
{
	using namespace std::chrono_literals;
	if (argc != 5) {
		std::fprintf(stderr, "usage: pglease_fault_worker NAME RESOURCES SECONDS OUTFILE\n");
		return 64;
	}
	const std::string name = argv[1];
	const int resources = std::atoi(argv[2]);
	const auto end = std::chrono::steady_clock::now() + std::chrono::seconds{std::atoi(argv[3])};
	FILE *out = std::fopen(argv[4], "a");
	if (!out || resources < 1) {
		std::perror(argv[4]);
		return 66;
	}
	std::mt19937 rng{std::random_device{}()};
	std::uniform_int_distribution<int> pick{1, resources};

	pglease::ClientOptions co;
	co.connect_timeout = 2s;
	co.backoff_max = 1s;
	std::string dsn = current_dsn();
	auto client = connected(dsn, co);
	long long writes = 0;

	// SIGTERM: finish the current round and exit 0 (the tests stop workers so)
	std::signal(SIGTERM, request_stop);
	while (std::chrono::steady_clock::now() < end && !stop_requested) {
		std::string resource = "f/" + std::to_string(pick(rng));
		pglease::LeaseOptions o;
		o.ttl = 2s;
		o.wait = 1s;
		o.holder = name;
		// the worker's name is its identity (one process each): stored as
		// given, as the history's checkers read it back from the table
		o.reclaim = true;
		long long sent = wall_us();
		auto lease = client->acquire(resource, o);
		long long received = wall_us();
		if (!lease) {
			if (lease.error().code == pglease::Errc::unavailable ||
			    lease.error().code == pglease::Errc::internal) {
				std::fprintf(out, "U acquire %s\n",
				             std::string{pglease::to_string(lease.error().code)}.c_str());
				std::fflush(out);
				std::this_thread::sleep_for(100ms);
				if (std::string d = current_dsn(); d != dsn) {
					dsn = d;
					client = connected(dsn, co);
				}
			}
			continue;
		}
		std::fprintf(out, "G %s %lld %s %lld %lld\n", resource.c_str(),
		             static_cast<long long>(lease->token()), name.c_str(), sent, received);
		std::fflush(out);

		std::string write_id = name + ":" + std::to_string(++writes);
		auto wrote = pglease::fenced(*client, *lease, [&](pqxx::work &tx) {
			tx.exec_params("INSERT INTO fault_ledger (resource, token, write_id) VALUES ($1, $2, $3)",
			               resource, lease->token(), write_id);
		});
		if (wrote)
			std::fprintf(out, "A %s %lld %s\n", resource.c_str(), static_cast<long long>(lease->token()),
			             write_id.c_str());
		else
			std::fprintf(out, "R %s %lld %s\n", resource.c_str(), static_cast<long long>(lease->token()),
			             wrote.error().sqlstate.empty() ? "-" : wrote.error().sqlstate.c_str());
		std::fflush(out);
		(void)lease->release();
	}
	std::fclose(out);
	return 0;
}
