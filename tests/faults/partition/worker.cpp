// worker.cpp -- a client of the partition suite (tests/faults/partition/),
// run in a client's network namespace (ip netns exec), every provider
// through pglease::connect.
//
//   pglease_partition_worker a|b URL lease|election NAME TTL_MS DIR OUTFILE
//
// a: acquire lease "part/NAME" (or campaign in election "part-NAME"), auto-renewed,
//    then watch it every 2 ms until DIR/check exists (the harness cut and
//    healed the network meanwhile); then, if the lease is still valid, release
//    it ("kept"); if not, ask the server what a late holder would: renew,
//    token renew and token release (providers with token-level calls),
//    proclaim and leader (elections), a fenced write (PostgreSQL), release.
// b: try every 20 ms (wait 0) until granted, then hold until SIGTERM.
//
// One line per event, flushed at once; times are CLOCK_REALTIME in
// microseconds (every process of the machine reads the same clock):
//   P ttl_ms wait_ms grace_ms connect_ms   the options, for the checker's bounds
//   G token send_us recv_us deadline_us    granted (deadline: the local one)
//   F what ms                              acquire/campaign failed (a), after ms
//   D deadline_us                          the local deadline moved (a renewal)
//   V us                                   valid() seen false
//   O n us what                            on_lost fired, the n-th time
//   C call result ms                       a call after the heal and what it answered
//   Q us                                   DIR/check seen: the calls after the heal begin
//   K us                                   still valid at DIR/check: kept
//   T tries max_ms                         b: its tries, the slowest one
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unistd.h>

#include <pqxx/pqxx>

#include "pglease/pglease.hpp"
#include "pglease/postgres.hpp"

namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

volatile std::sig_atomic_t stop_requested = 0;

void
request_stop(int)
{
	stop_requested = 1;
}

long long
real_us()
{
	timespec ts{};
	clock_gettime(CLOCK_REALTIME, &ts);
	return static_cast<long long>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

FILE *out = nullptr;
std::mutex out_mutex;

template <class... Args>
void
emit(const char *format, Args... args)
{
	std::lock_guard<std::mutex> lock{out_mutex};
	std::fprintf(out, format, args...);
	std::fflush(out);
}

std::string
code_of(const pglease::Error &e)
{
	return std::string{pglease::to_string(e.code)};
}

struct Setup {
	bool election;
	std::string name; // the lease's or the election's
	milliseconds ttl;
	std::string dir;
	pglease::LeaseOptions options() const
	{
		pglease::LeaseOptions o;
		o.ttl = ttl;
		o.holder = std::string{election ? "e" : "l"} + std::to_string(getpid());
		return o;
	}
};

const pglease::ClientOptions &
client_options()
{
	static pglease::ClientOptions co = [] {
		pglease::ClientOptions c;
		c.connect_timeout = 2s;
		c.statement_grace = 1s;
		c.backoff_max = 500ms;
		return c;
	}();
	return co;
}

// The held grant: a lease or a leadership, one interface for both.
struct Held {
	std::optional<pglease::Lease> lease;
	std::optional<pglease::Leadership> leadership;
	pglease::Lease &get() { return lease ? *lease : leadership->lease(); }
};

// acquire or campaign once; its send and receive times in send/recv
pglease::Result<Held>
take(pglease::Locker &locker, const Setup &s, milliseconds wait, long long &send, long long &recv)
{
	auto o = s.options();
	o.wait = wait;
	Held h;
	send = real_us();
	if (s.election) {
		auto l = locker.campaign(s.name, "v", o);
		recv = real_us();
		if (!l)
			return l.error();
		h.leadership.emplace(std::move(*l));
	} else {
		auto l = locker.acquire(s.name, o);
		recv = real_us();
		if (!l)
			return l.error();
		h.lease.emplace(std::move(*l));
	}
	return h;
}

long long
deadline_of(const pglease::Lease &l)
{
	return real_us() + static_cast<long long>(l.remaining().count()) * 1000;
}

bool
exists(const std::string &path)
{
	return access(path.c_str(), F_OK) == 0;
}

// call fn, log "C name result ms"; fn answers the result's text.  A call
// that could not reach the server (unavailable: the client may still be in
// its reconnection backoff after the heal) is tried again every 100 ms for
// up to 5 s, so that the server answers it; ms is its slowest try
void
timed(const char *name, const std::function<std::string()> &fn)
{
	const long long first = real_us();
	long long slowest = 0;
	std::string result;
	do {
		if (!result.empty())
			std::this_thread::sleep_for(100ms);
		long long t0 = real_us();
		result = fn();
		slowest = std::max(slowest, real_us() - t0);
	} while (result == "unavailable" && real_us() - first < 5000000);
	emit("C %s %s %lld\n", name, result.c_str(), slowest / 1000);
}

std::string
text(const pglease::Result<void> &r)
{
	return r ? "ok" : code_of(r.error());
}

std::string
text(const pglease::Result<bool> &r)
{
	return r ? (*r ? "true" : "false") : code_of(r.error());
}

// what a late holder asks after the heal: each must be refused
void
late_calls(pglease::Locker &locker, const Setup &s, Held &h)
{
	pglease::Lease &l = h.get();
	const auto token = l.token();
	const auto holder = s.options().holder;
	timed("renew", [&] { return text(l.renew()); });
	if (!s.election && locker.provider() != "ZooKeeper") { // no token-level calls there
		timed("token_renew", [&] { return text(locker.renew(s.name, token, holder, s.ttl)); });
		timed("token_release", [&] { return text(locker.release(s.name, token, holder)); });
	}
	if (s.election) {
		timed("proclaim", [&] { return text(h.leadership->proclaim("late")); });
		timed("leader_term", [&] {
			auto v = locker.leader(s.name);
			return v ? std::to_string(v->term) : code_of(v.error());
		});
	}
	if (locker.capabilities().fenced_write)
		timed("fenced", [&] {
			return text(pglease::fenced(locker, l, [&](pqxx::work &tx) {
				tx.exec_params("INSERT INTO partition_ledger VALUES ($1)", static_cast<long long>(token));
			}));
		});
	timed("release", [&] { return text(l.release()); });
}

int
run_a(pglease::Locker &locker, const Setup &s)
{
	long long send = 0, recv = 0;
	auto h = take(locker, s, 5s, send, recv);
	if (!h) {
		emit("F %s %lld\n", code_of(h.error()).c_str(), (recv - send) / 1000);
		return 1;
	}
	pglease::Lease &l = h->get();
	long long deadline = deadline_of(l);
	emit("G %lld %lld %lld %lld\n", static_cast<long long>(l.token()), send, recv, deadline);
	std::atomic<int> lost{0};
	l.on_lost(
	    [&](const pglease::Error &e) { emit("O %d %lld %s\n", ++lost, real_us(), code_of(e).c_str()); });
	bool seen_invalid = false;
	while (!exists(s.dir + "/check")) {
		if (!seen_invalid && !l.valid()) {
			emit("V %lld\n", real_us());
			seen_invalid = true;
		}
		if (!seen_invalid) {
			long long d = deadline_of(l);
			if (d > deadline + 20000) // a renewal moved it (remaining() is in ms)
				emit("D %lld\n", deadline = d);
		}
		std::this_thread::sleep_for(2ms);
	}
	emit("Q %lld\n", real_us());
	if (l.valid()) {
		emit("K %lld\n", real_us());
		timed("release", [&] { return text(l.release()); });
	} else {
		late_calls(locker, s, *h);
	}
	std::this_thread::sleep_for(200ms); // an on_lost that comes late is still logged
	return 0;
}

int
run_b(pglease::Locker &locker, const Setup &s)
{
	long long tries = 0, slowest = 0, send = 0, recv = 0;
	std::optional<Held> held;
	while (!stop_requested && !held) {
		auto h = take(locker, s, 0ms, send, recv);
		++tries;
		slowest = std::max(slowest, (recv - send) / 1000);
		if (h)
			held.emplace(std::move(*h));
		else
			std::this_thread::sleep_for(20ms);
	}
	emit("T %lld %lld\n", tries, slowest);
	if (!held)
		return 0;
	pglease::Lease &l = held->get();
	emit("G %lld %lld %lld %lld\n", static_cast<long long>(l.token()), send, recv, deadline_of(l));
	while (!stop_requested)
		std::this_thread::sleep_for(20ms);
	return 0;
}

} // namespace

int
main(int argc, char **argv)
{
	if (argc != 8 || (std::string{argv[1]} != "a" && std::string{argv[1]} != "b")) {
		std::fprintf(stderr,
		             "usage: pglease_partition_worker a|b URL lease|election NAME TTL_MS DIR OUTFILE\n");
		return 64;
	}
	out = std::fopen(argv[7], "a");
	if (!out) {
		std::perror(argv[7]);
		return 66;
	}
	std::signal(SIGTERM, request_stop);
	const bool election = std::string{argv[3]} == "election";
	Setup s{election, std::string{election ? "part-" : "part/"} + argv[4], milliseconds{std::atoi(argv[5])},
	        argv[6]};
	const auto &co = client_options();
	emit("P %lld %d %lld %lld\n", static_cast<long long>(s.ttl.count()),
	     std::string{argv[1]} == "a" ? 5000 : 0, static_cast<long long>(co.statement_grace.count()),
	     static_cast<long long>(co.connect_timeout.count()));
	auto locker = pglease::connect(argv[2], co);
	if (!locker) {
		emit("F connect_%s 0\n", code_of(locker.error()).c_str());
		return 69;
	}
	return std::string{argv[1]} == "a" ? run_a(**locker, s) : run_b(**locker, s);
}
