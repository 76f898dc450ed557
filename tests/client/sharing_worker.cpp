// sharing_worker.cpp -- clients of reader-writer leases and semaphores
// (docs/shared-leases.md) for the history test, each in a process of its
// own so that the test can kill (SIGKILL) and freeze (SIGSTOP) them, or as
// threads of one process for the memory provider (whose lock table is the
// process's own).
//
//   sharing_worker now
//     print CLOCK_MONOTONIC in microseconds (the test scripts' clock).
//
//   sharing_worker caps URL
//     print the provider's "shared_mode=0|1 semaphore=0|1 fifo_wait=0|1".
//
//   sharing_worker refuses URL RESOURCE
//     ask for a shared lease and for a permit (limit 3), without waiting,
//     and print one line each: "shared|semaphore granted" or
//     "shared|semaphore ERRC SQLSTATE MESSAGE".
//
//   sharing_worker hold URL RESOURCE MODE LIMIT TTL_MS [TABLE]
//     one grant (MODE shared or exclusive, LIMIT 0 or a semaphore's),
//     renewed every TTL/3, for the conformance cases that kill or freeze its
//     holder (tests/client/sharing_conformance_test.cpp).  Prints "held
//     TOKEN" (or "refused ERRC") and, on PostgreSQL, "fenced ok" or "fenced
//     ERRC SQLSTATE" for a write fenced by the grant (a row TOKEN into TABLE
//     when given, else SELECT 1); when on_lost is called, "lost ERRC" and,
//     on PostgreSQL, the same fenced write again.  Then waits for SIGTERM.
//
//   sharing_worker history URL PREFIX NAME SECONDS TTL_MS KINDS CLIENTS OUT
//     CLIENTS clients (threads of this process, named NAME-0, NAME-1, ...;
//     one Locker for all) loop for SECONDS: acquire on PREFIX/rw (KINDS has
//     rw: shared or exclusive) or PREFIX/sem and PREFIX/sem2 (KINDS has sem:
//     a permit of 3 and of 2, or now and then a try with the other's limit,
//     which must be refused), hold a random
//     while, then release -- or abandon the grant (Lease::detach: renewal
//     stops, the grant runs out at its TTL, as a dead holder's would).
//     One line per event, flushed at once, times from CLOCK_MONOTONIC in
//     microseconds (one clock for every process of the machine), read by
//     tests/providers/sharing_check.py.  ID is NAME-i:PID:SEQ, one per
//     request:
//       R ID RESOURCE MODE LIMIT WAIT_MS START_US   a request, before the call
//       G ID TOKEN END_US DEADLINE_US SENT_US       granted: the call returned
//                                                   at END_US; the grant's local
//                                                   deadline; the call was made
//                                                   at SENT_US (after the R line
//                                                   was written)
//       E ID ERRC SQLSTATE END_US SENT_US           refused or not granted in time
//       D ID DEADLINE_US                            the holder relies on its grant
//                                                   until DEADLINE_US (logged
//                                                   before it acts on it)
//       U ID AT_US                                  release starts
//       A ID AT_US                                  abandoned (detach)
//       L ID AT_US                                  on_lost called
//     A grant is relied on from END_US to its last deadline, or to its
//     release if that comes first: a holder frozen past its TTL stopped
//     relying on it at the deadline, not at the release it sends once
//     thawed.  SIGTERM ends the loop.
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "pglease/pglease.hpp"
#include "pglease/postgres.hpp" // pglease::fenced, for hold on PostgreSQL

namespace {

using namespace std::chrono_literals;

volatile std::sig_atomic_t stop_requested = 0;

void
request_stop(int)
{
	stop_requested = 1;
}

long long
mono_us()
{
	timespec ts{};
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<long long>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

std::unique_ptr<pglease::Locker>
connect_or_die(const char *url)
{
	auto locker = pglease::connect(url);
	if (!locker) {
		std::fprintf(stderr, "sharing_worker: %s\n", locker.error().message.c_str());
		std::exit(2);
	}
	return std::move(*locker);
}

// one_line -- a message on one line, so that it stays one field of a log line
std::string
one_line(std::string text)
{
	for (char &c : text)
		if (c == '\n' || c == '\r')
			c = ' ';
	return text;
}

int
caps(const char *url)
{
	auto c = connect_or_die(url)->capabilities();
	std::printf("shared_mode=%d semaphore=%d fifo_wait=%d\n", c.shared_mode ? 1 : 0, c.semaphore ? 1 : 0,
	            c.fifo_wait ? 1 : 0);
	return 0;
}

int
refuses(const char *url, const char *resource)
{
	auto locker = connect_or_die(url);
	pglease::LeaseOptions shared;
	shared.ttl = 5s;
	shared.mode = pglease::Mode::shared;
	pglease::LeaseOptions permit;
	permit.ttl = 5s;
	permit.limit = 3;
	for (auto [kind, options] : {std::pair{"shared", shared}, std::pair{"semaphore", permit}}) {
		auto lease = locker->try_acquire(resource, options);
		if (lease)
			std::printf("%s granted\n", kind);
		else
			std::printf("%s %s %s %s\n", kind, std::string{pglease::to_string(lease.error().code)}.c_str(),
			            lease.error().sqlstate.empty() ? "-" : lease.error().sqlstate.c_str(),
			            one_line(lease.error().message).c_str());
	}
	return 0;
}

// fenced_write -- on PostgreSQL, a write fenced by LEASE: "fenced ok" or
// "fenced ERRC SQLSTATE"; nothing elsewhere (no store to fence in)
void
fenced_write(pglease::Locker &locker, const pglease::Lease &lease, const std::string &table)
{
	if (!locker.capabilities().fenced_write)
		return;
	auto wrote = pglease::fenced(locker, lease, [&](pqxx::work &tx) {
		if (table.empty())
			tx.exec("SELECT 1");
		else
			tx.exec("INSERT INTO " + tx.quote_name(table) + " VALUES (" + std::to_string(lease.token()) + ")");
	});
	if (wrote)
		std::printf("fenced ok\n");
	else
		std::printf("fenced %s %s\n", std::string{pglease::to_string(wrote.error().code)}.c_str(),
		            wrote.error().sqlstate.empty() ? "-" : wrote.error().sqlstate.c_str());
	std::fflush(stdout);
}

int
hold_one(const char *url, const char *resource, const std::string &mode, unsigned limit, long ttl_ms,
         const std::string &table)
{
	auto locker = connect_or_die(url);
	pglease::LeaseOptions o;
	o.ttl = std::chrono::milliseconds{ttl_ms};
	o.wait = 10s;
	o.mode = mode == "shared" ? pglease::Mode::shared : pglease::Mode::exclusive;
	o.limit = limit;
	std::mutex mu; // before the lease: its callback may run until the lease is gone
	std::condition_variable cv;
	std::string lost;
	auto lease = locker->acquire(resource, o);
	if (!lease) {
		std::printf("refused %s\n", std::string{pglease::to_string(lease.error().code)}.c_str());
		return 1;
	}
	lease->on_lost([&](const pglease::Error &e) {
		std::lock_guard<std::mutex> lk(mu);
		lost = std::string{pglease::to_string(e.code)};
		cv.notify_all();
	});
	std::printf("held %lld\n", static_cast<long long>(lease->token()));
	std::fflush(stdout);
	fenced_write(*locker, *lease, table);
	{
		std::unique_lock<std::mutex> lk(mu);
		while (lost.empty() && !stop_requested)
			cv.wait_for(lk, 50ms);
		if (stop_requested)
			return 0;
	}
	std::printf("lost %s\n", lost.c_str());
	std::fflush(stdout);
	fenced_write(*locker, *lease, table);
	while (!stop_requested)
		std::this_thread::sleep_for(50ms);
	return 0;
}

class Log {
public:
	explicit Log(const char *path) : f_(std::fopen(path, "a")) {}
	~Log()
	{
		if (f_)
			std::fclose(f_);
	}
	Log(const Log &) = delete;
	Log &operator=(const Log &) = delete;
	bool ok() const { return f_ != nullptr; }
	template <class... A> void line(const char *fmt, A... a)
	{
		std::lock_guard<std::mutex> lk(mu_);
		std::fprintf(f_, fmt, a...);
		std::fflush(f_);
	}

private:
	std::mutex mu_;
	std::FILE *f_;
};

struct Request {
	std::string resource;
	pglease::LeaseOptions options;
};

// draw_request -- what a client asks for next: on rw a reader (often) or a
// writer; on sem a permit of 3 and on sem2 a permit of 2, or now and then a
// try with the other's limit
Request
draw_request(const std::string &prefix, const std::string &kinds, long ttl_ms, std::mt19937 &rng)
{
	const bool rw = kinds.find("rw") != std::string::npos, sem = kinds.find("sem") != std::string::npos;
	Request r;
	r.options.ttl = std::chrono::milliseconds{ttl_ms};
	const std::chrono::milliseconds waits[] = {0ms, 500ms, 2000ms, 2000ms, 2000ms};
	r.options.wait = waits[rng() % 5];
	const bool on_rw = rw && (!sem || rng() % 2 == 0);
	if (on_rw) {
		r.resource = prefix + "/rw";
		r.options.mode = rng() % 10 < 7 ? pglease::Mode::shared : pglease::Mode::exclusive;
	} else {
		const bool of_two = rng() % 2 == 0;
		r.resource = prefix + (of_two ? "/sem2" : "/sem");
		r.options.limit = of_two ? 2 : 3;
		if (rng() % 20 == 0) {
			r.options.limit = of_two ? 3 : 2;
			r.options.wait = 0ms;
		}
	}
	return r;
}

// hold -- rely on the lease for hold_ms, or until it is no longer valid:
// each step logs the deadline it relies on before it sleeps
void
hold(Log &log, const std::string &id, pglease::Lease &lease, long hold_ms)
{
	const long long until = mono_us() + hold_ms * 1000;
	long long logged = 0;
	while (mono_us() < until && !stop_requested) {
		if (!lease.valid())
			return;
		// remaining() is truncated to milliseconds and read before the
		// clock: the time read after it plus 1 ms is never early
		auto left = lease.remaining();
		long long deadline = mono_us() + left.count() * 1000 + 1000;
		if (left.count() <= 0)
			return;
		if (deadline > logged + 1000) {
			log.line("D %s %lld\n", id.c_str(), deadline);
			logged = deadline;
		}
		std::this_thread::sleep_for(20ms);
	}
}

void
client(pglease::Locker &locker, Log &log, const std::string &name, const std::string &prefix,
       const std::string &kinds, long long end, long ttl_ms)
{
	std::mt19937 rng(std::random_device{}());
	const std::string pid = std::to_string(getpid());
	for (long seq = 0; mono_us() < end && !stop_requested; ++seq) {
		const std::string id = name + ":" + pid + ":" + std::to_string(seq);
		Request r = draw_request(prefix, kinds, ttl_ms, rng);
		log.line("R %s %s %s %u %lld %lld\n", id.c_str(), r.resource.c_str(),
		         std::string{pglease::to_string(r.options.mode)}.c_str(), r.options.limit,
		         static_cast<long long>(r.options.wait.count()), mono_us());
		// stamped again once the R line is written: writing it can stall
		// (on the log's mutex, whose holder may be descheduled, or in the
		// write) for longer than the checker's margin, and the request
		// joins no queue before the call -- its order is the call's
		const long long sent = mono_us();
		auto lease = locker.acquire(r.resource, r.options);
		const long long done = mono_us();
		if (!lease) {
			log.line("E %s %s %s %lld %lld\n", id.c_str(),
			         std::string{pglease::to_string(lease.error().code)}.c_str(),
			         lease.error().sqlstate.empty() ? "-" : lease.error().sqlstate.c_str(), done, sent);
			std::this_thread::sleep_for(std::chrono::milliseconds{20 + rng() % 100});
			continue;
		}
		const auto left = lease->remaining(); // read before the clock, as in hold()
		log.line("G %s %lld %lld %lld %lld\n", id.c_str(), static_cast<long long>(lease->token()), done,
		         mono_us() + left.count() * 1000 + 1000, sent);
		lease->on_lost(
		    [&log, id](const pglease::Error &) { log.line("L %s %lld\n", id.c_str(), mono_us()); });
		hold(log, id, *lease, 50 + static_cast<long>(rng() % 600));
		if (rng() % 20 == 0) {
			log.line("A %s %lld\n", id.c_str(), mono_us());
			(void)lease->detach();
		} else {
			log.line("U %s %lld\n", id.c_str(), mono_us());
			(void)lease->release();
		}
		std::this_thread::sleep_for(std::chrono::milliseconds{rng() % 150});
	}
}

int
history(const char *url, const char *prefix, const char *name, long seconds, long ttl_ms, const char *kinds,
        int clients, const char *out)
{
	Log log(out);
	if (!log.ok()) {
		std::perror(out);
		return 2;
	}
	auto locker = connect_or_die(url);
	const long long end = mono_us() + seconds * 1000000LL;
	std::vector<std::thread> threads;
	for (int i = 0; i < clients; ++i)
		threads.emplace_back(client, std::ref(*locker), std::ref(log),
		                     std::string{name} + "-" + std::to_string(i), std::string{prefix},
		                     std::string{kinds}, end, ttl_ms);
	for (auto &t : threads)
		t.join();
	return 0;
}

} // namespace

int
main(int argc, char **argv)
{
	std::signal(SIGTERM, request_stop);
	std::signal(SIGINT, request_stop);
	std::string mode = argc > 1 ? argv[1] : "";
	if (mode == "now" && argc == 2) {
		std::printf("%lld\n", mono_us());
		return 0;
	}
	if (mode == "caps" && argc == 3)
		return caps(argv[2]);
	if (mode == "refuses" && argc == 4)
		return refuses(argv[2], argv[3]);
	if (mode == "hold" && (argc == 7 || argc == 8) &&
	    (std::string{argv[4]} == "shared" || std::string{argv[4]} == "exclusive"))
		return hold_one(argv[2], argv[3], argv[4], static_cast<unsigned>(std::atoi(argv[5])), std::atol(argv[6]),
		                argc == 8 ? argv[7] : "");
	if (mode == "history" && argc == 10 && std::atoi(argv[8]) > 0)
		return history(argv[2], argv[3], argv[4], std::atol(argv[5]), std::atol(argv[6]), argv[7],
		               std::atoi(argv[8]), argv[9]);
	std::fprintf(stderr, "usage: sharing_worker now\n"
	                     "       sharing_worker caps URL\n"
	                     "       sharing_worker refuses URL RESOURCE\n"
	                     "       sharing_worker hold URL RESOURCE shared|exclusive LIMIT TTL_MS [TABLE]\n"
	                     "       sharing_worker history URL PREFIX NAME SECONDS TTL_MS KINDS CLIENTS OUT\n");
	return 64;
}
