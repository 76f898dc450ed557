// worker.cpp -- a worker of the safety matrix (tests/faults/matrix/): the
// same read-sleep-write loop for every provider, through pglease::connect.
//
//   pglease_matrix_worker NAME URL_FILE STORE_DSN fenced|unfenced TTL_MS WORK_MS OUTFILE
//   pglease_matrix_worker --capabilities URL   print "fencing_token durable survives_failover" (0/1)
//
// Loops until SIGTERM: acquire "m/1" (no auto-renewal, wait 200 ms), read the
// counter, sleep WORK_MS, write counter + 1, release.  The lock URL is read
// from URL_FILE and re-read after an unavailable/internal error (a test
// points the workers at a promoted replica so).  The counter lives in the
// store STORE_DSN (table matrix_counter, see runner.sh), or, for the
// PostgreSQL provider (STORE_DSN "lock"), in the lock's own database.
// Fenced: PostgreSQL writes in pglease::fenced (lease.fence in the write's
// transaction); the others write through the store's token check
// (UPDATE ... WHERE max_token <= token: the Kleppmann fencing store).
//
// One line per event, flushed at once; times are CLOCK_MONOTONIC in us
// (steady_clock: one clock for every process of the machine):
//   G token send_us recv_us deadline_us     granted; deadline = the lease's local deadline
//   A token value                           the write of value was acknowledged
//   R token                                 the write was rejected (fenced)
//   E token what                            the write failed (outcome unknown)
//   L token send_us                         release sent
//   U what                                  acquire failed (unavailable, ...)
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
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
mono_us()
{
	using namespace std::chrono;
	return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

std::string
read_url(const char *file)
{
	std::ifstream in{file};
	std::string url;
	std::getline(in, url);
	return url;
}

struct Config {
	std::string name;
	const char *url_file;
	std::string store_dsn;
	bool fenced;
	std::chrono::milliseconds ttl;
	std::chrono::milliseconds work;
	FILE *out;
};

// The counter store: a connection kept open, reopened after a failure.
class Store {
public:
	explicit Store(std::string dsn) : dsn_(std::move(dsn)) {}
	void retarget(const std::string &dsn)
	{
		if (dsn != dsn_)
			conn_.reset();
		dsn_ = dsn;
	}
	pqxx::connection &conn()
	{
		if (!conn_ || !conn_->is_open())
			conn_ = std::make_unique<pqxx::connection>(dsn_);
		return *conn_;
	}
	void drop() { conn_.reset(); }

private:
	std::string dsn_;
	std::unique_ptr<pqxx::connection> conn_;
};

long long
read_counter(Store &store)
{
	pqxx::nontransaction tx{store.conn()};
	return tx.exec1("SELECT v FROM matrix_counter WHERE id = 1")[0].as<long long>();
}

// true: acknowledged; false: rejected by the fence.  Throws on other errors.
bool
write_counter(const Config &c, Store &store, pglease::Locker *pg, const pglease::Lease &lease, long long v)
{
	if (c.fenced && pg) {
		auto r = pglease::fenced(*pg, lease, [&](pqxx::work &tx) {
			tx.exec_params("UPDATE matrix_counter SET v = $1 WHERE id = 1", v);
		});
		if (r)
			return true;
		if (r.error().code == pglease::Errc::lost)
			return false;
		throw std::runtime_error{std::string{pglease::to_string(r.error().code)}};
	}
	pqxx::work tx{store.conn()};
	pqxx::result res =
	    c.fenced ? tx.exec_params(
	                   "UPDATE matrix_counter SET v = $1, max_token = $2 WHERE id = 1 AND max_token <= $2", v,
	                   static_cast<long long>(lease.token()))
	             : tx.exec_params("UPDATE matrix_counter SET v = $1 WHERE id = 1", v);
	tx.commit();
	return res.affected_rows() == 1;
}

void
one_round(const Config &c, pglease::Locker &locker, Store &store, bool &reconnect)
{
	static long long rounds = 0;
	pglease::LeaseOptions o;
	o.ttl = c.ttl;
	o.wait = std::chrono::milliseconds{200}; // polled: a waiter on a dead connection would miss a restart
	o.holder = c.name + ":" + std::to_string(++rounds); // no idempotent re-grant of an old token
	o.auto_renew = false;
	long long sent = mono_us();
	auto lease = locker.acquire("m/1", o);
	long long received = mono_us();
	if (!lease) {
		std::fprintf(c.out, "U %s\n", std::string{pglease::to_string(lease.error().code)}.c_str());
		std::fflush(c.out);
		reconnect =
		    lease.error().code == pglease::Errc::unavailable || lease.error().code == pglease::Errc::internal;
		return;
	}
	long long token = lease->token();
	std::fprintf(c.out, "G %lld %lld %lld %lld\n", token, sent, received,
	             received + static_cast<long long>(lease->remaining().count()) * 1000);
	std::fflush(c.out);
	pglease::Locker *pg = locker.capabilities().fenced_write ? &locker : nullptr;
	try {
		long long v = read_counter(store) + 1;
		std::this_thread::sleep_for(c.work);
		bool ok = write_counter(c, store, pg, *lease, v);
		if (ok)
			std::fprintf(c.out, "A %lld %lld\n", token, v);
		else
			std::fprintf(c.out, "R %lld\n", token);
	} catch (const std::exception &e) {
		std::string what = e.what();
		for (char &ch : what)
			if (ch == '\n' || ch == ' ')
				ch = '_';
		std::fprintf(c.out, "E %lld %.60s\n", token, what.c_str());
		store.drop();
		reconnect = true;
	}
	std::fprintf(c.out, "L %lld %lld\n", token, mono_us());
	std::fflush(c.out);
	(void)lease->release();
}

} // namespace

int
main(int argc, char **argv)
{
	using namespace std::chrono_literals;
	if (argc == 3 && std::string{argv[1]} == "--capabilities") {
		auto l = pglease::connect(argv[2]);
		if (!l)
			return 69;
		auto caps = (*l)->capabilities();
		std::printf("%d %d %d\n", caps.fencing_token, caps.durable, caps.survives_failover);
		return 0;
	}
	if (argc != 8) {
		std::fprintf(
		    stderr,
		    "usage: pglease_matrix_worker NAME URL_FILE STORE_DSN fenced|unfenced TTL_MS WORK_MS OUTFILE\n");
		return 64;
	}
	Config c{argv[1],
	         argv[2],
	         argv[3],
	         std::string{argv[4]} == "fenced",
	         std::chrono::milliseconds{std::atoi(argv[5])},
	         std::chrono::milliseconds{std::atoi(argv[6])},
	         std::fopen(argv[7], "a")};
	if (!c.out) {
		std::perror(argv[7]);
		return 66;
	}
	std::signal(SIGTERM, request_stop);
	pglease::ClientOptions co;
	co.connect_timeout = 2s;
	co.backoff_max = 500ms;
	std::string url;
	std::unique_ptr<pglease::Locker> locker;
	const bool store_is_lock = c.store_dsn == "lock";
	Store store{store_is_lock ? "" : c.store_dsn};
	bool reconnect = true;
	while (!stop_requested) {
		if (reconnect) {
			url = read_url(c.url_file);
			auto l = pglease::connect(url, co);
			if (!l) {
				std::fprintf(c.out, "U connect_%s\n",
				             std::string{pglease::to_string(l.error().code)}.c_str());
				std::fflush(c.out);
				std::this_thread::sleep_for(100ms);
				continue;
			}
			locker = std::move(*l);
			if (store_is_lock)
				store.retarget(url);
			reconnect = false;
		}
		one_round(c, *locker, store, reconnect);
		if (reconnect)
			std::this_thread::sleep_for(100ms);
	}
	std::fclose(c.out);
	return 0;
}
