// lease_bench.cpp -- pg_lease against the locks people use instead of it.
//
// One process, one connection per client thread (libpq with prepared
// statements, or hiredis), every latency taken with std::chrono::steady_clock
// around one round trip.  Systems:
//
//   preload   pg_lease, shared_preload_libraries = 'pg_lease'
//   plain     pg_lease, not preloaded (waiters poll)
//   advisory  pg_advisory_lock / pg_advisory_unlock (no TTL, no fencing)
//   handmade  a hand-written lease table: INSERT ... ON CONFLICT DO UPDATE ...
//             WHERE expires_at < clock_timestamp(), UPDATE to release
//   redis     SET key val NX PX ttl, Lua compare-and-delete release; waiting
//             by retry after a random 50-250 ms (the redsync/Redlock client)
//   floor     one single-row synchronous UPDATE plus one SELECT 1 per pair:
//             the ceiling no durable lease can beat
//   floor2    the two-write floor (uncontended only, informational): the same
//             synchronous UPDATE, then a second UPDATE of the row committed
//             asynchronously -- the least a durable grant plus a release that
//             is itself a committed write (as pg_lease's is) costs in SQL
//   stmts     pg_lease's two writes as plain SQL (uncontended only,
//             informational): the UPDATE lease.acquire runs to take a released
//             row and the UPDATE lease.release runs, on bench_grants, a copy of
//             lease.grants with the same rows; no function around them
//
// Scenarios:
//   uncontended  acquire+release pairs on random resources of a large set
//   hot          one resource, competing clients: hand-offs/s, hand-off
//                latency (release return -> next grant's return), fairness
//   scale        the uncontended pair with 1k vs 1M resources in the table
//   renew        renewals of 1k held leases, round-robin
//
// Every repetition runs every (scenario, point, system) once; within a point
// the systems run round-robin with the first one rotating per repetition, so
// a slow minute of the (shared) machine hits every system alike.  The median
// and min-max over the repetitions are written as markdown, JSON and an SVG
// chart.  bench/run.sh starts the servers, fills the tables and calls this.
//
// Build: g++ -O2 -std=c++17 -pthread -I$(pg_config --includedir) lease_bench.cpp -lpq -lhiredis

#include <hiredis/hiredis.h>
#include <libpq-fe.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "procstat.hpp"

#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Micros = std::chrono::duration<double, std::micro>;

[[noreturn]] void die(const std::string &msg)
{
	std::cerr << "lease_bench: " << msg << std::endl;
	std::exit(2);
}

Clock::duration seconds_to_duration(double s)
{
	return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// ---- systems and configuration ------------------------------------------------------

enum class Kind { lease, advisory, handmade, floor, statements, redis };

struct System
{
	std::string key;	// short name used in JSON and on the command line
	std::string label;	// name in tables and the chart
	Kind kind;
	bool preload_cluster;	// which PostgreSQL cluster (not used by redis)
	std::string color;
	std::string what;
};

const std::vector<System> &all_systems()
{
	static const std::vector<System> systems = {
		{"preload", "pg_lease preloaded", Kind::lease, true, "#1f77b4",
		 "`lease.acquire(r, '30 s')` / `lease.release(r, token)`; waiting: `wait => '2 s'` (FIFO queue in shared memory)"},
		{"plain", "pg_lease not preloaded", Kind::lease, false, "#9ecae1",
		 "the same calls on a cluster without `shared_preload_libraries` (waiters poll every `lease.poll_interval` = 50 ms)"},
		{"advisory", "advisory lock", Kind::advisory, true, "#2ca02c",
		 "`pg_advisory_lock(key)` / `pg_advisory_unlock(key)`: in memory, no TTL, no token — the in-memory ceiling"},
		{"handmade", "handmade table", Kind::handmade, true, "#ff7f0e",
		 "`INSERT ... ON CONFLICT (resource) DO UPDATE ... WHERE expires_at < clock_timestamp() RETURNING token` "
		 "(token from a sequence), `UPDATE ... SET expires_at = clock_timestamp()` to release; default "
		 "`synchronous_commit`; waiting by retry after a random 50–250 ms"},
		{"redis", "Redis SET NX PX", Kind::redis, false, "#d62728",
		 "`SET key val NX PX 30000`, release by Lua compare-and-delete, renew by Lua compare-and-`PEXPIRE`; "
		 "waiting by retry after a random 50–250 ms (redsync/Redlock client); no persistence, TCP loopback"},
		{"floor", "durable floor", Kind::floor, true, "#7f7f7f",
		 "per pair: `UPDATE bench_floor SET n = n + 1 WHERE id = <client>` (synchronous commit) + `SELECT 1`"},
		{"floor2", "two-write floor", Kind::floor, true, "#bcbd22",
		 "per pair: the same synchronous `UPDATE`, then the same `UPDATE` with `set_config('synchronous_commit', "
		 "'off', true)` in a CTE (committed asynchronously, as pg_lease commits a release): the least two committed "
		 "writes per pair cost; uncontended only, informational"},
		{"stmts", "pg_lease's statements", Kind::statements, true, "#17becf",
		 "per pair: the `UPDATE` `lease.acquire` runs to take a released row (new token from a sequence, expiry, "
		 "holder; synchronous commit), then the `UPDATE` `lease.release` runs (committed asynchronously, through the "
		 "same CTE as the two-write floor), as plain statements on `bench_grants`, a copy of `lease.grants` with the "
		 "same 100k rows: pg_lease's two writes without the functions around them (argument checks, role switch, SPI, "
		 "subtransaction, wait-queue check); uncontended only, informational"},
	};
	return systems;
}

// the systems of the uncontended scenario, in table and chart order
const std::vector<std::string> &uncontended_systems()
{
	static const std::vector<std::string> keys = {"preload", "plain", "advisory", "handmade", "redis", "floor", "floor2", "stmts"};
	return keys;
}

const System &system_by_key(const std::string &key)
{
	for (const auto &s : all_systems())
		if (s.key == key)
			return s;
	die("unknown system " + key);
}

struct Config
{
	std::string pg_preload;		// libpq conninfo without dbname
	std::string pg_plain;
	std::string redis_host = "127.0.0.1";
	int redis_port = 64379;
	int reps = 5;
	double duration_s = 2.5;	// measured window of throughput runs
	double hot_duration_s = 5;	// measured window of hot-resource runs
	double warmup_s = 0.5;
	std::vector<int> client_counts = {1, 8, 32};
	int nres = 100000;			// resources of the uncontended runs
	int hot_clients = 8;
	int hold_us = 200;			// critical section of the hot runs (a sleep)
	int hot_wait_ms = 2000;		// wait of one acquire in the hot runs
	int retry_min_ms = 50;		// retry delay of the polling clients (redsync)
	int retry_max_ms = 250;
	int scale_clients = 1;
	int scale_small = 1000;
	int scale_large = 1000000;
	int renew_leases = 1000;
	int renew_clients = 8;
	std::vector<std::string> scenarios = {"uncontended", "hot", "scale", "renew"};
	std::vector<std::string> systems;	// empty: all (for profiling one system)
	double max_foreign_pct = 40;	// a run during which other processes used more is redone once
	int max_redos = 40;				// at most this many redone runs in all
	std::string mode = "full";
	std::string command;
	std::string out_md, out_json, out_svg;
	std::vector<std::pair<std::string, std::string>> meta;
	std::vector<std::string> notes;
};

// ---- small helpers --------------------------------------------------------------------

// linear interpolation between closest ranks; the input must be sorted
double percentile(const std::vector<double> &sorted, double p)
{
	if (sorted.empty())
		return NAN;
	double pos = p / 100.0 * (sorted.size() - 1);
	size_t lo = (size_t) pos;
	size_t hi = std::min(lo + 1, sorted.size() - 1);
	return sorted[lo] + (pos - lo) * (sorted[hi] - sorted[lo]);
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

// three significant digits for small numbers, none after the point for large ones
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

std::string json_num(double v)
{
	if (std::isnan(v) || std::isinf(v))
		return "null";
	char buf[64];
	std::snprintf(buf, sizeof buf, "%.6g", v);
	return buf;
}

std::string xml_escape(const std::string &s)
{
	std::string o;
	for (char ch : s)
	{
		switch (ch)
		{
			case '<': o += "&lt;"; break;
			case '>': o += "&gt;"; break;
			case '&': o += "&amp;"; break;
			case '"': o += "&quot;"; break;
			default: o += ch;
		}
	}
	return o;
}

// ---- sessions: one connection of one client thread --------------------------------------

// A lease session of any system.  Tokens are positive; 0 means "not granted".
class Session
{
public:
	virtual ~Session() = default;
	// one try, no waiting (advisory: blocks, as pg_advisory_lock does)
	virtual long long try_acquire(long long id, const std::string &name) = 0;
	// wait up to `wait` for the grant, the system's own way; a client-side
	// retry loop also stops at `give_up` (the end of the run)
	virtual long long acquire_wait(long long id, const std::string &name, std::chrono::milliseconds wait,
								   TimePoint give_up) = 0;
	virtual bool release(long long id, const std::string &name, long long token) = 0;
	virtual bool renew(const std::string &name, long long token) = 0;
	virtual int server_pid() const = 0;
};

struct PgResult
{
	PGresult *r = nullptr;
	explicit PgResult(PGresult *res) : r(res) {}
	~PgResult() { PQclear(r); }
	PgResult(const PgResult &) = delete;
	PgResult &operator=(const PgResult &) = delete;
};

class PgSession : public Session
{
public:
	PgSession(const std::string &conninfo, int client) : client_(client)
	{
		conn_ = PQconnectdb(conninfo.c_str());
		if (PQstatus(conn_) != CONNECTION_OK)
		{
			std::string msg = PQerrorMessage(conn_);
			PQfinish(conn_);
			conn_ = nullptr;
			throw std::runtime_error("connect (" + conninfo + "): " + msg);
		}
		holder_ = "client-" + std::to_string(client);
	}
	~PgSession() override { PQfinish(conn_); }
	int server_pid() const override { return PQbackendPID(conn_); }

protected:
	void prepare(const char *name, const char *sql, int nparams)
	{
		PgResult r(PQprepare(conn_, name, sql, nparams, nullptr));
		if (PQresultStatus(r.r) != PGRES_COMMAND_OK)
			throw std::runtime_error(std::string("prepare ") + name + ": " + PQresultErrorMessage(r.r));
	}
	// the token a grant statement returned, or 0 for no row or NULL (not granted)
	static long long token_of(PGresult *res)
	{
		PgResult r(res);
		if (PQntuples(r.r) != 1 || PQgetisnull(r.r, 0, 0))
			return 0;
		return std::strtoll(PQgetvalue(r.r, 0, 0), nullptr, 10);
	}
	// run a prepared statement; an error of the server is an error of the benchmark
	PGresult *exec(const char *name, int n, const char *const *vals)
	{
		PGresult *r = PQexecPrepared(conn_, name, n, vals, nullptr, nullptr, 0);
		ExecStatusType st = PQresultStatus(r);
		if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK)
		{
			std::string msg = std::string(name) + ": " + PQresultErrorMessage(r);
			PQclear(r);
			throw std::runtime_error(msg);
		}
		return r;
	}
	PGconn *conn_ = nullptr;
	int client_;
	std::string holder_;
};

const char *const kTtl = "30 s";

class LeaseSession : public PgSession
{
public:
	LeaseSession(const std::string &conninfo, int client) : PgSession(conninfo, client)
	{
		prepare("acq", "SELECT lease.acquire($1::text, $2::interval, $3::interval, $4::text)", 4);
		prepare("rel", "SELECT lease.release($1::text, $2::int8)", 2);
		prepare("renew", "SELECT lease.renew($1::text, $2::int8, $3::interval)", 3);
	}
	long long try_acquire(long long, const std::string &name) override
	{
		// holder NULL: the per-session default label, as a plain caller gets
		const char *vals[4] = {name.c_str(), kTtl, "0", nullptr};
		return token_of(exec("acq", 4, vals));
	}
	long long acquire_wait(long long, const std::string &name, std::chrono::milliseconds wait, TimePoint) override
	{
		const std::string w = std::to_string(wait.count()) + " ms";
		const char *vals[4] = {name.c_str(), kTtl, w.c_str(), holder_.c_str()};
		return token_of(exec("acq", 4, vals));
	}
	bool release(long long, const std::string &name, long long token) override
	{
		const std::string t = std::to_string(token);
		const char *vals[2] = {name.c_str(), t.c_str()};
		PgResult r(exec("rel", 2, vals));
		return std::strcmp(PQgetvalue(r.r, 0, 0), "t") == 0;
	}
	bool renew(const std::string &name, long long token) override
	{
		const std::string t = std::to_string(token);
		const char *vals[3] = {name.c_str(), t.c_str(), "1 h"};
		PgResult r(exec("renew", 3, vals));
		return std::strcmp(PQgetvalue(r.r, 0, 0), "t") == 0;
	}
};

class AdvisorySession : public PgSession
{
public:
	AdvisorySession(const std::string &conninfo, int client) : PgSession(conninfo, client)
	{
		prepare("acq", "SELECT pg_advisory_lock($1::int8)", 1);
		prepare("rel", "SELECT pg_advisory_unlock($1::int8)", 1);
	}
	long long try_acquire(long long id, const std::string &) override
	{
		const std::string k = std::to_string(id);
		const char *vals[1] = {k.c_str()};
		PgResult r(exec("acq", 1, vals));
		return 1;
	}
	// pg_advisory_lock queues in the lock manager; it has no timeout of its own
	long long acquire_wait(long long id, const std::string &name, std::chrono::milliseconds, TimePoint) override
	{
		return try_acquire(id, name);
	}
	bool release(long long id, const std::string &, long long) override
	{
		const std::string k = std::to_string(id);
		const char *vals[1] = {k.c_str()};
		PgResult r(exec("rel", 1, vals));
		return std::strcmp(PQgetvalue(r.r, 0, 0), "t") == 0;
	}
	bool renew(const std::string &, long long) override
	{
		throw std::runtime_error("advisory locks have no TTL to renew");
	}
};

// Retry waiting of the polling clients: a random 50-250 ms between tries.
class RetryWait
{
public:
	RetryWait(int min_ms, int max_ms, unsigned seed) : rng_(seed), dist_(min_ms, max_ms) {}
	template <typename Try>
	long long run(std::chrono::milliseconds wait, TimePoint give_up, Try try_once)
	{
		const TimePoint deadline = std::min(Clock::now() + wait, give_up);
		for (;;)
		{
			long long token = try_once();
			if (token != 0)
				return token;
			auto delay = std::chrono::milliseconds(dist_(rng_));
			if (Clock::now() + delay > deadline)
			{
				// no try left within the wait: give up at its end, as a waiting call would
				std::this_thread::sleep_until(deadline);
				return 0;
			}
			std::this_thread::sleep_for(delay);
		}
	}

private:
	std::mt19937 rng_;
	std::uniform_int_distribution<int> dist_;
};

class HandmadeSession : public PgSession
{
public:
	HandmadeSession(const std::string &conninfo, int client, const Config &cfg)
		: PgSession(conninfo, client), retry_(cfg.retry_min_ms, cfg.retry_max_ms, 7919u * (client + 1))
	{
		// what users write themselves: the upsert takes a free or expired row;
		// the token comes from a sequence, so it grows with every grant
		prepare("acq",
				"INSERT INTO handmade_lease AS l (resource, token, holder, expires_at)"
				" VALUES ($1::text, nextval('handmade_seq'), $2::text, clock_timestamp() + $3::interval)"
				" ON CONFLICT (resource) DO UPDATE"
				"   SET token = excluded.token, holder = excluded.holder, expires_at = excluded.expires_at"
				"   WHERE l.expires_at < clock_timestamp()"
				" RETURNING token",
				3);
		prepare("rel",
				"UPDATE handmade_lease SET expires_at = clock_timestamp()"
				" WHERE resource = $1::text AND token = $2::int8",
				2);
		prepare("renew",
				"UPDATE handmade_lease SET expires_at = clock_timestamp() + $3::interval"
				" WHERE resource = $1::text AND token = $2::int8 AND expires_at > clock_timestamp()",
				3);
	}
	long long try_acquire(long long, const std::string &name) override
	{
		const char *vals[3] = {name.c_str(), holder_.c_str(), kTtl};
		return token_of(exec("acq", 3, vals));
	}
	long long acquire_wait(long long id, const std::string &name, std::chrono::milliseconds wait,
						   TimePoint give_up) override
	{
		return retry_.run(wait, give_up, [&] { return try_acquire(id, name); });
	}
	bool release(long long, const std::string &name, long long token) override
	{
		const std::string t = std::to_string(token);
		const char *vals[2] = {name.c_str(), t.c_str()};
		PgResult r(exec("rel", 2, vals));
		return std::strcmp(PQcmdTuples(r.r), "1") == 0;
	}
	bool renew(const std::string &name, long long token) override
	{
		const std::string t = std::to_string(token);
		const char *vals[3] = {name.c_str(), t.c_str(), "1 h"};
		PgResult r(exec("renew", 3, vals));
		return std::strcmp(PQcmdTuples(r.r), "1") == 0;
	}

private:
	RetryWait retry_;
};

// Not a lease: the cheapest durable round trip plus one more round trip, which
// is a read (floor) or a second, asynchronously committed write (floor2).
class FloorSession : public PgSession
{
public:
	FloorSession(const std::string &conninfo, int client, bool second_write)
		: PgSession(conninfo, client), second_write_(second_write)
	{
		prepare("upd", "UPDATE bench_floor SET n = n + 1 WHERE id = $1::int4", 1);
		prepare("sel", "SELECT 1", 0);
		prepare("upd_async",
				"WITH async AS (SELECT set_config('synchronous_commit', 'off', true))"
				" UPDATE bench_floor SET n = n + 1 FROM async WHERE id = $1::int4",
				1);
		row_ = std::to_string(client);
	}
	long long try_acquire(long long, const std::string &) override
	{
		const char *vals[1] = {row_.c_str()};
		PgResult r(exec("upd", 1, vals));
		if (std::strcmp(PQcmdTuples(r.r), "1") != 0)
			throw std::runtime_error("bench_floor has no row " + row_);
		return 1;
	}
	long long acquire_wait(long long id, const std::string &name, std::chrono::milliseconds, TimePoint) override
	{
		return try_acquire(id, name);
	}
	bool release(long long, const std::string &, long long) override
	{
		if (!second_write_)
		{
			PgResult r(exec("sel", 0, nullptr));
			return true;
		}
		const char *vals[1] = {row_.c_str()};
		PgResult r(exec("upd_async", 1, vals));
		if (std::strcmp(PQcmdTuples(r.r), "1") != 0)
			throw std::runtime_error("bench_floor has no row " + row_);
		return true;
	}
	bool renew(const std::string &, long long) override
	{
		throw std::runtime_error("the durable floor has nothing to renew");
	}

private:
	bool second_write_;
	std::string row_;
};

// Not a lease either: the two statements pg_lease runs for an uncontended pair,
// sent as plain SQL, on a copy of its table.
class StatementsSession : public PgSession
{
public:
	StatementsSession(const std::string &conninfo, int client) : PgSession(conninfo, client)
	{
		prepare("take",
				"UPDATE bench_grants SET token = nextval('bench_grants_seq'),"
				"       expires_at = clock_timestamp() + $2::interval, granted_at = clock_timestamp(),"
				"       renewed_at = clock_timestamp(), owner = 10, released = false,"
				"       backend_pid = NULL, backend_start = NULL, holder = $3::text"
				" WHERE resource = $1::text AND released AND expires_at <= clock_timestamp()"
				" RETURNING token",
				3);
		prepare("rel",
				"WITH async AS (SELECT set_config('synchronous_commit', 'off', true))"
				" UPDATE bench_grants SET expires_at = clock_timestamp(), released = true FROM async"
				" WHERE resource = $1::text AND token = $2::int8 AND expires_at > clock_timestamp()"
				" RETURNING token",
				2);
		// as long as pg_lease's per-session default holder label
		holder_ = "pid " + std::to_string(server_pid()) + " started 2026-12-03 00:00:00.000000+00";
	}
	long long try_acquire(long long, const std::string &name) override
	{
		const char *vals[3] = {name.c_str(), kTtl, holder_.c_str()};
		return token_of(exec("take", 3, vals));
	}
	long long acquire_wait(long long id, const std::string &name, std::chrono::milliseconds, TimePoint) override
	{
		return try_acquire(id, name);
	}
	bool release(long long, const std::string &name, long long token) override
	{
		const std::string t = std::to_string(token);
		const char *vals[2] = {name.c_str(), t.c_str()};
		PgResult r(exec("rel", 2, vals));
		return PQntuples(r.r) == 1;
	}
	bool renew(const std::string &, long long) override
	{
		throw std::runtime_error("pg_lease's statements are measured for uncontended pairs only");
	}
};

struct RedisReply
{
	redisReply *r = nullptr;
	explicit RedisReply(void *reply) : r(static_cast<redisReply *>(reply)) {}
	~RedisReply()
	{
		if (r)
			freeReplyObject(r);
	}
	RedisReply(const RedisReply &) = delete;
	RedisReply &operator=(const RedisReply &) = delete;
};

// Release and renew only if the value is still ours (the Redlock release script).
const char *const kRedisRelease =
	"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
const char *const kRedisRenew =
	"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";

class RedisSession : public Session
{
public:
	RedisSession(const Config &cfg, int db, int client)
		: retry_(cfg.retry_min_ms, cfg.retry_max_ms, 104729u * (client + 1))
	{
		struct timeval tv = {5, 0};
		ctx_ = redisConnectWithTimeout(cfg.redis_host.c_str(), cfg.redis_port, tv);
		if (ctx_ == nullptr || ctx_->err)
		{
			std::string msg = ctx_ ? ctx_->errstr : "out of memory";
			if (ctx_)
				redisFree(ctx_);
			ctx_ = nullptr;
			throw std::runtime_error("redis connect " + cfg.redis_host + ":" + std::to_string(cfg.redis_port) + ": " + msg);
		}
		command_ok(RedisReply(redisCommand(ctx_, "SELECT %d", db)), "SELECT");
		release_sha_ = load_script(kRedisRelease);
		renew_sha_ = load_script(kRedisRenew);
		// a value no other client can have: client number and a counter
		prefix_ = "client-" + std::to_string(client) + "/";
		RedisReply info(redisCommand(ctx_, "INFO server"));
		if (info.r && info.r->type == REDIS_REPLY_STRING)
		{
			const char *p = std::strstr(info.r->str, "process_id:");
			if (p)
				pid_ = std::atoi(p + std::strlen("process_id:"));
		}
	}
	~RedisSession() override
	{
		if (ctx_)
			redisFree(ctx_);
	}
	int server_pid() const override { return pid_; }

	long long try_acquire(long long, const std::string &name) override
	{
		long long token = ++counter_;
		const std::string val = prefix_ + std::to_string(token);
		RedisReply r(redisCommand(ctx_, "SET %s %s NX PX %d", name.c_str(), val.c_str(), 30000));
		check(r, "SET NX");
		if (r.r->type == REDIS_REPLY_NIL)
			return 0;
		if (r.r->type != REDIS_REPLY_STATUS || std::strcmp(r.r->str, "OK") != 0)
			throw std::runtime_error("SET NX: unexpected reply");
		return token;
	}
	long long acquire_wait(long long id, const std::string &name, std::chrono::milliseconds wait,
						   TimePoint give_up) override
	{
		return retry_.run(wait, give_up, [&] { return try_acquire(id, name); });
	}
	bool release(long long, const std::string &name, long long token) override
	{
		const std::string val = prefix_ + std::to_string(token);
		RedisReply r(redisCommand(ctx_, "EVALSHA %s 1 %s %s", release_sha_.c_str(), name.c_str(), val.c_str()));
		check(r, "EVALSHA release");
		return r.r->type == REDIS_REPLY_INTEGER && r.r->integer == 1;
	}
	bool renew(const std::string &name, long long token) override
	{
		const std::string val = prefix_ + std::to_string(token);
		RedisReply r(redisCommand(ctx_, "EVALSHA %s 1 %s %s %d", renew_sha_.c_str(), name.c_str(), val.c_str(),
								  3600000));
		check(r, "EVALSHA renew");
		return r.r->type == REDIS_REPLY_INTEGER && r.r->integer == 1;
	}
	// renew needs the value of a lease acquired by another session
	void adopt(const std::string &prefix) { prefix_ = prefix; }

private:
	void check(const RedisReply &r, const char *what)
	{
		if (r.r == nullptr)
			throw std::runtime_error(std::string("redis ") + what + ": " + ctx_->errstr);
		if (r.r->type == REDIS_REPLY_ERROR)
			throw std::runtime_error(std::string("redis ") + what + ": " + r.r->str);
	}
	void command_ok(const RedisReply &r, const char *what) { check(r, what); }
	std::string load_script(const char *script)
	{
		RedisReply r(redisCommand(ctx_, "SCRIPT LOAD %s", script));
		check(r, "SCRIPT LOAD");
		return std::string(r.r->str, r.r->len);
	}

	redisContext *ctx_ = nullptr;
	RetryWait retry_;
	std::string prefix_, release_sha_, renew_sha_;
	long long counter_ = 0;
	int pid_ = 0;
};

// Where a run connects: PostgreSQL database, or Redis logical database.
struct Place
{
	std::string pg_db = "bench";
	int redis_db = 0;
};

std::unique_ptr<Session> open_session(const Config &cfg, const System &sys, const Place &place, int client)
{
	const std::string conninfo = (sys.preload_cluster ? cfg.pg_preload : cfg.pg_plain) + " dbname=" +
		place.pg_db + " application_name=lease_bench";
	switch (sys.kind)
	{
		case Kind::lease: return std::make_unique<LeaseSession>(conninfo, client);
		case Kind::advisory: return std::make_unique<AdvisorySession>(conninfo, client);
		case Kind::handmade: return std::make_unique<HandmadeSession>(conninfo, client, cfg);
		case Kind::floor: return std::make_unique<FloorSession>(conninfo, client, sys.key == "floor2");
		case Kind::statements: return std::make_unique<StatementsSession>(conninfo, client);
		case Kind::redis: return std::make_unique<RedisSession>(cfg, place.redis_db, client);
	}
	throw std::logic_error("kind");
}

// every client's session, opened in parallel (a backend start costs a few ms)
std::vector<std::unique_ptr<Session>> open_sessions(const Config &cfg, const System &sys, const Place &place, int n)
{
	std::vector<std::unique_ptr<Session>> sessions(n);
	std::vector<std::string> errors(n);
	std::vector<std::thread> threads;
	for (int i = 0; i < n; i++)
		threads.emplace_back([&, i] {
			try
			{
				sessions[i] = open_session(cfg, sys, place, i);
			}
			catch (const std::exception &e)
			{
				errors[i] = e.what();
			}
		});
	for (auto &t : threads)
		t.join();
	for (const auto &e : errors)
		if (!e.empty())
			throw std::runtime_error(sys.key + ": " + e);
	return sessions;
}

// ---- one run ---------------------------------------------------------------------------------

using Metrics = std::map<std::string, double>;

// Machine load over a measured window: whole-machine CPU busy (every process,
// the other engineers' tests included) and the part of this benchmark (the
// driver, its clients' backends, the Redis server).  Per operation: the CPU of
// the server processes (backends or Redis, user + kernel, the WAL flush they
// do themselves included) and, for PostgreSQL, the WAL the cluster wrote.
class LoadProbe
{
public:
	LoadProbe(std::vector<int> server_pids, const std::string &wal_conninfo)
		: servers_(std::move(server_pids)), self_(getpid())
	{
		if (!wal_conninfo.empty())
		{
			wal_ = PQconnectdb(wal_conninfo.c_str());
			if (PQstatus(wal_) != CONNECTION_OK)
			{
				std::string msg = PQerrorMessage(wal_);
				PQfinish(wal_);
				wal_ = nullptr;
				throw std::runtime_error("connect for WAL positions: " + msg);
			}
		}
	}
	~LoadProbe() { PQfinish(wal_); }
	LoadProbe(const LoadProbe &) = delete;
	LoadProbe &operator=(const LoadProbe &) = delete;

	void begin()
	{
		have0_ = cpu_jiffies(b0_, t0_);
		s0_ = jiffies(servers_);
		d0_ = proc_jiffies(self_);
		if (wal_)
			lsn0_ = scalar("SELECT pg_current_wal_insert_lsn()");
	}
	// at the end of the window
	void end(Metrics &m)
	{
		unsigned long long b1 = 0, t1 = 0;
		bool have1 = cpu_jiffies(b1, t1);
		server_ticks_ = jiffies(servers_) - s0_;
		driver_ticks_ = proc_jiffies(self_) - d0_;
		if (have0_ && have1 && t1 > t0_)
		{
			m["cpu_busy_pct"] = 100.0 * (b1 - b0_) / (t1 - t0_);
			m["own_cpu_pct"] = 100.0 * (server_ticks_ + driver_ticks_) / (t1 - t0_);
		}
		m["loadavg1"] = loadavg1();
		if (wal_)
			wal_bytes_ = std::strtod(
				scalar("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '" + lsn0_ + "')").c_str(), nullptr);
	}
	// ops: the operations counted in the window (pairs, grants, renewals)
	void per_op(Metrics &m, long long ops) const
	{
		if (ops <= 0)
			return;
		const double us_per_tick = 1e6 / sysconf(_SC_CLK_TCK);
		m["server_cpu_us_per_op"] = server_ticks_ * us_per_tick / ops;
		m["client_cpu_us_per_op"] = driver_ticks_ * us_per_tick / ops;
		if (wal_)
			m["wal_bytes_per_op"] = wal_bytes_ / ops;
	}

private:
	static unsigned long long jiffies(const std::vector<int> &pids)
	{
		unsigned long long j = 0;
		for (int p : pids)
			j += proc_jiffies(p);
		return j;
	}
	std::string scalar(const std::string &q)
	{
		PgResult r(PQexec(wal_, q.c_str()));
		if (PQresultStatus(r.r) != PGRES_TUPLES_OK || PQntuples(r.r) != 1)
			throw std::runtime_error("WAL position: " + std::string(PQresultErrorMessage(r.r)));
		return PQgetvalue(r.r, 0, 0);
	}
	std::vector<int> servers_;
	int self_;
	PGconn *wal_ = nullptr;
	std::string lsn0_;
	unsigned long long b0_ = 0, t0_ = 0, s0_ = 0, d0_ = 0;
	unsigned long long server_ticks_ = 0, driver_ticks_ = 0;
	double wal_bytes_ = 0;
	bool have0_ = false;
};

// the cluster a PostgreSQL system runs on, for WAL positions; "" for Redis
std::string wal_conninfo(const Config &cfg, const System &sys)
{
	if (sys.kind == Kind::redis)
		return "";
	return (sys.preload_cluster ? cfg.pg_preload : cfg.pg_plain) + " dbname=postgres application_name=lease_bench_probe";
}

std::vector<int> server_pids(const std::vector<std::unique_ptr<Session>> &sessions)
{
	std::vector<int> pids;
	for (const auto &s : sessions)
		if (std::find(pids.begin(), pids.end(), s->server_pid()) == pids.end())
			pids.push_back(s->server_pid());
	return pids;
}

// Collects the first error of any client thread.
class Failure
{
public:
	void set(const std::string &msg)
	{
		std::lock_guard<std::mutex> g(mu_);
		if (msg_.empty())
			msg_ = msg;
		failed_ = true;
	}
	bool failed() const { return failed_; }
	void rethrow(const std::string &where) const
	{
		if (failed_)
			throw std::runtime_error(where + ": " + msg_);
	}

private:
	std::mutex mu_;
	std::string msg_;
	std::atomic<bool> failed_{false};
};

struct Window
{
	TimePoint start, begin, end;
	Window(double warmup_s, double duration_s)
	{
		// start a little in the future so that every thread waits at the line
		start = Clock::now() + std::chrono::milliseconds(20);
		begin = start + seconds_to_duration(warmup_s);
		end = begin + seconds_to_duration(duration_s);
	}
	bool contains(TimePoint t) const { return t >= begin && t < end; }
};

void add_latencies(Metrics &m, const std::string &name, std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	m[name + "_p50_us"] = percentile(v, 50);
	m[name + "_p99_us"] = percentile(v, 99);
	m[name + "_max_us"] = v.empty() ? NAN : v.back();
}

// Acquire+release pairs on random resources of [1, nres] named prefix + id.
// A pair counts in the window its release returned in.
Metrics run_pairs(const Config &cfg, const System &sys, const Place &place, int clients,
				  const std::string &prefix, long long nres)
{
	auto sessions = open_sessions(cfg, sys, place, clients);
	Failure failure;
	Window w(cfg.warmup_s, cfg.duration_s);
	struct PerClient
	{
		std::vector<double> acq, rel;
		long long pairs = 0, busy = 0, failed_releases = 0;
	};
	std::vector<PerClient> per(clients);
	std::vector<std::thread> threads;
	for (int i = 0; i < clients; i++)
		threads.emplace_back([&, i] {
			Session &s = *sessions[i];
			PerClient &pc = per[i];
			pc.acq.reserve(1 << 14);
			pc.rel.reserve(1 << 14);
			std::mt19937_64 rng(0x9e3779b97f4a7c15ULL * (i + 1) + nres);
			std::uniform_int_distribution<long long> pick(1, nres);
			std::this_thread::sleep_until(w.start);
			try
			{
				while (!failure.failed())
				{
					TimePoint t0 = Clock::now();
					if (t0 >= w.end)
						break;
					long long id = pick(rng);
					std::string name = prefix + std::to_string(id);
					long long token = s.try_acquire(id, name);
					TimePoint t1 = Clock::now();
					if (token == 0)
					{
						// another client holds it (rare: few clients, many resources)
						if (w.contains(t1))
							pc.busy++;
						continue;
					}
					bool ok = s.release(id, name, token);
					TimePoint t2 = Clock::now();
					if (!w.contains(t2))
						continue;
					if (!ok)
						pc.failed_releases++;
					pc.pairs++;
					pc.acq.push_back(Micros(t1 - t0).count());
					pc.rel.push_back(Micros(t2 - t1).count());
				}
			}
			catch (const std::exception &e)
			{
				failure.set("client " + std::to_string(i) + ": " + e.what());
				sessions[i].reset();	// an advisory lock it held goes with its session
			}
		});
	LoadProbe load(server_pids(sessions), wal_conninfo(cfg, sys));
	std::this_thread::sleep_until(w.begin);
	load.begin();
	std::this_thread::sleep_until(w.end);
	Metrics m;
	load.end(m);
	for (auto &t : threads)
		t.join();
	failure.rethrow(sys.key);

	std::vector<double> acq, rel;
	long long pairs = 0, busy = 0, failed = 0;
	for (auto &pc : per)
	{
		acq.insert(acq.end(), pc.acq.begin(), pc.acq.end());
		rel.insert(rel.end(), pc.rel.begin(), pc.rel.end());
		pairs += pc.pairs;
		busy += pc.busy;
		failed += pc.failed_releases;
	}
	if (failed > 0)
		throw std::runtime_error(sys.key + ": " + std::to_string(failed) + " releases of a granted lease failed");
	load.per_op(m, pairs);
	m["pairs_per_s"] = pairs / cfg.duration_s;
	m["busy"] = (double) busy;
	add_latencies(m, "acquire", std::move(acq));
	add_latencies(m, "release", std::move(rel));
	return m;
}

// One resource, competing clients, each looping acquire (waiting) -> hold -> release.
Metrics run_hot(const Config &cfg, const System &sys, const Place &place, const std::string &name)
{
	const int clients = cfg.hot_clients;
	auto sessions = open_sessions(cfg, sys, place, clients);
	Failure failure;
	Window w(cfg.warmup_s, cfg.hot_duration_s);
	const long long id = 0;	// the advisory key of the hot resource

	// Grant returns are totally ordered by the lock itself, so each grant takes
	// the next slot of a shared log when it returns; its release fills in the
	// release's return later.
	struct Grant
	{
		int client;
		TimePoint granted;
		TimePoint released;
		bool has_release = false;
		long long token;
	};
	std::mutex log_mu;
	std::vector<Grant> log;
	log.reserve(1 << 16);
	std::atomic<int> inside{0};
	std::atomic<long long> exclusion_violations{0};
	std::vector<long long> timeouts(clients, 0);
	const auto hold = std::chrono::microseconds(cfg.hold_us);
	const auto wait = std::chrono::milliseconds(cfg.hot_wait_ms);

	std::vector<std::thread> threads;
	for (int i = 0; i < clients; i++)
		threads.emplace_back([&, i] {
			Session &s = *sessions[i];
			std::this_thread::sleep_until(w.start);
			try
			{
				while (!failure.failed() && Clock::now() < w.end)
				{
					// retry loops stop soon after the window; server-side waits end by grants
					long long token = s.acquire_wait(id, name, wait, w.end + std::chrono::milliseconds(50));
					TimePoint t_acq = Clock::now();
					if (token == 0)
					{
						if (w.contains(t_acq))
							timeouts[i]++;
						continue;
					}
					if (inside.fetch_add(1) != 0)
						exclusion_violations++;
					size_t idx;
					{
						std::lock_guard<std::mutex> g(log_mu);
						idx = log.size();
						log.push_back(Grant{i, t_acq, TimePoint{}, false, token});
					}
					// the critical section sleeps rather than spins: on 2 CPUs a spinning
					// holder starves the thread that has just released, and the lock
					// then ping-pongs between two clients, a scheduling artefact
					std::this_thread::sleep_for(hold);
					inside.fetch_sub(1);
					bool ok = s.release(id, name, token);
					TimePoint t_rel = Clock::now();
					if (!ok)
						throw std::runtime_error("release of a granted lease failed");
					std::lock_guard<std::mutex> g(log_mu);
					log[idx].released = t_rel;
					log[idx].has_release = true;
				}
			}
			catch (const std::exception &e)
			{
				failure.set("client " + std::to_string(i) + ": " + e.what());
				sessions[i].reset();
			}
		});
	LoadProbe load(server_pids(sessions), wal_conninfo(cfg, sys));
	std::this_thread::sleep_until(w.begin);
	load.begin();
	std::this_thread::sleep_until(w.end);
	Metrics m;
	load.end(m);
	for (auto &t : threads)
		t.join();
	failure.rethrow(sys.key);

	std::vector<long long> per_client(clients, 0);
	std::vector<double> lat;
	long long grants = 0, handoffs = 0, self = 0, token_violations = 0;
	for (size_t k = 0; k < log.size(); k++)
	{
		const Grant &g = log[k];
		if (k > 0 && sys.kind != Kind::advisory && sys.kind != Kind::redis && g.token <= log[k - 1].token)
			token_violations++;
		if (!w.contains(g.granted))
			continue;
		grants++;
		per_client[g.client]++;
		if (k == 0)
			continue;
		const Grant &prev = log[k - 1];
		if (prev.client == g.client)
		{
			self++;
			continue;
		}
		if (!prev.has_release)
			throw std::runtime_error(sys.key + ": a grant followed a grant that was never released");
		handoffs++;
		// negative when the next holder's grant returned before the release's own reply
		lat.push_back(Micros(g.granted - prev.released).count());
	}
	// A hand-written lease may hand out a lower token after a higher one (its
	// nextval() is drawn before the upsert waits for the row): recorded, as a
	// finding.  In pg_lease it would be a bug.
	if (exclusion_violations > 0 || (token_violations > 0 && sys.kind != Kind::handmade))
		throw std::runtime_error(sys.key + ": " + std::to_string(exclusion_violations.load()) +
								 " overlapping grants, " + std::to_string(token_violations) +
								 " tokens not increasing");
	if (sys.kind == Kind::lease || sys.kind == Kind::handmade)
		m["token_regressions"] = (double) token_violations;
	long long to = 0;
	for (auto v : timeouts)
		to += v;
	long long mx = *std::max_element(per_client.begin(), per_client.end());
	long long mn = *std::min_element(per_client.begin(), per_client.end());
	load.per_op(m, grants);
	m["handoffs_per_s"] = handoffs / cfg.hot_duration_s;
	m["grants_per_s"] = grants / cfg.hot_duration_s;
	m["self_regrant_pct"] = grants ? 100.0 * self / grants : NAN;
	m["fairness"] = mn > 0 ? (double) mx / mn : std::numeric_limits<double>::infinity();
	m["timeouts"] = (double) to;
	m["handoffs"] = (double) handoffs;
	add_latencies(m, "handoff", std::move(lat));
	return m;
}

// Leases held for the renew runs: name and token, acquired once per system.
struct HeldLeases
{
	std::vector<std::string> names;
	std::vector<long long> tokens;
	std::string redis_prefix;	// the value prefix of the Redis session that took them
};

HeldLeases hold_leases(const Config &cfg, const System &sys, const Place &place)
{
	HeldLeases h;
	// one session takes them all; the renewing sessions act for it (same role; Redis: same value)
	auto s = open_session(cfg, sys, place, 1000);
	for (int i = 0; i < cfg.renew_leases; i++)
	{
		std::string name = "renew/" + std::to_string(i);
		long long token = s->try_acquire(i, name);
		if (token == 0)
			throw std::runtime_error(sys.key + ": could not take " + name + " for the renew runs (held by someone?)");
		h.names.push_back(name);
		h.tokens.push_back(token);
		// renew right away with the long TTL, so the grant outlasts the run
		if (!s->renew(name, token))
			throw std::runtime_error(sys.key + ": first renew of " + name + " failed");
	}
	if (sys.kind == Kind::redis)
		h.redis_prefix = "client-1000/";
	return h;
}

void release_leases(const Config &cfg, const System &sys, const Place &place, const HeldLeases &h)
{
	auto s = open_session(cfg, sys, place, 1000);
	for (size_t i = 0; i < h.names.size(); i++)
		if (!s->release((long long) i, h.names[i], h.tokens[i]))
			throw std::runtime_error(sys.key + ": release of " + h.names[i] + " after the renew runs failed");
}

// Renewals of held leases: client c renews leases c, c + C, c + 2C, ... in turn.
Metrics run_renew(const Config &cfg, const System &sys, const Place &place, const HeldLeases &h)
{
	const int clients = cfg.renew_clients;
	auto sessions = open_sessions(cfg, sys, place, clients);
	if (sys.kind == Kind::redis)
		for (auto &s : sessions)
			static_cast<RedisSession *>(s.get())->adopt(h.redis_prefix);
	Failure failure;
	Window w(cfg.warmup_s, cfg.duration_s);
	std::vector<std::vector<double>> lat(clients);
	std::vector<long long> done(clients, 0), failed(clients, 0);
	std::vector<std::thread> threads;
	for (int i = 0; i < clients; i++)
		threads.emplace_back([&, i] {
			Session &s = *sessions[i];
			size_t k = i;
			std::this_thread::sleep_until(w.start);
			try
			{
				while (!failure.failed())
				{
					TimePoint t0 = Clock::now();
					if (t0 >= w.end)
						break;
					bool ok = s.renew(h.names[k], h.tokens[k]);
					TimePoint t1 = Clock::now();
					k += clients;
					if (k >= h.names.size())
						k = i;
					if (!w.contains(t1))
						continue;
					done[i]++;
					if (!ok)
						failed[i]++;
					lat[i].push_back(Micros(t1 - t0).count());
				}
			}
			catch (const std::exception &e)
			{
				failure.set("client " + std::to_string(i) + ": " + e.what());
			}
		});
	LoadProbe load(server_pids(sessions), wal_conninfo(cfg, sys));
	std::this_thread::sleep_until(w.begin);
	load.begin();
	std::this_thread::sleep_until(w.end);
	Metrics m;
	load.end(m);
	for (auto &t : threads)
		t.join();
	failure.rethrow(sys.key);
	std::vector<double> all;
	long long n = 0, nf = 0;
	for (int i = 0; i < clients; i++)
	{
		all.insert(all.end(), lat[i].begin(), lat[i].end());
		n += done[i];
		nf += failed[i];
	}
	if (nf > 0)
		throw std::runtime_error(sys.key + ": " + std::to_string(nf) + " renewals of held leases failed");
	load.per_op(m, n);
	m["renewals_per_s"] = n / cfg.duration_s;
	add_latencies(m, "renew", std::move(all));
	return m;
}

// ---- the plan: which runs, in which order -----------------------------------------------------

struct Point
{
	std::string scenario;
	std::string point;	// "1", "8", "32" clients; "1k", "1M" resources; ...
	std::vector<std::string> systems;
	std::function<Metrics(const System &)> run;
	// points of one group run back to back per system (1k then 1M, say), so
	// that a burst of other load hits both sides of their ratio alike
	std::string group;
};

struct RunRecord
{
	std::string scenario, point, system;
	int rep, order;
	double started_s;	// since the start of the benchmark
	Metrics metrics;
	bool discarded = false;	// redone: other processes took the machine during it
};

std::string size_label(int n)
{
	if (n >= 1000000 && n % 1000000 == 0)
		return std::to_string(n / 1000000) + "M";
	if (n >= 1000 && n % 1000 == 0)
		return std::to_string(n / 1000) + "k";
	return std::to_string(n);
}

bool wanted(const Config &cfg, const std::string &scenario)
{
	return std::find(cfg.scenarios.begin(), cfg.scenarios.end(), scenario) != cfg.scenarios.end();
}

// ---- summaries ---------------------------------------------------------------------------------

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

class Results
{
public:
	Results(const std::vector<RunRecord> &kept, const std::vector<RunRecord> &all) : runs_(kept), all_(all) {}
	Agg get(const std::string &scenario, const std::string &point, const std::string &system,
			const std::string &metric) const
	{
		std::vector<double> v;
		for (const auto &r : runs_)
			if (r.scenario == scenario && r.point == point && r.system == system)
			{
				auto it = r.metrics.find(metric);
				if (it != r.metrics.end())
					v.push_back(it->second);
			}
		return aggregate(v);
	}
	bool has(const std::string &scenario, const std::string &point, const std::string &system) const
	{
		for (const auto &r : runs_)
			if (r.scenario == scenario && r.point == point && r.system == system)
				return true;
		return false;
	}
	// every metric name seen for a (scenario, point, system)
	std::vector<std::string> metric_names(const std::string &scenario, const std::string &point,
										  const std::string &system) const
	{
		std::vector<std::string> names;
		for (const auto &r : runs_)
			if (r.scenario == scenario && r.point == point && r.system == system)
				for (const auto &kv : r.metrics)
					if (std::find(names.begin(), names.end(), kv.first) == names.end())
						names.push_back(kv.first);
		return names;
	}
	// the runs that count (redone ones left out), and every run
	const std::vector<RunRecord> &runs() const { return runs_; }
	const std::vector<RunRecord> &all_runs() const { return all_; }
	// per repetition, metric at point b over metric at point a, same system
	std::vector<double> paired_ratios(const std::string &scenario, const std::string &a, const std::string &b,
									  const std::string &system, const std::string &metric) const
	{
		std::map<int, double> va, vb;
		for (const auto &r : runs_)
			if (r.scenario == scenario && r.system == system && r.metrics.count(metric))
			{
				if (r.point == a)
					va[r.rep] = r.metrics.at(metric);
				if (r.point == b)
					vb[r.rep] = r.metrics.at(metric);
			}
		std::vector<double> out;
		for (const auto &kv : va)
			if (vb.count(kv.first) && kv.second > 0)
				out.push_back(vb[kv.first] / kv.second);
		return out;
	}

private:
	const std::vector<RunRecord> &runs_;
	const std::vector<RunRecord> &all_;
};

std::string cell(const Agg &a)
{
	if (a.n == 0)
		return "n/a";
	if (a.n == 1 || a.lo == a.hi)
		return fmt_auto(a.med);
	return fmt_auto(a.med) + " (" + fmt_auto(a.lo) + "–" + fmt_auto(a.hi) + ")";
}

std::string short_cell(const Agg &a)
{
	return a.n == 0 ? "n/a" : fmt_auto(a.med);
}

struct Target
{
	std::string what;
	std::string short_what;	// for the chart
	std::string measured;
	double ratio = NAN;
	std::string threshold;
	bool met = false;
	bool known = false;
};

std::vector<Target> evaluate_targets(const Config &cfg, const Results &res)
{
	std::vector<Target> t;
	auto ratio = [](const Agg &a, const Agg &b) { return (a.n && b.n && b.med != 0) ? a.med / b.med : NAN; };
	auto add = [&](const std::string &what, const std::string &short_what, const std::string &measured, double r,
				   double limit, bool at_least, const std::string &threshold) {
		Target x;
		x.what = what;
		x.short_what = short_what;
		x.measured = measured;
		x.ratio = r;
		x.threshold = threshold;
		x.known = !std::isnan(r);
		x.met = x.known && (at_least ? r >= limit : r <= limit);
		t.push_back(x);
	};
	if (wanted(cfg, "uncontended"))
		for (int c : cfg.client_counts)
		{
			const std::string p = std::to_string(c);
			Agg pre = res.get("uncontended", p, "preload", "pairs_per_s");
			Agg hand = res.get("uncontended", p, "handmade", "pairs_per_s");
			Agg flo = res.get("uncontended", p, "floor", "pairs_per_s");
			bool judged = c == 1 || c == 8;
			if (judged)
				add("uncontended pairs/s, " + p + " client" + (c > 1 ? "s" : "") + ": pg_lease preloaded ≥ 1.3× handmade",
					"pairs/s, " + p + " cl.: preloaded ≥ 1.3× handmade", fmt_auto(pre.med) + " / " + fmt_auto(hand.med), ratio(pre, hand), 1.3, true, "≥ 1.3");
			add(std::string("uncontended pairs/s, ") + p + " client" + (c > 1 ? "s" : "") +
					": pg_lease preloaded ≥ 0.8× durable floor" + (judged ? "" : " (32 clients: informational)"),
				"pairs/s, " + p + " cl.: preloaded ≥ 0.8× floor" + (judged ? "" : " (info)"), fmt_auto(pre.med) + " / " + fmt_auto(flo.med), ratio(pre, flo), 0.8, true, "≥ 0.8");
		}
	if (wanted(cfg, "hot"))
	{
		const std::string p = std::to_string(cfg.hot_clients);
		Agg p50 = res.get("hot", p, "preload", "handoff_p50_us");
		add("hot resource: hand-off p50 pg_lease preloaded ≤ 1 ms", "hot: hand-off p50 preloaded ≤ 1 ms", fmt_auto(p50.med) + " µs",
			p50.n ? p50.med / 1000.0 : NAN, 1.0, false, "≤ 1 (ms)");
		Agg pre = res.get("hot", p, "preload", "handoffs_per_s");
		Agg red = res.get("hot", p, "redis", "handoffs_per_s");
		add("hot resource: hand-offs/s pg_lease preloaded ≥ 20× Redis (retry client)",
			"hot: hand-offs/s preloaded ≥ 20× Redis", fmt_auto(pre.med) + " / " + fmt_auto(red.med), ratio(pre, red), 20, true, "≥ 20");
		Agg fair = res.get("hot", p, "preload", "fairness");
		std::string others;
		for (const char *k : {"plain", "advisory", "handmade", "redis"})
		{
			Agg f = res.get("hot", p, k, "fairness");
			others += std::string(others.empty() ? "" : ", ") + system_by_key(k).label + " " + short_cell(f);
		}
		add("hot resource: fairness (max/min grants per client) pg_lease preloaded ≤ 1.5",
			"hot: max/min grants preloaded ≤ 1.5", fmt_auto(fair.med) + " (others: " + others + ")", fair.n ? fair.med : NAN, 1.5, false, "≤ 1.5");
	}
	if (wanted(cfg, "scale"))
	{
		// judged on the ratio within each repetition (the two runs are back to back), median over them
		Agg small = res.get("scale", size_label(cfg.scale_small), "preload", "acquire_p50_us");
		Agg large = res.get("scale", size_label(cfg.scale_large), "preload", "acquire_p50_us");
		Agg paired = aggregate(res.paired_ratios("scale", size_label(cfg.scale_small), size_label(cfg.scale_large),
												 "preload", "acquire_p50_us"));
		add("scale: pg_lease preloaded acquire p50 at " + size_label(cfg.scale_large) + " ≤ 1.5× at " +
				size_label(cfg.scale_small) + " (median of the per-repetition ratios)",
			"scale: acquire p50 " + size_label(cfg.scale_large) + " ≤ 1.5× " + size_label(cfg.scale_small),
			"per repetition " + cell(paired) + "; medians " + fmt_auto(large.med) + " µs / " + fmt_auto(small.med) +
				" µs = " + fmt_auto(ratio(large, small)),
			paired.n ? paired.med : NAN, 1.5, false, "≤ 1.5");
	}
	return t;
}

// ---- SVG chart -----------------------------------------------------------------------------------

struct Series
{
	std::string label;
	std::string color;
	double opacity = 1.0;
};

// A bar panel: groups along x, one bar per series in each group, median bar
// and min-max whisker, log-scaled y.  values[g][s]; n == 0 draws nothing.
void svg_panel(std::ostream &o, double x, double y, double w, double h, const std::string &title,
			   const std::string &unit, const std::vector<std::string> &groups, const std::vector<Series> &series,
			   const std::vector<std::vector<Agg>> &values)
{
	const double left = 52, right = 8, top = 30, bottom = 40;
	const double px = x + left, py = y + top, pw = w - left - right, ph = h - top - bottom;
	double vmin = INFINITY, vmax = 0;
	for (const auto &g : values)
		for (const auto &a : g)
			if (a.n > 0 && a.lo > 0)
			{
				vmin = std::min(vmin, a.lo);
				vmax = std::max(vmax, a.hi);
			}
	o << "<g>\n<text x=\"" << x + w / 2 << "\" y=\"" << y + 16
	  << "\" text-anchor=\"middle\" font-size=\"13\" font-weight=\"bold\">" << xml_escape(title) << "</text>\n";
	o << "<rect x=\"" << px << "\" y=\"" << py << "\" width=\"" << pw << "\" height=\"" << ph
	  << "\" fill=\"none\" stroke=\"#ccc\"/>\n";
	if (!(vmax > 0))
	{
		o << "<text x=\"" << px + pw / 2 << "\" y=\"" << py + ph / 2
		  << "\" text-anchor=\"middle\" font-size=\"11\">no data</text>\n</g>\n";
		return;
	}
	double lmin = std::floor(std::log10(vmin)), lmax = std::ceil(std::log10(vmax) + 0.25);
	if (lmax - lmin < 1)
		lmax = lmin + 1;
	auto ymap = [&](double v) { return py + ph - (std::log10(v) - lmin) / (lmax - lmin) * ph; };
	for (int e = (int) lmin; e <= (int) lmax; e++)
	{
		double v = std::pow(10.0, e);
		double yy = ymap(v);
		o << "<line x1=\"" << px << "\" x2=\"" << px + pw << "\" y1=\"" << yy << "\" y2=\"" << yy
		  << "\" stroke=\"#e5e5e5\"/>\n";
		std::string lab = e >= 6 ? fmt(v / 1e6) + "M" : e >= 3 ? fmt(v / 1e3) + "k" : fmt(v, e < 0 ? -e : 0);
		o << "<text x=\"" << px - 4 << "\" y=\"" << yy + 4 << "\" text-anchor=\"end\" font-size=\"10\">" << lab
		  << "</text>\n";
	}
	o << "<text transform=\"translate(" << x + 12 << "," << py + ph / 2
	  << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"10\">" << xml_escape(unit) << " (log)</text>\n";
	const double gw = pw / groups.size();
	const double bw = std::min(28.0, (gw - 12) / series.size());
	for (size_t g = 0; g < groups.size(); g++)
	{
		double gx = px + g * gw + (gw - bw * series.size()) / 2;
		o << "<text x=\"" << px + g * gw + gw / 2 << "\" y=\"" << py + ph + 14
		  << "\" text-anchor=\"middle\" font-size=\"11\">" << xml_escape(groups[g]) << "</text>\n";
		for (size_t s = 0; s < series.size(); s++)
		{
			const Agg &a = values[g][s];
			double bx = gx + s * bw;
			if (a.n > 0 && !(a.med > 0))
			{
				// a negative hand-off latency: the grant's reply came before the release's
				o << "<text transform=\"translate(" << bx + bw / 2 + 3 << "," << py + ph - 3
				  << ") rotate(-90)\" font-size=\"9\">" << fmt_auto(a.med) << " (&lt; 0)</text>\n";
				continue;
			}
			if (a.n == 0)
				continue;
			double yv = ymap(a.med), y0 = py + ph;
			o << "<rect x=\"" << bx + 1 << "\" y=\"" << yv << "\" width=\"" << bw - 2 << "\" height=\"" << y0 - yv
			  << "\" fill=\"" << series[s].color << "\" fill-opacity=\"" << series[s].opacity << "\"><title>"
			  << xml_escape(series[s].label + ", " + groups[g] + ": " + cell(a) + " " + unit) << "</title></rect>\n";
			if (a.n > 1 && a.lo > 0)
			{
				double cx = bx + bw / 2;
				o << "<line x1=\"" << cx << "\" x2=\"" << cx << "\" y1=\"" << ymap(a.lo) << "\" y2=\"" << ymap(a.hi)
				  << "\" stroke=\"#000\" stroke-width=\"1\"/>\n";
				for (double v : {a.lo, a.hi})
					o << "<line x1=\"" << cx - 3 << "\" x2=\"" << cx + 3 << "\" y1=\"" << ymap(v) << "\" y2=\""
					  << ymap(v) << "\" stroke=\"#000\"/>\n";
			}
			double ly = ymap(a.n > 1 ? a.hi : a.med) - 3;
			o << "<text transform=\"translate(" << bx + bw / 2 + 3 << "," << ly
			  << ") rotate(-90)\" font-size=\"9\">" << fmt_auto(a.med) << "</text>\n";
		}
	}
	o << "</g>\n";
}

void write_svg(const Config &cfg, const Results &res, const std::string &path)
{
	const double W = 1260, H = 860;
	std::ostringstream o;
	o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W
	  << " " << H << "\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
	o << "<text x=\"" << W / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\">"
	  << "pg_lease vs advisory locks, a hand-written table lease, Redis and the durable floor ("
	  << xml_escape(cfg.mode) << " run, median of " << cfg.reps << ", whiskers min–max)</text>\n";
	// legend
	double lx = 40;
	for (const auto &s : all_systems())
	{
		o << "<rect x=\"" << lx << "\" y=\"36\" width=\"12\" height=\"12\" fill=\"" << s.color << "\"/>"
		  << "<text x=\"" << lx + 16 << "\" y=\"46\" font-size=\"12\">" << xml_escape(s.label) << "</text>\n";
		lx += 30 + 7.0 * s.label.size();
	}
	auto systems_series = [](const std::vector<std::string> &keys) {
		std::vector<Series> v;
		for (const auto &k : keys)
		{
			const System &s = system_by_key(k);
			v.push_back({s.label, s.color, 1.0});
		}
		return v;
	};
	const double top = 60, pw = W / 3, ph = (H - top) / 2;
	// (1) uncontended pairs/s and (2) acquire p50, by client count
	auto uncontended_panel = [&](const char *metric, double x, double w, const char *title, const char *unit) {
		const std::vector<std::string> &keys = uncontended_systems();
		std::vector<std::string> groups;
		std::vector<std::vector<Agg>> vals;
		for (int c : cfg.client_counts)
		{
			groups.push_back(std::to_string(c) + (c == 1 ? " client" : " clients"));
			std::vector<Agg> row;
			for (const auto &k : keys)
				row.push_back(res.get("uncontended", std::to_string(c), k, metric));
			vals.push_back(row);
		}
		svg_panel(o, x, top, w, ph, title, unit, groups, systems_series(keys), vals);
	};
	uncontended_panel("pairs_per_s", 0, pw * 1.35, "Uncontended acquire+release pairs/s (100k resources)", "pairs/s");
	uncontended_panel("acquire_p50_us", pw * 1.35, pw * 1.0, "Uncontended acquire latency p50", "µs");
	// (3) hot resource
	{
		std::vector<std::string> keys = {"preload", "plain", "advisory", "handmade", "redis"};
		const std::string p = std::to_string(cfg.hot_clients);
		std::vector<std::vector<Agg>> vals(2);
		for (const auto &k : keys)
		{
			vals[0].push_back(res.get("hot", p, k, "handoffs_per_s"));
			vals[1].push_back(res.get("hot", p, k, "handoff_p50_us"));
		}
		svg_panel(o, pw * 2.35, top, pw * 0.65, ph / 1.0, "Hot resource (" + p + " clients)", "hand-offs/s | µs",
				  {"hand-offs/s", "hand-off p50 µs"}, systems_series(keys), vals);
	}
	// (4) scale: acquire p50 at small vs large
	{
		std::vector<std::string> keys = {"preload", "plain", "handmade", "redis"};
		std::vector<std::string> groups;
		std::vector<std::vector<Agg>> vals;
		for (int n : {cfg.scale_small, cfg.scale_large})
		{
			groups.push_back(size_label(n) + " resources");
			std::vector<Agg> row;
			for (const auto &k : keys)
				row.push_back(res.get("scale", size_label(n), k, "acquire_p50_us"));
			vals.push_back(row);
		}
		svg_panel(o, 0, top + ph, pw, ph, "Scale: acquire latency p50 (" + std::to_string(cfg.scale_clients) + " client)",
				  "µs", groups, systems_series(keys), vals);
	}
	// (5) renewals/s
	{
		std::vector<std::string> keys = {"preload", "plain", "handmade", "redis"};
		std::vector<std::vector<Agg>> vals(2);
		const std::string p = size_label(cfg.renew_leases);
		for (const auto &k : keys)
		{
			vals[0].push_back(res.get("renew", p, k, "renewals_per_s"));
			vals[1].push_back(res.get("renew", p, k, "renew_p50_us"));
		}
		svg_panel(o, pw, top + ph, pw, ph,
				  "Renewals of " + p + " held leases (" + std::to_string(cfg.renew_clients) + " clients)",
				  "renewals/s | µs", {"renewals/s", "renew p50 µs"}, systems_series(keys), vals);
	}
	// (6) targets as text
	{
		auto targets = evaluate_targets(cfg, res);
		double tx = 2 * pw + 10, ty = top + ph + 30;
		o << "<text x=\"" << tx << "\" y=\"" << ty - 10 << "\" font-size=\"13\" font-weight=\"bold\">Targets</text>\n";
		for (const auto &t : targets)
		{
			std::string line = (t.known ? (t.met ? "met: " : "NOT MET: ") : "n/a: ") + t.short_what;
			o << "<text x=\"" << tx << "\" y=\"" << ty + 8 << "\" font-size=\"10\" fill=\""
			  << (t.known ? (t.met ? "#1a7f37" : "#c62828") : "#555") << "\">" << xml_escape(line) << "</text>\n";
			o << "<text x=\"" << tx + 12 << "\" y=\"" << ty + 21 << "\" font-size=\"10\" fill=\"#333\">"
			  << xml_escape("ratio " + fmt_auto(t.ratio) + " (" + t.threshold + ")") << "</text>\n";
			ty += 32;
		}
	}
	o << "</svg>\n";
	std::ofstream f(path);
	f << o.str();
	if (!f)
		die("cannot write " + path);
}

// ---- markdown and JSON ---------------------------------------------------------------------------

std::string plural_clients(int c)
{
	return std::to_string(c) + (c == 1 ? " client" : " clients");
}

void write_markdown(const Config &cfg, const Results &res, const std::string &path, const std::string &json_name,
					const std::string &svg_name)
{
	std::ostringstream o;
	o << "# pg_lease benchmark (" << cfg.mode << " run)\n\n";
	for (const auto &kv : cfg.meta)
		o << "- " << kv.first << ": " << kv.second << "\n";
	o << "- each measurement: " << cfg.reps << " runs; median, and min–max in brackets; every scenario and system "
	  << "in this one run, interleaved: each repetition runs every (scenario, point) with the systems round-robin, "
	  << "the first system rotating per repetition\n";
	o << "- each run: fresh connections (one per client thread, prepared statements), " << fmt(cfg.warmup_s, 2)
	  << " s warm-up not counted, then " << fmt(cfg.duration_s, 2) << " s measured (hot resource: "
	  << fmt(cfg.hot_duration_s, 2) << " s)\n";
	for (const auto &n : cfg.notes)
		o << "- " << n << "\n";
	int redone = 0;
	for (const auto &r : res.all_runs())
		redone += r.discarded;
	o << "- the machine is shared: a run during which other processes took more than " << fmt(cfg.max_foreign_pct)
	  << " % of the machine (CPU busy minus this benchmark's share) was redone once; " << redone
	  << " run(s) were redone (listed, struck through, at the end)\n";
	o << "- raw runs: `" << json_name << "` (redone ones marked `discarded`); chart: `" << svg_name << "`\n\n";

	o << "## Systems\n\n| system | what |\n|---|---|\n";
	for (const auto &s : all_systems())
		o << "| " << s.label << " | " << s.what << " |\n";

	// the main table: one line per system, the headline number of each scenario
	o << "\n## Main results (median of " << cfg.reps << " runs; min–max in the tables below)\n\n";
	o << "| system |";
	for (int c : cfg.client_counts)
		o << " pairs/s " << plural_clients(c) << " |";
	o << " hot: hand-offs/s | hot: hand-off p50 µs | hot: max/min grants | scale: acquire p50 µs "
	  << size_label(cfg.scale_small) << " → " << size_label(cfg.scale_large) << " | renewals/s |\n|---|";
	for (size_t i = 0; i < cfg.client_counts.size(); i++)
		o << "---:|";
	o << "---:|---:|---:|---:|---:|\n";
	const std::string hp = std::to_string(cfg.hot_clients);
	const std::string rp = size_label(cfg.renew_leases);
	for (const auto &s : all_systems())
	{
		o << "| " << s.label << " |";
		for (int c : cfg.client_counts)
			o << " " << short_cell(res.get("uncontended", std::to_string(c), s.key, "pairs_per_s")) << " |";
		o << " " << short_cell(res.get("hot", hp, s.key, "handoffs_per_s")) << " | "
		  << short_cell(res.get("hot", hp, s.key, "handoff_p50_us")) << " | "
		  << short_cell(res.get("hot", hp, s.key, "fairness")) << " | ";
		Agg a = res.get("scale", size_label(cfg.scale_small), s.key, "acquire_p50_us");
		Agg b = res.get("scale", size_label(cfg.scale_large), s.key, "acquire_p50_us");
		if (a.n && b.n)
			o << fmt_auto(a.med) << " → " << fmt_auto(b.med) << " (×" << fmt(b.med / a.med, 2) << ")";
		else
			o << "n/a";
		o << " | " << short_cell(res.get("renew", rp, s.key, "renewals_per_s")) << " |\n";
	}
	o << "\nn/a: not applicable (advisory locks hold no per-resource state and have no TTL to renew; the durable "
		 "floor is not a lock) or not run.\n";

	auto targets = evaluate_targets(cfg, res);
	if (!targets.empty())
	{
		o << "\n## Targets (ratios of medians)\n\n| target | measured | ratio | threshold | result |\n|---|---|---:|---|---|\n";
		for (const auto &t : targets)
			o << "| " << t.what << " | " << t.measured << " | " << fmt_auto(t.ratio) << " | " << t.threshold << " | "
			  << (t.known ? (t.met ? "**met**" : "**not met**") : "n/a") << " |\n";
	}

	auto scenario_load = [&](const std::string &scenario) {
		std::vector<double> busy, own, load;
		for (const auto &r : res.runs())
			if (r.scenario == scenario)
			{
				auto get = [&](const char *k) {
					auto it = r.metrics.find(k);
					return it == r.metrics.end() ? NAN : it->second;
				};
				busy.push_back(get("cpu_busy_pct"));
				own.push_back(get("own_cpu_pct"));
				load.push_back(get("loadavg1"));
			}
		// per-process and whole-machine tick counts are sampled apart: clamp at 0
		std::vector<double> other;
		for (size_t i = 0; i < busy.size(); i++)
			other.push_back(std::max(0.0, busy[i] - own[i]));
		if (busy.empty())
			return std::string();
		return "Machine during these runs (whole machine, /proc/stat): CPU busy " + cell(aggregate(busy)) +
			" %, of which this benchmark (driver, its backends, Redis) " + cell(aggregate(own)) +
			" %; everything else (clusters' background processes, kernel, other engineers' work) ≈ " +
			cell(aggregate(other)) + " %; 1-min load average " + cell(aggregate(load)) + ".\n";
	};

	if (wanted(cfg, "uncontended"))
	{
		o << "\n## 1. Uncontended acquire+release (and 5. the durable floor)\n\n"
		  << "Each client loops: pick a random resource of " << cfg.nres
		  << " (`u/<n>`; the lease and handmade tables hold a released row for each, so an acquire updates a row), "
			 "acquire without waiting, release at once. A pair counts when its release returns inside the window; "
			 "latencies are per call (one round trip each). *busy*: acquires refused because another client held "
			 "the resource (median per run; such tries are not pairs). *Server CPU/pair*: CPU time (user + kernel, "
			 "the backend's own WAL write and fdatasync included) of the clients' backends, or of redis-server, "
			 "divided by the pairs. *WAL/pair*: bytes of WAL the cluster wrote in the window per pair.\n\n";
		o << "| system | clients | pairs/s | acquire p50 µs | acquire p99 µs | release p50 µs | release p99 µs | busy | "
			 "server CPU µs/pair | WAL B/pair | CPU busy % (own %) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
		for (int c : cfg.client_counts)
			for (const auto &s : all_systems())
			{
				const std::string p = std::to_string(c);
				if (!res.has("uncontended", p, s.key))
					continue;
				auto g = [&](const char *m) { return res.get("uncontended", p, s.key, m); };
				o << "| " << s.label << " | " << c << " | " << cell(g("pairs_per_s")) << " | "
				  << cell(g("acquire_p50_us")) << " | " << cell(g("acquire_p99_us")) << " | "
				  << cell(g("release_p50_us")) << " | " << cell(g("release_p99_us")) << " | "
				  << short_cell(g("busy")) << " | " << cell(g("server_cpu_us_per_op")) << " | "
				  << short_cell(g("wal_bytes_per_op")) << " | " << short_cell(g("cpu_busy_pct")) << " ("
				  << short_cell(g("own_cpu_pct")) << ") |\n";
			}
		o << "\nRatios of medians (pairs/s):\n\n| clients | preloaded / handmade | preloaded / floor | "
			 "preloaded / two-write floor | two-write floor / floor | "
			 "preloaded / pg_lease's statements | pg_lease's statements / two-write floor | "
			 "preloaded / not preloaded | preloaded / advisory | preloaded / Redis |\n"
			 "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
		for (int c : cfg.client_counts)
		{
			const std::string p = std::to_string(c);
			// (numerator, denominator) system of each column, in the header's order
			const std::pair<const char *, const char *> columns[] = {
				{"preload", "handmade"}, {"preload", "floor"}, {"preload", "floor2"}, {"floor2", "floor"},
				{"preload", "stmts"}, {"stmts", "floor2"},
				{"preload", "plain"}, {"preload", "advisory"}, {"preload", "redis"}};
			o << "| " << c << " |";
			for (const auto &[num_key, den_key] : columns)
			{
				Agg num = res.get("uncontended", p, num_key, "pairs_per_s");
				Agg den = res.get("uncontended", p, den_key, "pairs_per_s");
				o << " " << ((num.n && den.n) ? fmt_auto(num.med / den.med) : std::string("n/a")) << " |";
			}
			o << "\n";
		}
		o << "\n" << scenario_load("uncontended");
	}

	if (wanted(cfg, "hot"))
	{
		o << "\n## 2. One hot resource, " << cfg.hot_clients << " competing clients\n\n"
		  << "Each client loops: acquire `hot` (waiting), hold " << cfg.hold_us
		  << " µs (a sleep: a busy loop would take one of the 2 CPUs from the servers), release. pg_lease: `wait => '" << cfg.hot_wait_ms
		  << " ms'`; advisory: `pg_advisory_lock` (lock-manager queue); handmade and Redis: retry after a random "
		  << cfg.retry_min_ms << "–" << cfg.retry_max_ms << " ms, for at most " << cfg.hot_wait_ms
		  << " ms per acquire (redsync's pattern). A hand-off is a grant to a client other than the previous "
			 "holder; its latency runs from the return of the previous holder's release to the return of the "
			 "grant (negative when the grant's reply came first). Self re-grant: the releasing client got it "
			 "again first (not a hand-off). Fairness: max/min grants per client in the window (∞: a client "
			 "got none). Token regressions: grants whose token was lower than the previous grant's (a broken "
			 "fencing token; checked for the systems with tokens, fatal for pg_lease).\n\n";
		o << "| system | hand-offs/s | hand-off p50 µs | hand-off p99 µs | max/min grants per client | grants/s | "
			 "self re-grants % | timeouts | token regressions | server CPU µs/grant | CPU busy % (own %) |\n"
			 "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
		for (const auto &s : all_systems())
		{
			if (!res.has("hot", hp, s.key))
				continue;
			auto g = [&](const char *m) { return res.get("hot", hp, s.key, m); };
			o << "| " << s.label << " | " << cell(g("handoffs_per_s")) << " | " << cell(g("handoff_p50_us")) << " | "
			  << cell(g("handoff_p99_us")) << " | " << cell(g("fairness")) << " | " << cell(g("grants_per_s"))
			  << " | " << cell(g("self_regrant_pct")) << " | " << cell(g("timeouts")) << " | "
			  << cell(g("token_regressions")) << " | " << short_cell(g("server_cpu_us_per_op")) << " | "
			  << short_cell(g("cpu_busy_pct")) << " (" << short_cell(g("own_cpu_pct")) << ") |\n";
		}
		o << "\n" << scenario_load("hot");
	}

	if (wanted(cfg, "scale"))
	{
		o << "\n## 3. Scale: " << size_label(cfg.scale_small) << " vs " << size_label(cfg.scale_large)
		  << " resources already present\n\n"
		  << plural_clients(cfg.scale_clients)
		  << ", the uncontended pair on random resources of a database whose lease table holds "
		  << size_label(cfg.scale_small) << " or " << size_label(cfg.scale_large)
		  << " released rows (`s/<n>`, filled before the run; see the notes above). Redis: the same number of "
			 "other keys held (`held/<n>`, PX 1 h) in its own logical database, the pairs on fresh keys.\n\n";
		o << "| system | resources | acquire p50 µs | acquire p99 µs | release p50 µs | pairs/s | server CPU µs/pair |\n"
			 "|---|---:|---:|---:|---:|---:|---:|\n";
		for (const auto &s : all_systems())
			for (int n : {cfg.scale_small, cfg.scale_large})
			{
				const std::string p = size_label(n);
				if (!res.has("scale", p, s.key))
					continue;
				auto g = [&](const char *m) { return res.get("scale", p, s.key, m); };
				o << "| " << s.label << " | " << p << " | " << cell(g("acquire_p50_us")) << " | "
				  << cell(g("acquire_p99_us")) << " | " << cell(g("release_p50_us")) << " | "
				  << cell(g("pairs_per_s")) << " | " << short_cell(g("server_cpu_us_per_op")) << " |\n";
			}
		o << "\nAcquire p50 " << size_label(cfg.scale_large) << " / " << size_label(cfg.scale_small)
		  << ", within each repetition (the two runs of a system are back to back), median (min–max):";
		for (const auto &s : all_systems())
		{
			Agg r = aggregate(res.paired_ratios("scale", size_label(cfg.scale_small), size_label(cfg.scale_large),
												s.key, "acquire_p50_us"));
			if (r.n)
				o << " " << s.label << " " << cell(r) << ";";
		}
		o << "\n\n" << scenario_load("scale");
	}

	if (wanted(cfg, "renew"))
	{
		o << "\n## 4. Renewals of " << rp << " held leases\n\n"
		  << plural_clients(cfg.renew_clients)
		  << "; client *c* renews leases *c*, *c*+" << cfg.renew_clients << ", … in turn (`lease.renew(r, token, '1 h')`; "
			 "handmade: `UPDATE ... SET expires_at = clock_timestamp() + '1 h' WHERE resource = r AND token = t "
			 "AND expires_at > clock_timestamp()`; Redis: Lua compare-and-`PEXPIRE`). Every renewal must succeed.\n\n";
		o << "| system | renewals/s | renew p50 µs | renew p99 µs | server CPU µs/renewal | WAL B/renewal | "
			 "CPU busy % (own %) |\n|---|---:|---:|---:|---:|---:|---:|\n";
		for (const auto &s : all_systems())
		{
			if (!res.has("renew", rp, s.key))
				continue;
			auto g = [&](const char *m) { return res.get("renew", rp, s.key, m); };
			o << "| " << s.label << " | " << cell(g("renewals_per_s")) << " | " << cell(g("renew_p50_us")) << " | "
			  << cell(g("renew_p99_us")) << " | " << short_cell(g("server_cpu_us_per_op")) << " | "
			  << short_cell(g("wal_bytes_per_op")) << " | " << short_cell(g("cpu_busy_pct")) << " ("
			  << short_cell(g("own_cpu_pct")) << ") |\n";
		}
		o << "\n" << scenario_load("renew");
	}

	o << "\n## Runs in order\n\nOther processes: CPU busy minus this benchmark's share, of the whole machine. A run during "
		 "which they took more than " << fmt(cfg.max_foreign_pct) << " % was redone once (at most " << cfg.max_redos
	  << " in all); the redone run is shown struck through and does not count.\n\n"
		 "| # | start s | rep | scenario | point | system | headline | CPU busy % | own % | other processes % | load |\n"
		 "|---:|---:|---:|---|---|---|---:|---:|---:|---:|---:|\n";
	int i = 0;
	for (const auto &r : res.all_runs())
	{
		auto get = [&](const char *k) {
			auto it = r.metrics.find(k);
			return it == r.metrics.end() ? NAN : it->second;
		};
		std::string head;
		if (r.scenario == "hot")
			head = fmt_auto(get("handoffs_per_s")) + " hand-offs/s, p50 " + fmt_auto(get("handoff_p50_us")) + " µs";
		else if (r.scenario == "renew")
			head = fmt_auto(get("renewals_per_s")) + " renewals/s";
		else
			head = fmt_auto(get("pairs_per_s")) + " pairs/s, acquire p50 " + fmt_auto(get("acquire_p50_us")) + " µs";
		if (r.discarded)
			head = "~~" + head + "~~ redone";
		o << "| " << ++i << " | " << fmt(r.started_s, 1) << " | " << r.rep + 1 << " | " << r.scenario << " | "
		  << r.point << " | " << system_by_key(r.system).label << " | " << head << " | " << fmt(get("cpu_busy_pct"))
		  << " | " << fmt(get("own_cpu_pct")) << " | " << fmt(get("foreign_cpu_pct")) << " | "
		  << fmt(get("loadavg1"), 2) << " |\n";
	}
	std::ofstream f(path);
	f << o.str();
	if (!f)
		die("cannot write " + path);
}

void write_json(const Config &cfg, const Results &res, const std::string &path)
{
	std::ostringstream o;
	o << "{\n  \"mode\": " << json_str(cfg.mode) << ",\n  \"command\": " << json_str(cfg.command) << ",\n  \"meta\": {";
	for (size_t i = 0; i < cfg.meta.size(); i++)
		o << (i ? ",\n    " : "\n    ") << json_str(cfg.meta[i].first) << ": " << json_str(cfg.meta[i].second);
	o << "\n  },\n  \"config\": {\"reps\": " << cfg.reps << ", \"max_foreign_pct\": " << json_num(cfg.max_foreign_pct)
	  << ", \"max_redos\": " << cfg.max_redos << ", \"duration_s\": " << json_num(cfg.duration_s)
	  << ", \"hot_duration_s\": " << json_num(cfg.hot_duration_s) << ", \"warmup_s\": " << json_num(cfg.warmup_s)
	  << ", \"resources\": " << cfg.nres << ", \"hot_clients\": " << cfg.hot_clients << ", \"hold_us\": " << cfg.hold_us
	  << ", \"hot_wait_ms\": " << cfg.hot_wait_ms << ", \"retry_ms\": [" << cfg.retry_min_ms << ", " << cfg.retry_max_ms
	  << "], \"scale\": [" << cfg.scale_small << ", " << cfg.scale_large << "], \"scale_clients\": " << cfg.scale_clients
	  << ", \"renew_leases\": " << cfg.renew_leases << ", \"renew_clients\": " << cfg.renew_clients << "},\n";
	o << "  \"systems\": [";
	for (size_t i = 0; i < all_systems().size(); i++)
	{
		const auto &s = all_systems()[i];
		o << (i ? ",\n    " : "\n    ") << "{\"key\": " << json_str(s.key) << ", \"label\": " << json_str(s.label)
		  << ", \"what\": " << json_str(s.what) << "}";
	}
	o << "\n  ],\n  \"summary\": [";
	// one entry per (scenario, point, system) in first-run order
	std::vector<std::tuple<std::string, std::string, std::string>> keys;
	for (const auto &r : res.runs())
	{
		auto k = std::make_tuple(r.scenario, r.point, r.system);
		if (std::find(keys.begin(), keys.end(), k) == keys.end())
			keys.push_back(k);
	}
	for (size_t i = 0; i < keys.size(); i++)
	{
		const auto &[sc, pt, sy] = keys[i];
		o << (i ? ",\n    " : "\n    ") << "{\"scenario\": " << json_str(sc) << ", \"point\": " << json_str(pt)
		  << ", \"system\": " << json_str(sy) << ", \"metrics\": {";
		auto names = res.metric_names(sc, pt, sy);
		for (size_t j = 0; j < names.size(); j++)
		{
			Agg a = res.get(sc, pt, sy, names[j]);
			o << (j ? ", " : "") << json_str(names[j]) << ": {\"median\": " << json_num(a.med) << ", \"min\": "
			  << json_num(a.lo) << ", \"max\": " << json_num(a.hi) << ", \"n\": " << a.n << "}";
		}
		o << "}}";
	}
	o << "\n  ],\n  \"targets\": [";
	auto targets = evaluate_targets(cfg, res);
	for (size_t i = 0; i < targets.size(); i++)
	{
		const auto &t = targets[i];
		o << (i ? ",\n    " : "\n    ") << "{\"target\": " << json_str(t.what) << ", \"measured\": "
		  << json_str(t.measured) << ", \"ratio\": " << json_num(t.ratio) << ", \"threshold\": "
		  << json_str(t.threshold) << ", \"met\": " << (t.known ? (t.met ? "true" : "false") : "null") << "}";
	}
	o << "\n  ],\n  \"runs\": [";
	for (size_t i = 0; i < res.all_runs().size(); i++)
	{
		const auto &r = res.all_runs()[i];
		o << (i ? ",\n    " : "\n    ") << "{\"scenario\": " << json_str(r.scenario) << ", \"point\": "
		  << json_str(r.point) << ", \"system\": " << json_str(r.system) << ", \"rep\": " << r.rep + 1
		  << ", \"order\": " << r.order << ", \"started_s\": " << json_num(r.started_s)
		  << ", \"discarded\": " << (r.discarded ? "true" : "false") << ", \"metrics\": {";
		size_t j = 0;
		for (const auto &kv : r.metrics)
			o << (j++ ? ", " : "") << json_str(kv.first) << ": " << json_num(kv.second);
		o << "}}";
	}
	o << "\n  ]\n}\n";
	std::ofstream f(path);
	f << o.str();
	if (!f)
		die("cannot write " + path);
}

// ---- command line ----------------------------------------------------------------------------------

void usage()
{
	std::cerr <<
		"usage: lease_bench --pg-preload CONNINFO --pg-plain CONNINFO --redis HOST:PORT\n"
		"                   [--reps N] [--duration S] [--hot-duration S] [--warmup S] [--clients 1,8,32]\n"
		"                   [--resources N] [--scale SMALL,LARGE] [--scenarios uncontended,hot,scale,renew]\n"
		"                   [--systems preload,plain,advisory,handmade,redis,floor,floor2,stmts]\n"
		"                   [--max-foreign PCT] [--max-redos N]\n"
		"                   [--mode NAME] [--command TEXT] [--meta KEY=VALUE]... [--note TEXT]...\n"
		"                   --out-md FILE --out-json FILE --out-svg FILE\n"
		"CONNINFO: libpq connection string without dbname (databases bench, scale_<small>, scale_<large>).\n"
		"bench/run.sh starts the servers, fills the databases and calls this.\n";
}

std::vector<std::string> split(const std::string &s, char sep)
{
	std::vector<std::string> out;
	std::string cur;
	std::istringstream in(s);
	while (std::getline(in, cur, sep))
		if (!cur.empty())
			out.push_back(cur);
	return out;
}

Config parse_args(int argc, char **argv)
{
	Config cfg;
	auto need = [&](int &i) -> std::string {
		if (i + 1 >= argc)
		{
			usage();
			die(std::string("missing value after ") + argv[i]);
		}
		return argv[++i];
	};
	auto num = [](const std::string &v, const std::string &what) {
		char *end = nullptr;
		double d = std::strtod(v.c_str(), &end);
		if (end == v.c_str() || *end != '\0' || !(d > 0))
			die(what + " must be a positive number, got '" + v + "'");
		return d;
	};
	for (int i = 1; i < argc; i++)
	{
		std::string a = argv[i];
		if (a == "--pg-preload")
			cfg.pg_preload = need(i);
		else if (a == "--pg-plain")
			cfg.pg_plain = need(i);
		else if (a == "--redis")
		{
			std::string v = need(i);
			auto p = v.rfind(':');
			if (p == std::string::npos)
				die("--redis wants HOST:PORT");
			cfg.redis_host = v.substr(0, p);
			cfg.redis_port = (int) num(v.substr(p + 1), "--redis port");
		}
		else if (a == "--reps")
			cfg.reps = (int) num(need(i), a);
		else if (a == "--duration")
			cfg.duration_s = num(need(i), a);
		else if (a == "--hot-duration")
			cfg.hot_duration_s = num(need(i), a);
		else if (a == "--warmup")
			cfg.warmup_s = num(need(i), a);
		else if (a == "--resources")
			cfg.nres = (int) num(need(i), a);
		else if (a == "--clients")
		{
			cfg.client_counts.clear();
			for (const auto &c : split(need(i), ','))
				cfg.client_counts.push_back((int) num(c, "--clients"));
		}
		else if (a == "--scale")
		{
			auto v = split(need(i), ',');
			if (v.size() != 2)
				die("--scale wants SMALL,LARGE");
			cfg.scale_small = (int) num(v[0], a);
			cfg.scale_large = (int) num(v[1], a);
		}
		else if (a == "--scenarios")
			cfg.scenarios = split(need(i), ',');
		else if (a == "--systems")
			cfg.systems = split(need(i), ',');
		else if (a == "--max-redos")
			cfg.max_redos = (int) std::strtol(need(i).c_str(), nullptr, 10);
		else if (a == "--max-foreign")
			cfg.max_foreign_pct = num(need(i), a);
		else if (a == "--mode")
			cfg.mode = need(i);
		else if (a == "--command")
			cfg.command = need(i);
		else if (a == "--meta")
		{
			std::string v = need(i);
			auto p = v.find('=');
			if (p == std::string::npos)
				die("--meta wants KEY=VALUE");
			cfg.meta.emplace_back(v.substr(0, p), v.substr(p + 1));
		}
		else if (a == "--note")
			cfg.notes.push_back(need(i));
		else if (a == "--out-md")
			cfg.out_md = need(i);
		else if (a == "--out-json")
			cfg.out_json = need(i);
		else if (a == "--out-svg")
			cfg.out_svg = need(i);
		else if (a == "-h" || a == "--help")
		{
			usage();
			std::exit(0);
		}
		else
		{
			usage();
			die("unknown argument " + a);
		}
	}
	if (cfg.pg_preload.empty() || cfg.pg_plain.empty() || cfg.out_md.empty() || cfg.out_json.empty() ||
		cfg.out_svg.empty())
	{
		usage();
		die("--pg-preload, --pg-plain, --out-md, --out-json and --out-svg are required");
	}
	for (const auto &s : cfg.scenarios)
		if (s != "uncontended" && s != "hot" && s != "scale" && s != "renew")
			die("unknown scenario " + s);
	return cfg;
}

std::string base_name(const std::string &path)
{
	auto p = path.rfind('/');
	return p == std::string::npos ? path : path.substr(p + 1);
}

}	// namespace

int main(int argc, char **argv)
{
	Config cfg = parse_args(argc, argv);

	// ---- the plan
	std::vector<Point> points;
	const Place bench_place{"bench", 0};
	if (wanted(cfg, "uncontended"))
		for (int c : cfg.client_counts)
			points.push_back({"uncontended", std::to_string(c),
							  uncontended_systems(),
							  [&cfg, c, bench_place](const System &s) {
								  return run_pairs(cfg, s, bench_place, c, "u/", cfg.nres);
							  },
							  ""});
	if (wanted(cfg, "hot"))
		points.push_back({"hot", std::to_string(cfg.hot_clients),
						  {"preload", "plain", "advisory", "handmade", "redis"},
						  [&cfg, bench_place](const System &s) { return run_hot(cfg, s, bench_place, "hot"); },
						  ""});
	if (wanted(cfg, "scale"))
	{
		int redis_db = 1;
		for (int n : {cfg.scale_small, cfg.scale_large})
		{
			Place place{"scale_" + size_label(n), redis_db++};
			for (auto &ch : place.pg_db)
				ch = (char) std::tolower((unsigned char) ch);
			points.push_back({"scale", size_label(n), {"preload", "plain", "handmade", "redis"},
							  [&cfg, place, n](const System &s) {
								  return run_pairs(cfg, s, place, cfg.scale_clients, "s/", n);
							  },
							  "scale"});
		}
	}
	std::map<std::string, HeldLeases> held;
	if (wanted(cfg, "renew"))
		points.push_back({"renew", size_label(cfg.renew_leases), {"preload", "plain", "handmade", "redis"},
						  [&cfg, &held, bench_place](const System &s) {
							  return run_renew(cfg, s, bench_place, held.at(s.key));
						  },
						  ""});

	if (!cfg.systems.empty())
		for (auto &p : points)
			p.systems.erase(std::remove_if(p.systems.begin(), p.systems.end(),
										   [&](const std::string &k) {
											   return std::find(cfg.systems.begin(), cfg.systems.end(), k) ==
												   cfg.systems.end();
										   }),
							p.systems.end());
	size_t total = 0;
	for (const auto &p : points)
		total += p.systems.size() * cfg.reps;

	try
	{
		for (const auto &p : points)
			if (p.scenario == "renew")
				for (const auto &k : p.systems)
					held[k] = hold_leases(cfg, system_by_key(k), bench_place);

		// blocks: a point on its own, or the points of one group
		std::vector<std::vector<const Point *>> blocks;
		for (const auto &p : points)
		{
			if (!p.group.empty() && !blocks.empty() && blocks.back().front()->group == p.group)
				blocks.back().push_back(&p);
			else
				blocks.push_back({&p});
		}

		std::vector<RunRecord> runs;
		const TimePoint t_start = Clock::now();
		size_t n = 0;
		int redos = 0;
		for (int rep = 0; rep < cfg.reps; rep++)
		{
			// the order of blocks, and of points within a block, alternates too
			std::vector<size_t> order(blocks.size());
			for (size_t i = 0; i < order.size(); i++)
				order[i] = (rep % 2) ? blocks.size() - 1 - i : i;
			for (size_t bi : order)
			{
				std::vector<const Point *> block = blocks[bi];
				if (rep % 2)
					std::reverse(block.begin(), block.end());
				const auto &systems = block.front()->systems;
				const size_t ns = systems.size();
				for (size_t k = 0; k < ns; k++)
				{
					const System &sys = system_by_key(systems[(k + rep) % ns]);
					for (const Point *pp : block)
					{
						const Point &p = *pp;
						for (int attempt = 0;; attempt++)
						{
							RunRecord r{p.scenario, p.point, sys.key, rep, (int) k,
										std::chrono::duration<double>(Clock::now() - t_start).count(), {}};
							r.metrics = p.run(sys);
							double foreign = std::max(0.0, r.metrics["cpu_busy_pct"] - r.metrics["own_cpu_pct"]);
							r.metrics["foreign_cpu_pct"] = foreign;
							bool redo = foreign > cfg.max_foreign_pct && attempt == 0 && redos < cfg.max_redos;
							r.discarded = redo;
							runs.push_back(r);
							std::string head;
							auto it = r.metrics.find(p.scenario == "hot" ? "handoffs_per_s"
													 : p.scenario == "renew" ? "renewals_per_s" : "pairs_per_s");
							head = fmt_auto(it == r.metrics.end() ? NAN : it->second);
							std::cerr << "lease_bench: [" << n + 1 << "/" << total << "] rep " << rep + 1 << " "
									  << p.scenario << " " << p.point << " " << sys.key << ": " << head
									  << (p.scenario == "hot" ? " hand-offs/s" : p.scenario == "renew" ? " renewals/s" : " pairs/s")
									  << ", CPU busy " << fmt(r.metrics["cpu_busy_pct"]) << " %, other processes "
									  << fmt(foreign) << " %" << (redo ? ": redone" : "") << std::endl;
							if (!redo)
								break;
							redos++;
						}
						n++;
					}
				}
			}
		}

		for (auto &kv : held)
			release_leases(cfg, system_by_key(kv.first), bench_place, kv.second);

		std::vector<RunRecord> kept;
		for (const auto &r : runs)
			if (!r.discarded)
				kept.push_back(r);
		Results res(kept, runs);
		write_json(cfg, res, cfg.out_json);
		write_svg(cfg, res, cfg.out_svg);
		write_markdown(cfg, res, cfg.out_md, base_name(cfg.out_json), base_name(cfg.out_svg));
	}
	catch (const std::exception &e)
	{
		die(e.what());
	}
	return 0;
}
