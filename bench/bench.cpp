// bench/bench.cpp -- one benchmark across every provider (bench/run.sh starts
// the servers): uncontended acquire+release pairs, hand-off on one hot
// resource, acquire latency at 1k vs 1M resources, renewals.  Each
// repetition runs every (scenario, point) once with the systems
// round-robin, the first one rotating, so a slow minute of the shared machine
// falls on every system alike.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "report.hpp"
#include "systems.hpp"

namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Config {
	std::string pg_preload, pg_plain, redis, redis_aof, redlock, etcd, zookeeper;
	int reps = 3;
	double duration = 1, hot_duration = 2, warmup = 0.2;
	int resources = 100000;
	std::vector<std::string> scenarios{"uncontended", "hot", "scale", "renew"};
	std::vector<std::string> only; ///< --systems: these System::key only (default: all)
	std::string out_md, out_json, out_svg;
	std::vector<std::pair<std::string, std::string>> meta;
};

// ---- the machine: CPU busy over a window, load average --------------------------------------------

struct CpuTimes {
	unsigned long long busy = 0, total = 0;
};

CpuTimes
cpu_times()
{
	std::ifstream f("/proc/stat");
	std::string cpu;
	unsigned long long v[8] = {};
	f >> cpu;
	for (auto &x : v)
		f >> x;
	CpuTimes t;
	for (int i = 0; i < 8; i++)
		t.total += v[i];
	t.busy = t.total - v[3] - v[4];
	return t;
}

double
load1()
{
	std::ifstream f("/proc/loadavg");
	double l = 0;
	f >> l;
	return l;
}

double
micros(Clock::duration d)
{
	return std::chrono::duration<double, std::micro>(d).count();
}

double
percentile(std::vector<double> v, double p)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

// ---- one measured window: sessions, threads, warm-up ------------------------------------------------

struct Window {
	Clock::time_point start, end;
	[[nodiscard]] bool inside(Clock::time_point t) const { return t >= start && t < end; }
};

/// Open n sessions, run prepare(client, session) on n threads, then body(client,
/// session, window) over a warm-up and a measured window; record the machine's
/// load in `run`.
template <class Prepare, class Body>
bool
measure(const System &sys, const std::string &url, int n, double warmup, double seconds, Run &run,
        Prepare prepare, Body body)
{
	std::vector<std::unique_ptr<Session>> sessions;
	for (int i = 0; i < n; i++) {
		sessions.push_back(open_session(sys, url, i, run.error));
		if (!sessions.back())
			return false;
	}
	std::atomic<int> ready{0};
	std::atomic<bool> go{false};
	Window w;
	std::vector<std::thread> threads;
	for (int i = 0; i < n; i++)
		threads.emplace_back([&, i] {
			prepare(i, *sessions[i]);
			ready++;
			while (!go)
				std::this_thread::sleep_for(std::chrono::microseconds(200));
			body(i, *sessions[i], w);
		});
	while (ready < n)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	auto secs = [](double s) {
		return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
	};
	w.start = Clock::now() + secs(warmup);
	w.end = w.start + secs(seconds);
	go = true;
	std::this_thread::sleep_until(w.start);
	CpuTimes a = cpu_times();
	std::this_thread::sleep_until(w.end);
	CpuTimes b = cpu_times();
	for (auto &t : threads)
		t.join();
	run.busy_pct = b.total > a.total ? 100.0 * (b.busy - a.busy) / (b.total - a.total) : 0;
	run.load1 = load1();
	for (auto &s : sessions)
		if (run.note.empty())
			run.note = s->error();
	return true;
}

void
no_prepare(int, Session &)
{
}

// ---- scenarios ----------------------------------------------------------------------------------

struct PairStats {
	std::vector<double> acq, rel;
	long pairs = 0, busy = 0, errors = 0;
};

/// Uncontended pairs: try-acquire a random resource of prefix/1..n, release at once.
void
run_pairs(const Config &cfg, const System &sys, const std::string &url, int clients,
          const std::string &prefix, int n, Run &run)
{
	std::vector<PairStats> st(clients);
	bool opened = measure(sys, url, clients, cfg.warmup, cfg.duration, run, no_prepare,
	                      [&](int c, Session &s, const Window &w) {
		                      std::minstd_rand rng(1000 + c);
		                      for (;;) {
			                      std::string r = prefix + std::to_string(1 + rng() % n);
			                      std::int64_t token = 0;
			                      auto t0 = Clock::now();
			                      if (t0 >= w.end)
				                      return;
			                      bool got = s.acquire(r, false, token);
			                      auto t1 = Clock::now();
			                      if (!got) {
				                      st[c].busy += w.inside(t0);
				                      continue;
			                      }
			                      bool released = s.release(r, token);
			                      auto t2 = Clock::now();
			                      if (!w.inside(t0) || !w.inside(t2))
				                      continue;
			                      st[c].errors += !released;
			                      st[c].pairs++;
			                      st[c].acq.push_back(micros(t1 - t0));
			                      st[c].rel.push_back(micros(t2 - t1));
		                      }
	                      });
	if (!opened)
		return;
	PairStats all;
	for (auto &s : st) {
		all.pairs += s.pairs, all.busy += s.busy, all.errors += s.errors;
		all.acq.insert(all.acq.end(), s.acq.begin(), s.acq.end());
		all.rel.insert(all.rel.end(), s.rel.begin(), s.rel.end());
	}
	run.m = {{"rate", all.pairs / cfg.duration},
	         {"acq_p50", percentile(all.acq, 0.5)},
	         {"acq_p99", percentile(all.acq, 0.99)},
	         {"rel_p50", percentile(all.rel, 0.5)},
	         {"busy", double(all.busy)},
	         {"errors", double(all.errors)}};
	if (all.pairs == 0)
		run.error = "no pair completed: " + run.note;
}

struct Grant {
	Clock::time_point granted, releasing; // the grant's return, the start of its release call
	int client;
	std::int64_t token;
};

void
hot_metrics(const Config &cfg, const System &sys, std::vector<Grant> g, long timeouts, Run &run)
{
	std::sort(g.begin(), g.end(), [](const Grant &a, const Grant &b) { return a.granted < b.granted; });
	std::vector<double> lat;
	long self = 0, regressions = 0;
	std::vector<long> per_client(8, 0);
	for (size_t i = 0; i < g.size(); i++) {
		per_client[g[i].client]++;
		if (i == 0)
			continue;
		if (g[i].client == g[i - 1].client)
			self++;
		else
			lat.push_back(micros(g[i].granted - g[i - 1].releasing));
		regressions += sys.tokens && g[i].token < g[i - 1].token;
	}
	auto [mn, mx] = std::minmax_element(per_client.begin(), per_client.end());
	run.m = {{"rate", lat.size() / cfg.hot_duration},
	         {"handoff_p50", percentile(lat, 0.5)},
	         {"handoff_p99", percentile(lat, 0.99)},
	         {"fairness", *mn > 0 ? double(*mx) / *mn : 1e9},
	         {"grants_s", g.size() / cfg.hot_duration},
	         {"self_pct", g.empty() ? 0 : 100.0 * self / g.size()},
	         {"timeouts", double(timeouts)},
	         {"regressions", double(regressions)}};
}

/// One hot resource, 8 clients: acquire (waiting), hold 200 us, release.
void
run_hot(const Config &cfg, const System &sys, Run &run)
{
	std::mutex mu;
	std::vector<Grant> grants;
	std::atomic<long> timeouts{0};
	const std::string hot = "hot";
	bool opened = measure(sys, sys.url, 8, cfg.warmup, cfg.hot_duration, run, no_prepare,
	                      [&](int c, Session &s, const Window &w) {
		                      while (Clock::now() < w.end) {
			                      std::int64_t token = 0;
			                      bool got = s.acquire(hot, true, token);
			                      auto t1 = Clock::now();
			                      if (!got) {
				                      timeouts += w.inside(t1);
				                      continue;
			                      }
			                      std::this_thread::sleep_for(std::chrono::microseconds(200));
			                      auto t2 = Clock::now();
			                      s.release(hot, token);
			                      if (w.inside(t1)) {
				                      std::lock_guard<std::mutex> lock(mu);
				                      grants.push_back({t1, t2, c, token});
			                      }
		                      }
	                      });
	if (opened)
		hot_metrics(cfg, sys, std::move(grants), timeouts, run);
}

/// 8 clients each hold 125 leases (1k) and renew them round-robin.
void
run_renew(const Config &cfg, const System &sys, Run &run)
{
	std::vector<long> counts(8, 0), failures(8, 0);
	std::vector<std::vector<std::pair<std::string, std::int64_t>>> held(8);
	auto hold = [&](int c, Session &s) {
		for (int i = 0; i < 125; i++) {
			std::string r = "renew/" + std::to_string(c) + "/" + std::to_string(i);
			std::int64_t token = 0;
			if (s.acquire(r, false, token))
				held[c].emplace_back(r, token);
		}
	};
	bool opened =
	    measure(sys, sys.url, 8, 0, cfg.duration, run, hold, [&](int c, Session &s, const Window &w) {
		    auto &mine = held[c];
		    for (size_t i = 0; !mine.empty() && Clock::now() < w.end; i++) {
			    auto &[r, token] = mine[i % mine.size()];
			    bool ok = s.renew(r, token);
			    if (w.inside(Clock::now()))
				    (ok ? counts[c] : failures[c])++;
		    }
		    for (auto &[r, token] : mine)
			    s.release(r, token);
	    });
	if (!opened)
		return;
	long n = 0, f = 0;
	for (int c = 0; c < 8; c++)
		n += counts[c], f += failures[c];
	run.m = {{"rate", n / cfg.duration}, {"errors", double(f)}};
	if (n == 0)
		run.error = "no renewal succeeded: " + run.note;
}

// ---- the plan: which systems, which points, in which order -------------------------------------------

System
locker(std::string key, std::string name, std::string what, std::string url)
{
	System s;
	s.key = std::move(key), s.name = std::move(name), s.what = std::move(what), s.url = std::move(url);
	return s;
}

std::vector<System>
systems(const Config &c)
{
	const std::string db = " dbname=";
	std::vector<System> v;
	v.push_back(
	    locker("pg_preload", "pg_lease preloaded",
	           "`pglease::connect(conninfo)`: `lease.acquire` / `lease.release`, waits in the FIFO queue "
	           "in shared memory",
	           c.pg_preload + db + "bench"));
	v.push_back(locker("pg_plain", "pg_lease not preloaded",
	                   "the same on a cluster without `shared_preload_libraries` (waiters poll)",
	                   c.pg_plain + db + "bench"));
	v.push_back(
	    locker("redis", "Redis", "`redis://`: SET NX PX + Lua; no persistence", "redis://" + c.redis));
	v.push_back(locker("redis_2s", "Redis, TTL 2 s", "`redis://` as above, each grant of a 2 s TTL",
	                   "redis://" + c.redis));
	v.back().ttl_ms = 2000;
	v.push_back(locker("redis_aof", "Redis appendfsync always",
	                   "`redis://` on a server with `--appendonly yes --appendfsync always`",
	                   "redis://" + c.redis_aof));
	v.push_back(locker("redlock", "Redlock x3", "`redlock://` on 3 Redis servers (no persistence)",
	                   "redlock://" + c.redlock));
	v.push_back(
	    locker("etcd", "etcd", "`etcd://` (JSON gateway), one member, default fsync", "etcd://" + c.etcd));
	v.push_back(locker("zookeeper", "ZooKeeper", "`zookeeper://`, standalone, default forceSync",
	                   "zookeeper://" + c.zookeeper));
	v.push_back(locker("memory", "memory", "`memory:bench`, in this process: the ceiling", "memory:bench"));
	v[0].scale_url = c.pg_preload + db + "%s", v[0].scale_dbs = {"scale_1k", "scale_1m"};
	v[1].scale_url = c.pg_plain + db + "%s", v[1].scale_dbs = v[0].scale_dbs;
	v[2].scale_url = "redis://" + c.redis + "/%s", v[2].scale_dbs = {"1", "2"};
	v[3].hot = false; // the hot resource's grants are short: the TTL makes no difference there
	v[5].tokens = false;
	auto baseline = [&](std::string key, std::string name, std::string what, Kind kind, std::string url) {
		System s = locker(std::move(key), std::move(name), std::move(what), std::move(url));
		s.kind = kind, s.hot = kind == Kind::advisory || kind == Kind::handmade,
		s.renews = kind == Kind::handmade;
		s.tokens = kind == Kind::handmade;
		return s;
	};
	v.push_back(baseline("advisory", "advisory lock",
	                     "`pg_advisory_lock` / `pg_advisory_unlock` (libpq): in memory, no TTL, no token",
	                     Kind::advisory, c.pg_preload + db + "bench"));
	v.push_back(
	    baseline("handmade", "handmade table",
	             "`INSERT ... ON CONFLICT DO UPDATE ... WHERE expired RETURNING token`, release by `UPDATE` "
	             "(libpq); waiting: retry after 50-250 ms",
	             Kind::handmade, c.pg_preload + db + "bench"));
	v.back().scale_url = c.pg_preload + db + "%s", v.back().scale_dbs = v[0].scale_dbs;
	v.push_back(baseline("floor", "durable floor",
	                     "per pair: `UPDATE bench_floor SET n = n + 1 WHERE id = <client>` + `SELECT 1`",
	                     Kind::floor, c.pg_preload + db + "bench"));
	v.push_back(baseline("etcd_raw", "etcd raw client",
	                     "curl to the JSON gateway: one session lease, txn put-if-absent, delete",
	                     Kind::etcd_raw, c.etcd));
	v.push_back(baseline("redis_raw", "Redis raw client",
	                     "hiredis: `SET key value NX PX 30000`, release by `DEL` (no token, no compare)",
	                     Kind::redis_raw, c.redis));
	v.push_back(baseline("redis_raw_fenced", "Redis raw, fenced",
	                     "hiredis: `INCR` of a counter and `SET NX PX 30000` in one pipeline, `DEL`",
	                     Kind::redis_raw_fenced, c.redis));
	v.back().tokens = true;
	v.push_back(baseline("redis_spin", "Redis raw spin",
	                     "hiredis: `SET NX PX` repeated at once until granted, `DEL` (the naive spin loop)",
	                     Kind::redis_spin, c.redis));
	v.back().hot = true;
	v.push_back(baseline("zookeeper_raw", "ZooKeeper raw client",
	                     "ZooKeeper C client: create and delete an ephemeral-sequential node",
	                     Kind::zookeeper_raw, c.zookeeper));
	return v;
}

struct Step {
	std::string scenario, point;
};

std::vector<Step>
steps(const Config &cfg, int rep)
{
	std::vector<Step> out;
	auto want = [&](const std::string &s) {
		return std::find(cfg.scenarios.begin(), cfg.scenarios.end(), s) != cfg.scenarios.end();
	};
	if (want("uncontended"))
		for (const char *p : {"1", "8", "32"})
			out.push_back({"uncontended", p});
	if (want("hot"))
		out.push_back({"hot", "8"});
	if (want("scale"))
		for (const char *p : {"1k", "1M"})
			out.push_back({"scale", p});
	if (want("renew"))
		out.push_back({"renew", "1k"});
	if (rep % 2)
		std::reverse(out.begin(), out.end()); // the order of the points alternates
	return out;
}

bool
applies(const System &s, const Step &st)
{
	if (st.scenario == "hot")
		return s.hot;
	if (st.scenario == "scale")
		return !s.scale_url.empty();
	if (st.scenario == "renew")
		return s.renews;
	return true;
}

void
run_step(const Config &cfg, const System &sys, const Step &st, Run &run)
{
	if (st.scenario == "uncontended") {
		run_pairs(cfg, sys, sys.url, std::stoi(st.point), "u/", cfg.resources, run);
	} else if (st.scenario == "hot") {
		run_hot(cfg, sys, run);
	} else if (st.scenario == "scale") {
		std::string url = sys.scale_url;
		url.replace(url.find("%s"), 2, sys.scale_dbs[st.point == "1k" ? 0 : 1]);
		run_pairs(cfg, sys, url, 1, "s/", st.point == "1k" ? 1000 : 1000000, run);
	} else {
		run_renew(cfg, sys, run);
	}
}

Report
run_all(const Config &cfg)
{
	Report rep;
	rep.meta = cfg.meta;
	for (System &s : systems(cfg))
		if (cfg.only.empty() || std::find(cfg.only.begin(), cfg.only.end(), s.key) != cfg.only.end())
			rep.systems.push_back(std::move(s));
	rep.reps = cfg.reps;
	rep.duration = cfg.duration;
	rep.hot_duration = cfg.hot_duration;
	auto t0 = Clock::now();
	for (int r = 0; r < cfg.reps; r++) {
		for (const Step &st : steps(cfg, r)) {
			size_t n = rep.systems.size();
			for (size_t i = 0; i < n; i++) {
				const System &sys = rep.systems[(i + r) % n]; // the first system rotates
				if (!applies(sys, st))
					continue;
				Run run;
				run.scenario = st.scenario, run.point = st.point, run.system = sys.key, run.rep = r + 1;
				run_step(cfg, sys, st, run);
				std::fprintf(stderr, "bench: [%5.0f s] rep %d %-11s %-3s %-22s %10.1f/s%s%s\n",
				             std::chrono::duration<double>(Clock::now() - t0).count(), r + 1,
				             st.scenario.c_str(), st.point.c_str(), sys.name.c_str(),
				             run.m.count("rate") ? run.m["rate"] : 0.0,
				             run.error.empty() ? "" : "  FAILED: ", run.error.c_str());
				rep.runs.push_back(std::move(run));
			}
		}
	}
	return rep;
}

// ---- arguments ------------------------------------------------------------------------------------

std::vector<std::string>
split(const std::string &s, char sep)
{
	std::vector<std::string> out;
	std::stringstream in(s);
	for (std::string item; std::getline(in, item, sep);)
		out.push_back(item);
	return out;
}

bool
parse_args(int argc, char **argv, Config &c)
{
	std::map<std::string, std::string *> text{{"--pg-preload", &c.pg_preload}, {"--pg-plain", &c.pg_plain},
	                                          {"--redis", &c.redis},           {"--redis-aof", &c.redis_aof},
	                                          {"--redlock", &c.redlock},       {"--etcd", &c.etcd},
	                                          {"--zookeeper", &c.zookeeper},   {"--out-md", &c.out_md},
	                                          {"--out-json", &c.out_json},     {"--out-svg", &c.out_svg}};
	std::map<std::string, double *> num{
	    {"--duration", &c.duration}, {"--hot-duration", &c.hot_duration}, {"--warmup", &c.warmup}};
	for (int i = 1; i + 1 < argc; i += 2) {
		std::string k = argv[i], v = argv[i + 1];
		if (text.count(k))
			*text[k] = v;
		else if (num.count(k))
			*num[k] = std::stod(v);
		else if (k == "--reps")
			c.reps = std::stoi(v);
		else if (k == "--resources")
			c.resources = std::stoi(v);
		else if (k == "--scenarios")
			c.scenarios = split(v, ',');
		else if (k == "--systems")
			c.only = split(v, ',');
		else if (k == "--meta" && v.find('=') != std::string::npos)
			c.meta.emplace_back(v.substr(0, v.find('=')), v.substr(v.find('=') + 1));
		else
			return false;
	}
	return argc % 2 == 1 && !c.pg_preload.empty() && !c.out_md.empty();
}

} // namespace
} // namespace bench

int
main(int argc, char **argv)
{
	bench::Config cfg;
	try {
		if (!bench::parse_args(argc, argv, cfg)) {
			std::cerr
			    << "usage: bench --pg-preload CONNINFO --pg-plain CONNINFO --redis H:P --redis-aof H:P"
			       " --redlock H:P,H:P,H:P --etcd H:P --zookeeper H:P --out-md F --out-json F --out-svg F"
			       " [--reps N --duration S --hot-duration S --warmup S --resources N --scenarios LIST"
			       " --systems KEY,... --meta KEY=VALUE ...] (bench/run.sh passes them)\n";
			return 2;
		}
	} catch (const std::exception &e) {
		std::cerr << "bench: bad argument: " << e.what() << "\n";
		return 2;
	}
	bench::Report r = bench::run_all(cfg);
	bench::write_json(r, cfg.out_json);
	bench::write_markdown(r, cfg.out_md);
	bench::write_svg(r, cfg.out_svg);
	long failed =
	    std::count_if(r.runs.begin(), r.runs.end(), [](const bench::Run &x) { return !x.error.empty(); });
	std::cerr << "bench: " << r.runs.size() << " runs, " << failed << " failed\n";
	return failed ? 1 : 0;
}
