// handoff.cpp -- hand-off latency of one hot lock between competing clients.
//
// One process, one libpq connection per client thread.  Every client loops
// until the run's deadline: acquire (blocking, or waiting inside the server),
// hold a fixed critical section, release.  A "hand-off" is a grant to a
// client other than the previous holder; its latency runs from the *return*
// of the previous holder's release call to the *return* of the grant, both
// taken with std::chrono::steady_clock in this process right after
// PQexecPrepared returns.
//
// Grant returns are totally ordered by the lock itself (grant k+1 needs
// release k, which follows grant k's return in the same thread), so each
// grant takes the next index in a shared log when it returns, and the
// release of that grant fills in its time stamp later.  Release k's return
// may come *after* grant k+1's return (the next holder is woken by the
// release's commit, before the release's result reaches its client): such a
// hand-off has a negative latency and is counted as it is.
//
// Systems (kind of a target):
//   lease     SELECT lease.acquire(res, ttl, wait => W, holder => 'client-N')
//             SELECT lease.release(res, token)
//   advisory  SELECT pg_advisory_lock(hashtext(res))   -- blocks in the lock queue
//             SELECT pg_advisory_unlock(hashtext(res))
//
// Several targets (name, kind, conninfo) are measured in one invocation,
// round-robin within each repetition with the starting target rotated, and
// the median and min-max over the repetitions are written as markdown and
// JSON.  See bench/handoff.sh, which starts the clusters and calls this.
//
// Build: g++ -O2 -std=c++17 -pthread -I$(pg_config --includedir) handoff.cpp -lpq

#include <libpq-fe.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "procstat.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

[[noreturn]] void die(const std::string &msg)
{
	std::cerr << "handoff: " << msg << std::endl;
	std::exit(2);
}

// ---- configuration -----------------------------------------------------------

enum class Kind { Lease, Advisory };

struct Target
{
	std::string name;
	Kind kind = Kind::Lease;
	std::string conninfo;
	std::vector<std::string> session_sql;	// run on every client connection
	std::string description;
};

struct Config
{
	std::vector<Target> targets;
	int clients = 8;
	double duration_s = 10;
	double warmup_s = 1;
	int reps = 5;
	int hold_us = 200;
	bool hold_spin = true;
	std::string resource = "hot";
	std::string ttl = "30 s";
	std::string wait = "2 s";
	bool checkpoint = true;
	double pause_s = 1;
	std::string out_md;
	std::string out_json;
	std::string title = "Hand-off on one hot resource";
	std::string command;
	std::vector<std::pair<std::string, std::string>> meta;
	std::vector<std::string> notes;
	bool targets_section = true;
	bool wal_stats = false;
};

// ---- libpq helpers ----------------------------------------------------------------

struct Conn
{
	PGconn *c = nullptr;
	Conn() = default;
	explicit Conn(const std::string &conninfo)
	{
		c = PQconnectdb(conninfo.c_str());
		if (PQstatus(c) != CONNECTION_OK)
		{
			std::string err = PQerrorMessage(c);
			PQfinish(c);
			c = nullptr;
			throw std::runtime_error("connection to \"" + conninfo + "\" failed: " + err);
		}
	}
	Conn(const Conn &) = delete;
	Conn &operator=(const Conn &) = delete;
	Conn(Conn &&o) noexcept : c(o.c) { o.c = nullptr; }
	~Conn()
	{
		if (c)
			PQfinish(c);
	}

	// run a query, return the first column of the first row ("" if none)
	std::string scalar(const std::string &sql)
	{
		PGresult *r = PQexec(c, sql.c_str());
		ExecStatusType st = PQresultStatus(r);
		if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK)
		{
			std::string err = PQresultErrorMessage(r);
			PQclear(r);
			throw std::runtime_error(sql + ": " + err);
		}
		std::string v;
		if (st == PGRES_TUPLES_OK && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0))
			v = PQgetvalue(r, 0, 0);
		PQclear(r);
		return v;
	}

	void prepare(const char *name, const char *sql, int nparams)
	{
		PGresult *r = PQprepare(c, name, sql, nparams, nullptr);
		if (PQresultStatus(r) != PGRES_COMMAND_OK)
		{
			std::string err = PQresultErrorMessage(r);
			PQclear(r);
			throw std::runtime_error(std::string("prepare ") + name + ": " + err);
		}
		PQclear(r);
	}
};

// ---- one measurement ------------------------------------------------------------------

struct Grant
{
	int client;
	TimePoint granted;		// return of the acquire
	TimePoint release_call;	// just before the release call (set later)
	TimePoint released;		// return of the release (set later)
	bool has_release = false;
	long long token = 0;	// lease only
};

struct RunResult
{
	std::string target;
	int rep = 0;
	int order = 0;			// position within the repetition
	double window_s = 0;
	long long grants = 0;
	long long handoffs = 0;
	long long self_regrants = 0;
	long long timeouts = 0;
	double handoffs_per_s = 0;
	double grants_per_s = 0;
	double p50_us = NAN, p90_us = NAN, p99_us = NAN, max_us = NAN, mean_us = NAN;
	long long negative_latencies = 0;
	double call_p50_us = NAN, call_p99_us = NAN;	// from the release *call* instead
	std::vector<long long> per_client;
	double fairness = NAN;	// max/min grants per client, inf if min == 0
	long long exclusion_violations = 0;
	long long token_violations = 0;
	long long failed_releases = 0;
	double cpu_busy_pct = NAN;	// whole machine over the window (/proc/stat), all processes
	double loadavg1 = NAN;		// /proc/loadavg at the end of the window
	double own_cpu_pct = NAN;	// this driver + the clients' backends, % of the machine
	// pg_stat_wal over the whole run, warm-up and drain included (--wal-stats)
	double wal_syncs_per_grant = NAN;
	double wal_sync_mean_us = NAN;	// needs track_wal_io_timing = on
	long long wal_grants_total = 0;
};

double percentile(const std::vector<double> &sorted, double p)
{
	// nearest rank
	if (sorted.empty())
		return NAN;
	size_t rank = (size_t) std::ceil(p / 100.0 * sorted.size());
	if (rank < 1)
		rank = 1;
	return sorted[rank - 1];
}

std::string sql_literal(PGconn *c, const std::string &s)
{
	char *q = PQescapeLiteral(c, s.c_str(), s.size());
	if (!q)
		throw std::runtime_error(PQerrorMessage(c));
	std::string out(q);
	PQfreemem(q);
	return out;
}

RunResult run_once(const Config &cfg, const Target &t, int rep, int order)
{
	RunResult res;
	res.target = t.name;
	res.rep = rep;
	res.order = order;

	// control connection: the resource must be free, and a checkpoint keeps
	// one from landing in the middle of a run
	{
		Conn ctl(t.conninfo);
		if (t.kind == Kind::Lease)
		{
			std::string held = ctl.scalar("SELECT count(*) FROM lease.leases WHERE resource = " +
										  sql_literal(ctl.c, cfg.resource));
			if (held != "0")
				throw std::runtime_error("resource \"" + cfg.resource + "\" is held before the run on " + t.name);
		}
		if (cfg.checkpoint)
			ctl.scalar("CHECKPOINT");
	}
	auto wal_snapshot = [&](double &syncs, double &ms) {
		Conn c(t.conninfo);
		std::string v = c.scalar("SELECT wal_sync || ' ' || wal_sync_time FROM pg_stat_wal");
		std::istringstream in(v);
		in >> syncs >> ms;
	};
	double wal_sync0 = 0, wal_ms0 = 0;
	if (cfg.wal_stats)
		wal_snapshot(wal_sync0, wal_ms0);

	std::vector<Conn> conns;
	for (int i = 0; i < cfg.clients; i++)
	{
		conns.emplace_back(t.conninfo);
		Conn &c = conns.back();
		c.scalar("SET application_name = 'handoff client-" + std::to_string(i) + "'");
		for (const auto &s : t.session_sql)
			c.scalar(s);
		if (t.kind == Kind::Lease)
		{
			c.prepare("acq", "SELECT lease.acquire($1::text, $2::interval, wait => $3::interval, holder => $4::text)", 4);
			c.prepare("rel", "SELECT lease.release($1::text, $2::bigint)", 2);
		}
		else
		{
			c.prepare("acq", "SELECT pg_advisory_lock(hashtext($1::text))", 1);
			c.prepare("rel", "SELECT pg_advisory_unlock(hashtext($1::text))", 1);
		}
	}

	std::mutex log_mu;
	std::vector<Grant> log;
	log.reserve(1 << 16);
	std::atomic<int> inside{0};
	std::atomic<long long> exclusion_violations{0};
	std::atomic<bool> failed{false};
	std::mutex err_mu;
	std::string first_error;
	std::vector<long long> timeouts(cfg.clients, 0);	// within the window
	std::vector<long long> failed_releases(cfg.clients, 0);

	// start a little in the future so every thread is parked at the start
	const TimePoint start = Clock::now() + std::chrono::milliseconds(50);
	const TimePoint win_begin = start + std::chrono::duration_cast<Clock::duration>(
		std::chrono::duration<double>(cfg.warmup_s));
	const TimePoint win_end = win_begin + std::chrono::duration_cast<Clock::duration>(
		std::chrono::duration<double>(cfg.duration_s));
	const auto hold = std::chrono::microseconds(cfg.hold_us);

	// A failing client closes its connection: a session-level advisory lock it
	// holds is then released, so the others are not blocked forever.
	auto fail = [&](int id, const std::string &msg) {
		{
			std::lock_guard<std::mutex> g(err_mu);
			if (first_error.empty())
				first_error = msg;
		}
		failed = true;
		PQfinish(conns[id].c);
		conns[id].c = nullptr;
	};
	std::atomic<int> finished{0};

	auto client = [&](int id) {
		PGconn *c = conns[id].c;
		const std::string holder = "client-" + std::to_string(id);
		std::this_thread::sleep_until(start);
		while (!failed && Clock::now() < win_end)
		{
			// ---- acquire
			PGresult *r;
			if (t.kind == Kind::Lease)
			{
				const char *vals[4] = {cfg.resource.c_str(), cfg.ttl.c_str(), cfg.wait.c_str(), holder.c_str()};
				r = PQexecPrepared(c, "acq", 4, vals, nullptr, nullptr, 0);
			}
			else
			{
				const char *vals[1] = {cfg.resource.c_str()};
				r = PQexecPrepared(c, "acq", 1, vals, nullptr, nullptr, 0);
			}
			const TimePoint t_acq = Clock::now();
			if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
			{
				std::string msg = holder + " acquire: " + PQresultErrorMessage(r);
				PQclear(r);
				fail(id, msg);
				finished++;
				return;
			}
			long long token = 0;
			if (t.kind == Kind::Lease)
			{
				if (PQgetisnull(r, 0, 0))
				{
					// not granted within wait
					PQclear(r);
					if (t_acq >= win_begin && t_acq < win_end)
						timeouts[id]++;
					continue;
				}
				token = std::strtoll(PQgetvalue(r, 0, 0), nullptr, 10);
			}
			PQclear(r);

			if (inside.fetch_add(1) != 0)
				exclusion_violations++;
			size_t idx;
			{
				std::lock_guard<std::mutex> g(log_mu);
				idx = log.size();
				Grant gr;
				gr.client = id;
				gr.granted = t_acq;
				gr.token = token;
				log.push_back(gr);
			}

			// ---- critical section
			if (cfg.hold_spin)
			{
				const TimePoint until = Clock::now() + hold;
				while (Clock::now() < until)
					;
			}
			else
				std::this_thread::sleep_for(hold);

			// ---- release
			inside.fetch_sub(1);
			const TimePoint t_rel_call = Clock::now();
			if (t.kind == Kind::Lease)
			{
				const std::string tok = std::to_string(token);
				const char *vals[2] = {cfg.resource.c_str(), tok.c_str()};
				r = PQexecPrepared(c, "rel", 2, vals, nullptr, nullptr, 0);
			}
			else
			{
				const char *vals[1] = {cfg.resource.c_str()};
				r = PQexecPrepared(c, "rel", 1, vals, nullptr, nullptr, 0);
			}
			const TimePoint t_rel = Clock::now();
			if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
			{
				std::string msg = holder + " release: " + PQresultErrorMessage(r);
				PQclear(r);
				fail(id, msg);
				finished++;
				return;
			}
			if (std::strcmp(PQgetvalue(r, 0, 0), "t") != 0)
				failed_releases[id]++;
			PQclear(r);
			{
				std::lock_guard<std::mutex> g(log_mu);
				log[idx].release_call = t_rel_call;
				log[idx].released = t_rel;
				log[idx].has_release = true;
			}
		}
		finished++;
	};

	std::vector<std::thread> threads;
	for (int i = 0; i < cfg.clients; i++)
		threads.emplace_back(client, i);
	// machine load during the window: other processes compete for the same CPUs and disk
	std::vector<std::string> own_pids{"self"};
	for (const auto &c : conns)
		own_pids.push_back(std::to_string(PQbackendPID(c.c)));
	auto own_jiffies = [&]() {
		unsigned long long j = 0;
		for (const auto &p : own_pids)
			j += proc_jiffies(p);
		return j;
	};
	unsigned long long b0 = 0, t0 = 0, b1 = 0, t1 = 0;
	std::this_thread::sleep_until(win_begin);
	unsigned long long o0 = own_jiffies();
	bool have0 = cpu_jiffies(b0, t0);
	std::this_thread::sleep_until(win_end);
	bool have1 = cpu_jiffies(b1, t1);
	unsigned long long o1 = own_jiffies();
	if (have0 && have1 && t1 > t0)
	{
		res.cpu_busy_pct = 100.0 * (b1 - b0) / (t1 - t0);
		res.own_cpu_pct = 100.0 * (o1 - o0) / (t1 - t0);
	}
	res.loadavg1 = loadavg1();
	// watchdog: every client should be done within a few waits after the deadline
	const TimePoint give_up = Clock::now() + std::chrono::seconds(60);
	while (finished.load() < cfg.clients)
	{
		if (Clock::now() > give_up)
		{
			std::cerr << "handoff: " << t.name << ": clients still running 60 s after the deadline; aborting" << std::endl;
			std::_Exit(3);	// the server ends the sessions (and their advisory locks)
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
	}
	for (auto &th : threads)
		th.join();
	if (failed)
		throw std::runtime_error(t.name + ": " + first_error);

	// ---- analysis over the window
	res.window_s = cfg.duration_s;
	res.per_client.assign(cfg.clients, 0);
	std::vector<double> lat, lat_call;
	for (size_t k = 0; k < log.size(); k++)
	{
		const Grant &g = log[k];
		if (k > 0 && t.kind == Kind::Lease && g.token <= log[k - 1].token)
			res.token_violations++;
		if (g.granted < win_begin || g.granted >= win_end)
			continue;
		res.grants++;
		res.per_client[g.client]++;
		if (k == 0)
			continue;
		const Grant &prev = log[k - 1];
		if (prev.client == g.client)
		{
			res.self_regrants++;
			continue;
		}
		if (!prev.has_release)
			throw std::runtime_error(t.name + ": a grant followed a grant that was never released");
		res.handoffs++;
		double us = std::chrono::duration<double, std::micro>(g.granted - prev.released).count();
		if (us < 0)
			res.negative_latencies++;
		lat.push_back(us);
		lat_call.push_back(std::chrono::duration<double, std::micro>(g.granted - prev.release_call).count());
	}
	std::sort(lat.begin(), lat.end());
	std::sort(lat_call.begin(), lat_call.end());
	res.call_p50_us = percentile(lat_call, 50);
	res.call_p99_us = percentile(lat_call, 99);
	if (!lat.empty())
	{
		res.p50_us = percentile(lat, 50);
		res.p90_us = percentile(lat, 90);
		res.p99_us = percentile(lat, 99);
		res.max_us = lat.back();
		double sum = 0;
		for (double v : lat)
			sum += v;
		res.mean_us = sum / lat.size();
	}
	res.handoffs_per_s = res.handoffs / cfg.duration_s;
	res.grants_per_s = res.grants / cfg.duration_s;
	for (auto v : timeouts)
		res.timeouts += v;
	for (auto v : failed_releases)
		res.failed_releases += v;
	long long mx = *std::max_element(res.per_client.begin(), res.per_client.end());
	long long mn = *std::min_element(res.per_client.begin(), res.per_client.end());
	res.fairness = mn > 0 ? (double) mx / mn : std::numeric_limits<double>::infinity();
	res.exclusion_violations = exclusion_violations;

	// the lease must be free again (every client released before it left)
	if (t.kind == Kind::Lease)
	{
		Conn &c = conns[0];
		std::string held = c.scalar("SELECT count(*) FROM lease.leases WHERE resource = " +
									sql_literal(c.c, cfg.resource));
		if (held != "0")
			throw std::runtime_error(t.name + ": resource still held after the run");
	}
	if (cfg.wal_stats)
	{
		// backends flush their WAL counters at exit: close them and give them a moment
		conns.clear();
		std::this_thread::sleep_for(std::chrono::milliseconds(500));
		double wal_sync1 = 0, wal_ms1 = 0;
		wal_snapshot(wal_sync1, wal_ms1);
		res.wal_grants_total = (long long) log.size();
		if (!log.empty())
			res.wal_syncs_per_grant = (wal_sync1 - wal_sync0) / log.size();
		if (wal_sync1 > wal_sync0 && wal_ms1 > wal_ms0)
			res.wal_sync_mean_us = 1000.0 * (wal_ms1 - wal_ms0) / (wal_sync1 - wal_sync0);
	}
	return res;
}

// ---- summaries and output --------------------------------------------------------------

struct Agg
{
	double med = NAN, lo = NAN, hi = NAN;
	int n = 0;
};

Agg aggregate(std::vector<double> v)
{
	Agg a;
	v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
	if (v.empty())
		return a;
	std::sort(v.begin(), v.end());
	a.n = (int) v.size();
	a.lo = v.front();
	a.hi = v.back();
	size_t m = v.size();
	a.med = (m % 2) ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
	return a;
}

std::string fmt(double v, int prec = 0)
{
	if (std::isnan(v))
		return "n/a";
	if (std::isinf(v))
		return "∞";
	char buf[64];
	std::snprintf(buf, sizeof buf, "%.*f", prec, v);
	return buf;
}

// 3 significant digits at least, for ratios and latencies
std::string fmt_auto(double v)
{
	if (std::isnan(v) || std::isinf(v))
		return fmt(v);
	if (v == 0)
		return "0";
	double a = std::fabs(v);
	int prec = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
	return fmt(v, prec);
}

std::string cell(const Agg &a, bool autoprec = true, int prec = 0)
{
	auto f = [&](double x) { return autoprec ? fmt_auto(x) : fmt(x, prec); };
	if (a.n == 0)
		return "n/a";
	if (a.n == 1)
		return f(a.med);
	return f(a.med) + " (" + f(a.lo) + "–" + f(a.hi) + ")";
}

std::string json_str(const std::string &s)
{
	std::string o = "\"";
	for (unsigned char ch : s)
	{
		switch (ch)
		{
			case '"': o += "\\\""; break;
			case '\\': o += "\\\\"; break;
			case '\n': o += "\\n"; break;
			case '\t': o += "\\t"; break;
			case '\r': o += "\\r"; break;
			default:
				if (ch < 0x20)
				{
					char b[8];
					std::snprintf(b, sizeof b, "\\u%04x", ch);
					o += b;
				}
				else
					o += (char) ch;
		}
	}
	return o + "\"";
}

std::string json_num(double v, int prec = 3)
{
	if (std::isnan(v) || std::isinf(v))
		return "null";
	char buf[64];
	std::snprintf(buf, sizeof buf, "%.*f", prec, v);
	return buf;
}

std::string json_agg(const Agg &a, int prec = 3)
{
	return "{\"median\": " + json_num(a.med, prec) + ", \"min\": " + json_num(a.lo, prec) +
		", \"max\": " + json_num(a.hi, prec) + ", \"n\": " + std::to_string(a.n) + "}";
}

struct Summary
{
	Agg handoffs_per_s, grants_per_s, p50, p90, p99, max, fairness, timeouts, self_pct, negative, call_p50, call_p99;
	Agg wal_syncs_per_grant, wal_sync_mean_us, cpu_busy, own_cpu;
	long long exclusion_violations = 0, token_violations = 0, failed_releases = 0;
};

Summary summarize(const std::vector<RunResult> &runs, const std::string &name)
{
	std::vector<double> hps, gps, p50, p90, p99, mx, fair, to, selfp, neg, cp50, cp99, wspg, wsus, busy, own;
	Summary s;
	for (const auto &r : runs)
	{
		if (r.target != name)
			continue;
		hps.push_back(r.handoffs_per_s);
		gps.push_back(r.grants_per_s);
		p50.push_back(r.p50_us);
		p90.push_back(r.p90_us);
		p99.push_back(r.p99_us);
		mx.push_back(r.max_us);
		fair.push_back(r.fairness);	// inf sorts last, and stays in
		to.push_back((double) r.timeouts);
		selfp.push_back(r.grants ? 100.0 * r.self_regrants / r.grants : NAN);
		neg.push_back((double) r.negative_latencies);
		cp50.push_back(r.call_p50_us);
		cp99.push_back(r.call_p99_us);
		wspg.push_back(r.wal_syncs_per_grant);
		wsus.push_back(r.wal_sync_mean_us);
		busy.push_back(r.cpu_busy_pct);
		own.push_back(r.own_cpu_pct);
		s.exclusion_violations += r.exclusion_violations;
		s.token_violations += r.token_violations;
		s.failed_releases += r.failed_releases;
	}
	s.handoffs_per_s = aggregate(hps);
	s.grants_per_s = aggregate(gps);
	s.p50 = aggregate(p50);
	s.p90 = aggregate(p90);
	s.p99 = aggregate(p99);
	s.max = aggregate(mx);
	s.fairness = aggregate(fair);
	s.timeouts = aggregate(to);
	s.self_pct = aggregate(selfp);
	s.negative = aggregate(neg);
	s.call_p50 = aggregate(cp50);
	s.call_p99 = aggregate(cp99);
	s.wal_syncs_per_grant = aggregate(wspg);
	s.wal_sync_mean_us = aggregate(wsus);
	s.cpu_busy = aggregate(busy);
	s.own_cpu = aggregate(own);
	return s;
}

struct TargetInfo
{
	std::string server_version;
	std::string settings;
};

TargetInfo describe(const Target &t)
{
	TargetInfo i;
	Conn c(t.conninfo);
	for (const auto &s : t.session_sql)
		c.scalar(s);
	i.server_version = c.scalar("SELECT version()");
	if (t.kind == Kind::Lease)
		c.scalar("SELECT lease.is_current('handoff/describe', 1)");	// loads the library: its GUCs show
	i.settings = c.scalar(
		"SELECT string_agg(name || '=' || setting || coalesce(unit, ''), ', ' ORDER BY name) FROM pg_settings "
		"WHERE name IN ('shared_preload_libraries', 'lease.poll_interval', 'fsync', "
		"'synchronous_commit', 'wal_sync_method', 'commit_delay', 'track_wal_io_timing')");
	return i;
}

void usage()
{
	std::cerr <<
		"usage: handoff --target NAME:KIND:CONNINFO [--target ...] [options]\n"
		"  KIND is lease or advisory; CONNINFO a libpq connection string\n"
		"  --session-sql NAME:SQL      run SQL on each client connection of target NAME (repeatable)\n"
		"  --describe NAME:TEXT        one-line description of a target for the report\n"
		"  --clients N (8)  --duration S (10)  --warmup S (1)  --reps N (5)  --pause S (1)\n"
		"  --hold-us N (200)  --hold spin|sleep (spin)  --resource R (hot)\n"
		"  --ttl INTERVAL ('30 s')  --wait INTERVAL ('2 s')  --no-checkpoint\n"
		"  --out-md FILE  --out-json FILE  --title T  --command CMD  --meta KEY=VALUE  --note TEXT\n"
		"  --no-targets                do not evaluate the pg_lease hand-off targets\n"
		"  --wal-stats                 report WAL fsyncs per grant and their mean time (pg_stat_wal;\n"
		"                              the time needs track_wal_io_timing = on)\n";
	std::exit(2);
}

Config parse(int argc, char **argv)
{
	Config cfg;
	std::map<std::string, std::vector<std::string>> session_sql;
	std::map<std::string, std::string> descr;
	auto need = [&](int &i) -> std::string {
		if (i + 1 >= argc)
			usage();
		return argv[++i];
	};
	auto num = [&](const std::string &s, const char *what) -> double {
		char *end;
		double v = std::strtod(s.c_str(), &end);
		if (s.empty() || *end || !(v >= 0))
			die(std::string("bad value for ") + what + ": " + s);
		return v;
	};
	auto split_name = [&](const std::string &s, const char *what) {
		auto p = s.find(':');
		if (p == std::string::npos || p == 0)
			die(std::string(what) + " must be NAME:VALUE, got: " + s);
		return std::make_pair(s.substr(0, p), s.substr(p + 1));
	};
	for (int i = 1; i < argc; i++)
	{
		std::string a = argv[i];
		if (a == "--target")
		{
			std::string v = need(i);
			auto p1 = v.find(':');
			auto p2 = p1 == std::string::npos ? p1 : v.find(':', p1 + 1);
			if (p2 == std::string::npos || p1 == 0)
				die("--target must be NAME:KIND:CONNINFO, got: " + v);
			Target t;
			t.name = v.substr(0, p1);
			std::string kind = v.substr(p1 + 1, p2 - p1 - 1);
			if (kind == "lease")
				t.kind = Kind::Lease;
			else if (kind == "advisory")
				t.kind = Kind::Advisory;
			else
				die("unknown kind " + kind + " (lease or advisory)");
			t.conninfo = v.substr(p2 + 1);
			for (const auto &o : cfg.targets)
				if (o.name == t.name)
					die("duplicate target " + t.name);
			cfg.targets.push_back(t);
		}
		else if (a == "--session-sql")
		{
			auto p = split_name(need(i), "--session-sql");
			session_sql[p.first].push_back(p.second);
		}
		else if (a == "--describe")
		{
			auto p = split_name(need(i), "--describe");
			descr[p.first] = p.second;
		}
		else if (a == "--clients")
		{
			cfg.clients = (int) num(need(i), "--clients");
			if (cfg.clients < 2)
				die("--clients must be at least 2");
		}
		else if (a == "--duration")
		{
			cfg.duration_s = num(need(i), "--duration");
			if (cfg.duration_s <= 0)
				die("--duration must be positive");
		}
		else if (a == "--warmup")
			cfg.warmup_s = num(need(i), "--warmup");
		else if (a == "--reps")
		{
			cfg.reps = (int) num(need(i), "--reps");
			if (cfg.reps < 1)
				die("--reps must be at least 1");
		}
		else if (a == "--pause")
			cfg.pause_s = num(need(i), "--pause");
		else if (a == "--hold-us")
			cfg.hold_us = (int) num(need(i), "--hold-us");
		else if (a == "--hold")
		{
			std::string v = need(i);
			if (v != "spin" && v != "sleep")
				die("--hold is spin or sleep");
			cfg.hold_spin = (v == "spin");
		}
		else if (a == "--resource")
			cfg.resource = need(i);
		else if (a == "--ttl")
			cfg.ttl = need(i);
		else if (a == "--wait")
			cfg.wait = need(i);
		else if (a == "--no-checkpoint")
			cfg.checkpoint = false;
		else if (a == "--out-md")
			cfg.out_md = need(i);
		else if (a == "--out-json")
			cfg.out_json = need(i);
		else if (a == "--title")
			cfg.title = need(i);
		else if (a == "--command")
			cfg.command = need(i);
		else if (a == "--meta")
		{
			std::string v = need(i);
			auto p = v.find('=');
			if (p == std::string::npos)
				die("--meta must be KEY=VALUE");
			cfg.meta.emplace_back(v.substr(0, p), v.substr(p + 1));
		}
		else if (a == "--note")
			cfg.notes.push_back(need(i));
		else if (a == "--wal-stats")
			cfg.wal_stats = true;
		else if (a == "--no-targets")
			cfg.targets_section = false;
		else
			usage();
	}
	if (cfg.targets.empty())
		usage();
	for (auto &t : cfg.targets)
	{
		t.session_sql = session_sql[t.name];
		session_sql.erase(t.name);
		t.description = descr[t.name];
		descr.erase(t.name);
	}
	if (!session_sql.empty())
		die("--session-sql for unknown target " + session_sql.begin()->first);
	if (!descr.empty())
		die("--describe for unknown target " + descr.begin()->first);
	return cfg;
}

const char *kind_name(Kind k) { return k == Kind::Lease ? "lease" : "advisory"; }

}	// namespace

int main(int argc, char **argv)
{
	Config cfg = parse(argc, argv);

	std::vector<TargetInfo> infos;
	try
	{
		for (const auto &t : cfg.targets)
			infos.push_back(describe(t));
	}
	catch (const std::exception &e)
	{
		die(e.what());
	}

	std::vector<RunResult> runs;
	const int nt = (int) cfg.targets.size();
	const int total = cfg.reps * nt;
	int n = 0;
	for (int rep = 1; rep <= cfg.reps; rep++)
	{
		for (int k = 0; k < nt; k++)
		{
			// round-robin, the first target rotating with the repetition
			const Target &t = cfg.targets[(k + rep - 1) % nt];
			if (n > 0 && cfg.pause_s > 0)
				std::this_thread::sleep_for(std::chrono::duration<double>(cfg.pause_s));
			n++;
			RunResult r;
			try
			{
				r = run_once(cfg, t, rep, k + 1);
			}
			catch (const std::exception &e)
			{
				die(e.what());
			}
			std::fprintf(stderr,
						 "handoff: [%d/%d] rep %d %-14s hand-offs/s %8.1f  p50 %9s us  p99 %9s us  "
						 "grants/s %8.1f  self %5.1f%%  max/min %s  timeouts %lld\n",
						 n, total, rep, t.name.c_str(), r.handoffs_per_s, fmt_auto(r.p50_us).c_str(),
						 fmt_auto(r.p99_us).c_str(), r.grants_per_s,
						 r.grants ? 100.0 * r.self_regrants / r.grants : 0.0, fmt_auto(r.fairness).c_str(),
						 r.timeouts);
			if (r.exclusion_violations || r.token_violations)
				std::fprintf(stderr, "handoff: WARNING %s: %lld overlapping critical sections, %lld token order violations\n",
							 t.name.c_str(), r.exclusion_violations, r.token_violations);
			runs.push_back(r);
		}
	}

	std::map<std::string, Summary> sums;
	for (const auto &t : cfg.targets)
		sums[t.name] = summarize(runs, t.name);

	// ---- markdown
	std::ostringstream md;
	const std::string rng = cfg.reps > 1 ? "median (min–max) over " + std::to_string(cfg.reps) + " runs" : "1 run";
	md << "# " << cfg.title << "\n\n";
	if (!cfg.command.empty())
		md << "- command: `" << cfg.command << "` (from the repository root)\n";
	for (const auto &m : cfg.meta)
		md << "- " << m.first << ": " << m.second << "\n";
	md << "- server: " << infos[0].server_version << "\n";
	md << "- scenario: " << cfg.clients << " client threads (one libpq connection each, prepared statements) contend for "
	   << "one resource `" << cfg.resource << "`; each loops acquire → hold " << cfg.hold_us << " µs ("
	   << (cfg.hold_spin ? "busy loop" : "sleep") << ") → release. Lease acquire: `ttl => '" << cfg.ttl
	   << "', wait => '" << cfg.wait << "', holder => 'client-N'`.\n";
	md << "- each run: " << fmt(cfg.warmup_s, 1) << " s warm-up (not counted), then " << fmt(cfg.duration_s, 1)
	   << " s measured; " << cfg.reps << " repetitions, systems interleaved round-robin, the first system rotating"
	   << (cfg.checkpoint ? "; CHECKPOINT before each run" : "") << "\n";
	md << "- hand-off: a grant to a client other than the previous holder; latency = return of the grant − return of the "
	   << "previous holder's release (steady_clock, one process). A negative latency means the grant reached its client "
	   << "before the release's own reply did.\n";
	md << "- fairness: max/min of grants per client within the measured window (∞ if a client got none)\n";
	md << "- runs table: CPU busy % of the whole machine over the window (/proc/stat; in brackets the part used by "
		  "this driver and the clients' backends — the rest is the clusters' background processes, kernel threads and other work) and the 1-minute load "
		  "average: the machine may be shared, and other work slows the WAL flush and the wake-ups\n";
	for (const auto &note : cfg.notes)
		md << "- " << note << "\n";
	md << "\n| system | what | settings |\n|---|---|---|\n";
	for (size_t i = 0; i < cfg.targets.size(); i++)
	{
		const auto &t = cfg.targets[i];
		std::string ss;
		for (const auto &s : t.session_sql)
			ss += "; session: `" + s + "`";
		md << "| " << t.name << " | " << (t.description.empty() ? kind_name(t.kind) : t.description) << " | "
		   << infos[i].settings << ss << " |\n";
	}

	md << "\n## Results (" << rng << ")\n\n";
	std::ostringstream table;
	table << "| system | hand-offs/s | hand-off p50 µs | hand-off p99 µs | max/min grants per client | grants/s | "
			 "self re-grants % | timeouts |\n";
	table << "|---|---:|---:|---:|---:|---:|---:|---:|\n";
	for (const auto &t : cfg.targets)
	{
		const Summary &s = sums[t.name];
		table << "| " << t.name << " | " << cell(s.handoffs_per_s) << " | " << cell(s.p50) << " | " << cell(s.p99)
			  << " | " << cell(s.fairness) << " | " << cell(s.grants_per_s) << " | " << cell(s.self_pct, false, 1) << " | "
			  << cell(s.timeouts, false, 0) << " |\n";
	}
	md << table.str();
	md << "\nThe same hand-offs timed from the *call* of the release (never negative; adds the release's round trip), "
		  "and how many hand-offs per run had a negative latency (grant reply before release reply):\n\n"
		  "| system | release call → grant p50 µs | release call → grant p99 µs | negative latencies per run |\n"
		  "|---|---:|---:|---:|\n";
	for (const auto &t : cfg.targets)
	{
		const Summary &s = sums[t.name];
		md << "| " << t.name << " | " << cell(s.call_p50) << " | " << cell(s.call_p99) << " | "
		   << cell(s.negative, false, 0) << " |\n";
	}
	if (cfg.wal_stats)
		md << "\nWAL flushes (pg_stat_wal over each whole run, warm-up and drain included; every process of the "
			  "cluster) and machine CPU over the measured window:\n\n| system | WAL fsyncs per grant | mean WAL fsync µs "
			  "| CPU busy % (machine) | of which this benchmark % |\n|---|---:|---:|---:|---:|\n";
	else
		md << "\nMachine CPU over the measured window (/proc/stat; \"this benchmark\" = the driver and its clients' "
			  "backends; the rest is the clusters' background processes, kernel I/O threads and any other work on the machine):\n\n| system | CPU busy % (machine) | of which this "
			  "benchmark % |\n|---|---:|---:|\n";
	for (const auto &t : cfg.targets)
	{
		const Summary &s = sums[t.name];
		md << "| " << t.name << " | ";
		if (cfg.wal_stats)
			md << cell(s.wal_syncs_per_grant) << " | " << cell(s.wal_sync_mean_us) << " | ";
		md << cell(s.cpu_busy, false, 0) << " | " << cell(s.own_cpu, false, 0) << " |\n";
	}

	// ratios of medians against the first lease target
	auto med = [&](const std::string &name) { return sums[name].handoffs_per_s.med; };
	md << "\nRatios of median hand-offs/s:";
	for (size_t i = 0; i < cfg.targets.size(); i++)
		for (size_t j = 0; j < cfg.targets.size(); j++)
			if (i < j)
			{
				double a = med(cfg.targets[i].name), b = med(cfg.targets[j].name);
				md << (i + j == 1 ? " " : "; ") << cfg.targets[i].name << " / " << cfg.targets[j].name << " = "
				   << (b > 0 ? fmt_auto(a / b) : std::string("∞"));
			}
	md << ".\n";

	// targets: the first target whose settings show pg_lease preloaded vs. the first lease target without
	std::string pre, nopre;
	for (size_t i = 0; i < cfg.targets.size(); i++)
	{
		if (cfg.targets[i].kind != Kind::Lease || !cfg.targets[i].session_sql.empty())
			continue;
		bool preloaded = infos[i].settings.find("shared_preload_libraries=pg_lease") != std::string::npos;
		if (preloaded && pre.empty())
			pre = cfg.targets[i].name;
		if (!preloaded && nopre.empty())
			nopre = cfg.targets[i].name;
	}
	std::ostringstream tj;	// json of the targets
	if (cfg.targets_section && !pre.empty())
	{
		const Summary &p = sums[pre];
		auto yes = [](bool b) { return b ? "**met**" : "**not met**"; };
		md << "\n## Targets (" << pre << " = preloaded" << (nopre.empty() ? "" : ", " + nopre + " = not preloaded")
		   << "; judged on the median, worst run in brackets)\n\n";
		md << "| target | measured | met |\n|---|---|---|\n";
		bool t1 = p.p50.med < 1000, t1w = p.p50.hi < 1000;
		bool t2 = p.p99.med < 5000, t2w = p.p99.hi < 5000;
		md << "| hand-off p50 < 1 ms | " << cell(p.p50) << " µs | " << yes(t1) << " (worst run: " << (t1w ? "met" : "not met") << ") |\n";
		md << "| hand-off p99 < 5 ms | " << cell(p.p99) << " µs | " << yes(t2) << " (worst run: " << (t2w ? "met" : "not met") << ") |\n";
		tj << "{\"preloaded\": " << json_str(pre) << ", \"p50_lt_1ms\": " << (t1 ? "true" : "false")
		   << ", \"p99_lt_5ms\": " << (t2 ? "true" : "false");
		if (!nopre.empty())
		{
			const Summary &q = sums[nopre];
			double ratio = q.handoffs_per_s.med > 0 ? p.handoffs_per_s.med / q.handoffs_per_s.med
				: std::numeric_limits<double>::infinity();
			double worst = q.handoffs_per_s.hi > 0 ? p.handoffs_per_s.lo / q.handoffs_per_s.hi
				: std::numeric_limits<double>::infinity();
			bool t3 = ratio >= 20;
			md << "| hand-offs/s ≥ 20× not preloaded | " << fmt_auto(p.handoffs_per_s.med) << " / "
			   << fmt_auto(q.handoffs_per_s.med) << " = " << fmt_auto(ratio) << "× (worst pairing "
			   << fmt_auto(worst) << "×) | " << yes(t3) << " |\n";
			tj << ", \"not_preloaded\": " << json_str(nopre) << ", \"handoff_ratio\": " << json_num(ratio)
			   << ", \"handoffs_ge_20x\": " << (t3 ? "true" : "false");
		}
		bool t4 = p.fairness.med < 1.5, t4w = p.fairness.hi < 1.5;
		md << "| max/min grants per client < 1.5 (" << fmt(cfg.duration_s, 0) << " s runs"
		   << (cfg.duration_s < 10 ? "; the target is for 10 s runs" : "") << ") | " << cell(p.fairness) << " | "
		   << yes(t4) << " (worst run: " << (t4w ? "met" : "not met") << ") |\n";
		tj << ", \"fairness_lt_1_5\": " << (t4 ? "true" : "false") << "}";
	}

	md << "\n## Runs\n\n| rep | # | system | hand-offs/s | p50 µs | p90 µs | p99 µs | max µs | negative | grants | "
		  "self | timeouts | CPU busy % (own) | load | grants per client |\n|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
	for (const auto &r : runs)
	{
		std::string pc;
		for (size_t i = 0; i < r.per_client.size(); i++)
			pc += (i ? " " : "") + std::to_string(r.per_client[i]);
		md << "| " << r.rep << " | " << r.order << " | " << r.target << " | " << fmt(r.handoffs_per_s, 1) << " | "
		   << fmt_auto(r.p50_us) << " | " << fmt_auto(r.p90_us) << " | " << fmt_auto(r.p99_us) << " | "
		   << fmt_auto(r.max_us) << " | " << r.negative_latencies << " | " << r.grants << " | " << r.self_regrants
		   << " | " << r.timeouts << " | " << fmt(r.cpu_busy_pct, 0) << " (" << fmt(r.own_cpu_pct, 0) << ") | " << fmt(r.loadavg1, 2) << " | " << pc << " |\n";
	}
	bool bad = false;
	for (const auto &t : cfg.targets)
	{
		const Summary &s = sums[t.name];
		if (s.exclusion_violations || s.token_violations || s.failed_releases)
		{
			bad = true;
			md << "\n**" << t.name << ": " << s.exclusion_violations << " overlapping critical sections, "
			   << s.token_violations << " token order violations, " << s.failed_releases << " releases returned false.**\n";
		}
	}
	if (!bad)
		md << "\nChecks: no overlapping critical sections, lease tokens strictly increasing in grant order, "
			  "every release returned true, the resource free after each run.\n";

	// ---- JSON
	std::ostringstream js;
	js << "{\n  \"title\": " << json_str(cfg.title) << ",\n  \"command\": " << json_str(cfg.command) << ",\n  \"meta\": {";
	for (size_t i = 0; i < cfg.meta.size(); i++)
		js << (i ? ", " : "") << json_str(cfg.meta[i].first) << ": " << json_str(cfg.meta[i].second);
	js << "},\n  \"server_version\": " << json_str(infos[0].server_version) << ",\n";
	js << "  \"config\": {\"clients\": " << cfg.clients << ", \"duration_s\": " << json_num(cfg.duration_s, 1)
	   << ", \"warmup_s\": " << json_num(cfg.warmup_s, 1) << ", \"reps\": " << cfg.reps << ", \"hold_us\": "
	   << cfg.hold_us << ", \"hold\": " << json_str(cfg.hold_spin ? "spin" : "sleep") << ", \"resource\": "
	   << json_str(cfg.resource) << ", \"ttl\": " << json_str(cfg.ttl) << ", \"wait\": " << json_str(cfg.wait)
	   << ", \"checkpoint_before_run\": " << (cfg.checkpoint ? "true" : "false") << "},\n";
	js << "  \"systems\": [\n";
	for (size_t i = 0; i < cfg.targets.size(); i++)
	{
		const auto &t = cfg.targets[i];
		const Summary &s = sums[t.name];
		js << "    {\"name\": " << json_str(t.name) << ", \"kind\": " << json_str(kind_name(t.kind))
		   << ", \"description\": " << json_str(t.description) << ", \"settings\": " << json_str(infos[i].settings)
		   << ", \"session_sql\": [";
		for (size_t j = 0; j < t.session_sql.size(); j++)
			js << (j ? ", " : "") << json_str(t.session_sql[j]);
		js << "],\n     \"handoffs_per_s\": " << json_agg(s.handoffs_per_s, 1)
		   << ",\n     \"handoff_p50_us\": " << json_agg(s.p50, 1) << ",\n     \"handoff_p90_us\": " << json_agg(s.p90, 1)
		   << ",\n     \"handoff_p99_us\": " << json_agg(s.p99, 1) << ",\n     \"handoff_max_us\": " << json_agg(s.max, 1)
		   << ",\n     \"handoff_from_release_call_p50_us\": " << json_agg(s.call_p50, 1)
		   << ",\n     \"handoff_from_release_call_p99_us\": " << json_agg(s.call_p99, 1)
		   << ",\n     \"negative_latencies_per_run\": " << json_agg(s.negative, 0)
		   << ",\n     \"wal_syncs_per_grant\": " << json_agg(s.wal_syncs_per_grant, 3)
		   << ",\n     \"wal_sync_mean_us\": " << json_agg(s.wal_sync_mean_us, 1)
		   << ",\n     \"cpu_busy_pct\": " << json_agg(s.cpu_busy, 1)
		   << ",\n     \"own_cpu_pct\": " << json_agg(s.own_cpu, 1)
		   << ",\n     \"fairness_max_min\": " << json_agg(s.fairness, 3)
		   << ",\n     \"grants_per_s\": " << json_agg(s.grants_per_s, 1)
		   << ",\n     \"self_regrant_pct\": " << json_agg(s.self_pct, 2)
		   << ",\n     \"timeouts\": " << json_agg(s.timeouts, 0)
		   << ",\n     \"exclusion_violations\": " << s.exclusion_violations
		   << ", \"token_violations\": " << s.token_violations << ", \"failed_releases\": " << s.failed_releases << "}"
		   << (i + 1 < cfg.targets.size() ? "," : "") << "\n";
	}
	js << "  ],\n";
	js << "  \"targets\": " << (tj.str().empty() ? "null" : tj.str()) << ",\n";
	js << "  \"runs\": [\n";
	for (size_t i = 0; i < runs.size(); i++)
	{
		const auto &r = runs[i];
		js << "    {\"system\": " << json_str(r.target) << ", \"rep\": " << r.rep << ", \"order\": " << r.order
		   << ", \"window_s\": " << json_num(r.window_s, 1) << ", \"grants\": " << r.grants << ", \"handoffs\": "
		   << r.handoffs << ", \"self_regrants\": " << r.self_regrants << ", \"timeouts\": " << r.timeouts
		   << ", \"handoffs_per_s\": " << json_num(r.handoffs_per_s, 1) << ", \"grants_per_s\": "
		   << json_num(r.grants_per_s, 1) << ", \"p50_us\": " << json_num(r.p50_us, 1) << ", \"p90_us\": "
		   << json_num(r.p90_us, 1) << ", \"p99_us\": " << json_num(r.p99_us, 1) << ", \"max_us\": "
		   << json_num(r.max_us, 1) << ", \"mean_us\": " << json_num(r.mean_us, 1)
		   << ", \"from_release_call_p50_us\": " << json_num(r.call_p50_us, 1)
		   << ", \"from_release_call_p99_us\": " << json_num(r.call_p99_us, 1) << ", \"negative_latencies\": "
		   << r.negative_latencies << ", \"fairness_max_min\": " << json_num(r.fairness, 3) << ", \"cpu_busy_pct\": " << json_num(r.cpu_busy_pct, 1)
		   << ", \"own_cpu_pct\": " << json_num(r.own_cpu_pct, 1)
		   << ", \"wal_syncs_per_grant\": " << json_num(r.wal_syncs_per_grant, 3)
		   << ", \"wal_sync_mean_us\": " << json_num(r.wal_sync_mean_us, 1) << ", \"loadavg1\": " << json_num(r.loadavg1, 2) << ", \"grants_per_client\": [";
		for (size_t j = 0; j < r.per_client.size(); j++)
			js << (j ? ", " : "") << r.per_client[j];
		js << "], \"exclusion_violations\": " << r.exclusion_violations << ", \"token_violations\": "
		   << r.token_violations << ", \"failed_releases\": " << r.failed_releases << "}"
		   << (i + 1 < runs.size() ? "," : "") << "\n";
	}
	js << "  ]\n}\n";

	if (!cfg.out_md.empty())
	{
		std::ofstream f(cfg.out_md);
		f << md.str();
		if (!f)
			die("cannot write " + cfg.out_md);
	}
	if (!cfg.out_json.empty())
	{
		std::ofstream f(cfg.out_json);
		f << js.str();
		if (!f)
			die("cannot write " + cfg.out_json);
	}
	std::cout << md.str();
	return bad ? 1 : 0;
}
