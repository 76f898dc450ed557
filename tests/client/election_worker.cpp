// election_worker.cpp -- a candidate in its own process, for the election
// tests that kill (SIGKILL) or freeze (SIGSTOP) a leader.
//
//   election_worker once URL ELECTION VALUE TTL_MS
//     campaign (waiting as long as it takes) and print "elected TERM"; then
//     wait until the leadership is lost, print "lost", try a proclaim and
//     print "proclaim ERRC" (or "proclaim ok"), and exit 0.  SIGTERM resigns
//     and exits 0.
//
//   election_worker now
//     print CLOCK_MONOTONIC in microseconds (the test scripts' clock).
//
//   election_worker history URL ELECTION NAME SECONDS TTL_MS OUT
//     for SECONDS: campaign (wait <= 2 s), lead for a random while
//     (checking valid() every 20 ms), resign; meanwhile an ElectionObserver
//     records every view.  One line per event, flushed at once, times from
//     CLOCK_MONOTONIC in microseconds (one clock for every process of the
//     machine), read by tests/providers/election_history.sh:
//       C start_us end_us wait_ms errc     a campaign's call and its outcome
//       L term start_us                    elected (time read after the reply)
//       V term at_us                       still valid (time read before the check)
//       X term at_us                       resigned or lost
//       O has_leader term                  an observed view, in order
//       P term errc                        a refused proclaim
#include <time.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "pglease/pglease.hpp"

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
		std::fprintf(stderr, "election_worker: %s\n", locker.error().message.c_str());
		std::exit(2);
	}
	return std::move(*locker);
}

int
once(const char *url, const char *election, const char *value, long ttl_ms)
{
	auto locker = connect_or_die(url);
	pglease::LeaseOptions o;
	o.ttl = std::chrono::milliseconds{ttl_ms};
	o.wait = std::chrono::hours{1};
	auto leadership = locker->campaign(election, value, o);
	if (!leadership) {
		std::printf("campaign %s\n", std::string{pglease::to_string(leadership.error().code)}.c_str());
		return 1;
	}
	std::printf("elected %lld\n", static_cast<long long>(leadership->term()));
	std::fflush(stdout);
	while (leadership->valid() && !stop_requested)
		std::this_thread::sleep_for(20ms);
	if (stop_requested)
		return leadership->resign() ? 0 : 1;
	std::printf("lost\n");
	auto proclaimed = leadership->proclaim(std::string{value} + "-after");
	std::printf("proclaim %s\n",
	            proclaimed ? "ok" : std::string{pglease::to_string(proclaimed.error().code)}.c_str());
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

// lead -- hold the leadership for hold_ms or until lost, logging V lines
void
lead(Log &log, pglease::Leadership &leadership, long hold_ms, std::mt19937 &rng)
{
	const long long term = leadership.term();
	const long long until = mono_us() + hold_ms * 1000;
	int n = 0;
	while (mono_us() < until && !stop_requested) {
		long long at = mono_us();
		if (!leadership.valid())
			break;
		log.line("V %lld %lld\n", term, at);
		if (++n % 10 == 0) {
			auto p = leadership.proclaim("v" + std::to_string(rng() % 1000));
			if (!p)
				log.line("P %lld %s\n", term, std::string{pglease::to_string(p.error().code)}.c_str());
		}
		std::this_thread::sleep_for(20ms);
	}
	log.line("X %lld %lld\n", term, mono_us());
}

int
history(const char *url, const char *election, const char *name, long seconds, long ttl_ms, const char *out)
{
	Log log(out);
	if (!log.ok()) {
		std::perror(out);
		return 2;
	}
	auto locker = connect_or_die(url);
	auto observer = pglease::ElectionObserver::start(*locker, election, [&](const pglease::LeaderView &v) {
		log.line("O %d %lld\n", v.has_leader ? 1 : 0, (long long)v.term);
	});
	if (!observer) {
		std::fprintf(stderr, "election_worker: %s\n", observer.error().message.c_str());
		return 2;
	}
	std::mt19937 rng(std::random_device{}());
	const long long end = mono_us() + seconds * 1000000LL;
	while (mono_us() < end && !stop_requested) {
		pglease::LeaseOptions o;
		o.ttl = std::chrono::milliseconds{ttl_ms};
		o.wait = 2s;
		long long start = mono_us();
		auto leadership = locker->campaign(election, name, o);
		long long done = mono_us();
		log.line("C %lld %lld %lld %s\n", start, done, 2000LL,
		         leadership ? "ok" : std::string{pglease::to_string(leadership.error().code)}.c_str());
		if (!leadership) {
			std::this_thread::sleep_for(50ms);
			continue;
		}
		log.line("L %lld %lld\n", (long long)leadership->term(), done);
		lead(log, *leadership, 100 + static_cast<long>(rng() % 1500), rng);
	}
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
	if (mode == "once" && argc == 6)
		return once(argv[2], argv[3], argv[4], std::atol(argv[5]));
	if (mode == "history" && argc == 8)
		return history(argv[2], argv[3], argv[4], std::atol(argv[5]), std::atol(argv[6]), argv[7]);
	std::fprintf(stderr, "usage: election_worker now\n"
	                     "       election_worker once URL ELECTION VALUE TTL_MS\n"
	                     "       election_worker history URL ELECTION NAME SECONDS TTL_MS OUT\n");
	return 64;
}
