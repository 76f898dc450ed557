// bench/systems.cpp -- the Session adapters: pglease::Locker for every
// provider, libpq for the PostgreSQL baselines, libcurl for etcd's JSON
// gateway and the ZooKeeper C client for the raw-client baselines.
#include "systems.hpp"

#include <chrono>
#include <cstdio>
#include <random>
#include <thread>
#include <unordered_map>

#include <curl/curl.h>
#include <libpq-fe.h>
#define THREADED // the synchronous API of libzookeeper_mt
#include <zookeeper/zookeeper.h>

#include <pglease/pglease.hpp>
#ifdef PGLEASE_BENCH_HIREDIS
#include <hiredis/hiredis.h>
#endif

namespace bench {
namespace {

using namespace std::chrono_literals;

constexpr auto wait_limit = 2000ms;

// ---- every provider, through the library --------------------------------------------------------

class LockerSession : public Session {
public:
	LockerSession(std::unique_ptr<pglease::Locker> locker, int ttl_ms) : locker_(std::move(locker)), ttl_(ttl_ms)
	{
	}

	bool acquire(const std::string &resource, bool wait, std::int64_t &token) override
	{
		pglease::LeaseOptions o;
		o.ttl = ttl_;
		o.auto_renew = false;
		o.allow_nested_try = true; // the renewal scenario holds many leases per thread
		o.wait = wait ? wait_limit : 0ms;
		auto r = wait ? locker_->acquire(resource, o) : locker_->try_acquire(resource, o);
		if (!r) {
			if (r.error().code != pglease::Errc::timeout)
				error_ = r.error().message;
			return false;
		}
		token = r->token();
		held_.insert_or_assign(resource, std::move(*r));
		return true;
	}
	bool release(const std::string &resource, std::int64_t) override
	{
		auto it = held_.find(resource);
		if (it == held_.end())
			return false;
		auto r = it->second.release();
		held_.erase(it);
		return note(r);
	}
	bool renew(const std::string &resource, std::int64_t) override
	{
		auto it = held_.find(resource);
		return it != held_.end() && note(it->second.renew());
	}
	[[nodiscard]] std::string error() const override { return error_; }

private:
	bool note(const pglease::Result<void> &r)
	{
		if (!r)
			error_ = r.error().message;
		return static_cast<bool>(r);
	}
	std::unique_ptr<pglease::Locker> locker_;
	std::chrono::milliseconds ttl_;
	std::unordered_map<std::string, pglease::Lease> held_;
	std::string error_;
};

// ---- PostgreSQL baselines (not lockers): one libpq connection, prepared statements --------------

struct PgStatements {
	const char *acquire;      // $1 resource, $2 client; a row = granted
	const char *acquire_wait; // blocking form, or null: retry the acquire
	const char *release;      // $1 resource, $2 token
	const char *renew;        // $1 resource, $2 token, or null
};

const PgStatements &
statements(Kind kind)
{
	static const PgStatements advisory{
	    "SELECT 0 WHERE pg_try_advisory_lock(hashtextextended($1, 0)) AND $2::int IS NOT NULL",
	    "SELECT 0 FROM pg_advisory_lock(hashtextextended($1, 0)) WHERE $2::int IS NOT NULL",
	    "SELECT pg_advisory_unlock(hashtextextended($1, 0)) AND $2::bigint IS NOT NULL", nullptr};
	static const PgStatements handmade{
	    "INSERT INTO handmade_lease VALUES ($1, nextval('handmade_seq'), 'c' || $2::int, clock_timestamp() + "
	    "'30 s') ON CONFLICT (resource) DO UPDATE SET token = excluded.token, holder = excluded.holder, "
	    "expires_at = excluded.expires_at WHERE handmade_lease.expires_at < clock_timestamp() RETURNING "
	    "token",
	    nullptr,
	    "UPDATE handmade_lease SET expires_at = clock_timestamp() WHERE resource = $1 AND token = $2 "
	    "RETURNING true",
	    "UPDATE handmade_lease SET expires_at = clock_timestamp() + '30 s' WHERE resource = $1 AND token = "
	    "$2 "
	    "AND expires_at > clock_timestamp() RETURNING true"};
	static const PgStatements floor{"UPDATE bench_floor SET n = n + 1 WHERE id = $2 AND $1::text IS NOT NULL "
	                                "RETURNING 0",
	                                nullptr, "SELECT $1::text IS NOT NULL AND $2::bigint IS NOT NULL",
	                                nullptr};
	return kind == Kind::advisory ? advisory : kind == Kind::handmade ? handmade : floor;
}

class PgSession : public Session {
public:
	PgSession(Kind kind, const std::string &conninfo, int client)
	    : st_(statements(kind)), client_(std::to_string(client)), rng_(client)
	{
		conn_ = PQconnectdb((conninfo + " application_name=pglease_bench").c_str());
		if (PQstatus(conn_) != CONNECTION_OK)
			return;
		const char *sql[] = {st_.acquire, st_.acquire_wait, st_.release, st_.renew};
		for (int i = 0; i < 4; i++)
			if (sql[i])
				PQclear(PQprepare(conn_, std::to_string(i).c_str(), sql[i], 0, nullptr));
	}
	~PgSession() override { PQfinish(conn_); }
	bool ok() const { return PQstatus(conn_) == CONNECTION_OK; }

	bool acquire(const std::string &resource, bool wait, std::int64_t &token) override
	{
		if (wait && st_.acquire_wait)
			return exec(1, resource, client_, &token);
		auto deadline = std::chrono::steady_clock::now() + wait_limit;
		for (;;) { // the retry client of a polling lease: a random 50-250 ms between tries
			if (exec(0, resource, client_, &token))
				return true;
			if (!wait || std::chrono::steady_clock::now() >= deadline)
				return false;
			std::this_thread::sleep_for(std::chrono::milliseconds(50 + rng_() % 201));
		}
	}
	bool release(const std::string &resource, std::int64_t token) override
	{
		return exec(2, resource, std::to_string(token), nullptr);
	}
	bool renew(const std::string &resource, std::int64_t token) override
	{
		return st_.renew && exec(3, resource, std::to_string(token), nullptr);
	}
	[[nodiscard]] std::string error() const override { return PQerrorMessage(conn_); }

private:
	bool exec(int stmt, const std::string &a, const std::string &b, std::int64_t *out)
	{
		const char *params[] = {a.c_str(), b.c_str()};
		PGresult *r = PQexecPrepared(conn_, std::to_string(stmt).c_str(), 2, params, nullptr, nullptr, 0);
		bool got = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
		           std::string(PQgetvalue(r, 0, 0)) != "f";
		if (got && out)
			*out = std::stoll(PQgetvalue(r, 0, 0));
		PQclear(r);
		return got;
	}
	const PgStatements &st_;
	std::string client_;
	std::minstd_rand rng_;
	PGconn *conn_ = nullptr;
};

// ---- etcd's JSON gateway, by hand: one session lease, txn put-if-absent, delete -----------------

std::string
base64(const std::string &in)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	std::string out;
	unsigned val = 0;
	int bits = -6;
	for (unsigned char c : in) {
		val = (val << 8) + c;
		bits += 8;
		for (; bits >= 0; bits -= 6)
			out.push_back(t[(val >> bits) & 0x3F]);
	}
	if (bits > -6)
		out.push_back(t[((val << 8) >> (bits + 8)) & 0x3F]);
	while (out.size() % 4)
		out.push_back('=');
	return out;
}

size_t
append_body(char *p, size_t size, size_t n, void *out)
{
	static_cast<std::string *>(out)->append(p, size * n);
	return size * n;
}

class EtcdRawSession : public Session {
public:
	explicit EtcdRawSession(const std::string &hostport) : base_("http://" + hostport)
	{
		curl_ = curl_easy_init();
		curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, append_body);
		curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &body_);
		curl_easy_setopt(curl_, CURLOPT_TCP_NODELAY, 1L);
		curl_easy_setopt(curl_, CURLOPT_TIMEOUT_MS, 5000L);
		if (post("/v3/lease/grant", R"({"TTL":30})")) {
			auto at = body_.find("\"ID\":\"");
			if (at != std::string::npos)
				lease_ = body_.substr(at + 6, body_.find('"', at + 6) - at - 6);
		}
	}
	~EtcdRawSession() override { curl_easy_cleanup(curl_); }
	bool ok() const { return !lease_.empty(); }

	bool acquire(const std::string &resource, bool, std::int64_t &token) override
	{
		std::string k = base64("raw/" + resource);
		std::string txn = R"({"compare":[{"key":")" + k + R"(","target":"CREATE","create_revision":"0"}],)" +
		                  R"("success":[{"requestPut":{"key":")" + k + R"(","value":"eA==","lease":")" +
		                  lease_ + "\"}}]}";
		token = 0;
		return post("/v3/kv/txn", txn) && body_.find("\"succeeded\":true") != std::string::npos;
	}
	bool release(const std::string &resource, std::int64_t) override
	{
		return post("/v3/kv/deleterange", R"({"key":")" + base64("raw/" + resource) + "\"}");
	}
	bool renew(const std::string &, std::int64_t) override { return false; }
	[[nodiscard]] std::string error() const override { return error_; }

private:
	bool post(const std::string &path, const std::string &json)
	{
		body_.clear();
		std::string url = base_ + path;
		curl_easy_setopt(curl_, CURLOPT_URL, url.c_str());
		curl_easy_setopt(curl_, CURLOPT_POSTFIELDS, json.c_str());
		CURLcode rc = curl_easy_perform(curl_);
		long status = 0;
		curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &status);
		if (rc != CURLE_OK || status != 200) {
			error_ = std::string(curl_easy_strerror(rc)) + " HTTP " + std::to_string(status) + " " + body_;
			return false;
		}
		return true;
	}
	std::string base_, body_, lease_, error_;
	CURL *curl_ = nullptr;
};

// ---- ZooKeeper's C client, by hand: create and delete an ephemeral-sequential node -------------

class ZkRawSession : public Session {
public:
	explicit ZkRawSession(const std::string &hostport)
	{
		zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
		zh_ = zookeeper_init(hostport.c_str(), nullptr, 30000, nullptr, nullptr, 0);
		for (int i = 0; zh_ && i < 500 && zoo_state(zh_) != ZOO_CONNECTED_STATE; i++)
			std::this_thread::sleep_for(10ms);
		if (connected()) {
			int rc = zoo_create(zh_, "/rawbench", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, nullptr, 0);
			if (rc != ZOK && rc != ZNODEEXISTS)
				zookeeper_close(std::exchange(zh_, nullptr));
		}
	}
	~ZkRawSession() override
	{
		if (zh_)
			zookeeper_close(zh_);
	}
	bool connected() const { return zh_ && zoo_state(zh_) == ZOO_CONNECTED_STATE; }

	bool acquire(const std::string &, bool, std::int64_t &token) override
	{
		char path[128];
		int rc = zoo_create(zh_, "/rawbench/n-", "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL | ZOO_SEQUENCE,
		                    path, sizeof path);
		if (rc != ZOK)
			return fail(rc);
		node_ = path;
		token = 0;
		return true;
	}
	bool release(const std::string &, std::int64_t) override
	{
		int rc = zoo_delete(zh_, node_.c_str(), -1);
		return rc == ZOK || fail(rc);
	}
	bool renew(const std::string &, std::int64_t) override { return false; }
	[[nodiscard]] std::string error() const override { return error_; }

private:
	bool fail(int rc)
	{
		error_ = zerror(rc);
		return false;
	}
	zhandle_t *zh_ = nullptr;
	std::string node_, error_;
};

#ifdef PGLEASE_BENCH_HIREDIS
// ---- Redis by hand (hiredis): what a user writes without the library ----------------------------
// redis_raw: SET key value NX PX ttl, then DEL (no token, no compare at the
// release); redis_raw_fenced: INCR of a counter and the SET in one pipeline
// (one round trip), then DEL; redis_spin: redis_raw whose waiting acquire
// repeats the SET at once until it is granted (the naive spin loop).

class RedisRawSession : public Session {
public:
	RedisRawSession(Kind kind, const std::string &hostport, int client, int ttl_ms)
	    : kind_(kind), value_("c" + std::to_string(client)), ttl_(std::to_string(ttl_ms))
	{
		auto colon = hostport.rfind(':');
		timeval tv{5, 0};
		c_ = redisConnectWithTimeout(hostport.substr(0, colon).c_str(), std::stoi(hostport.substr(colon + 1)), tv);
		if (c_ && !c_->err)
			redisSetTimeout(c_, tv);
	}
	~RedisRawSession() override
	{
		if (c_)
			redisFree(c_);
	}
	bool ok() const { return c_ && !c_->err; }

	bool acquire(const std::string &resource, bool wait, std::int64_t &token) override
	{
		const std::string key = "raw:" + resource;
		auto deadline = std::chrono::steady_clock::now() + wait_limit;
		for (;;) {
			if (kind_ == Kind::redis_raw_fenced ? set_fenced(key, token) : set(key, token))
				return true;
			if (!wait || !ok() || std::chrono::steady_clock::now() >= deadline)
				return false;
		}
	}
	bool release(const std::string &resource, std::int64_t) override
	{
		const std::string key = "raw:" + resource;
		const char *argv[] = {"DEL", key.c_str()};
		size_t lens[] = {3, key.size()};
		auto *r = static_cast<redisReply *>(redisCommandArgv(c_, 2, argv, lens));
		bool done = r && r->type == REDIS_REPLY_INTEGER;
		note(r);
		return done;
	}
	bool renew(const std::string &, std::int64_t) override { return false; }
	[[nodiscard]] std::string error() const override { return error_; }

private:
	bool set(const std::string &key, std::int64_t &token)
	{
		const char *argv[] = {"SET", key.c_str(), value_.c_str(), "NX", "PX", ttl_.c_str()};
		size_t lens[] = {3, key.size(), value_.size(), 2, 2, ttl_.size()};
		auto *r = static_cast<redisReply *>(redisCommandArgv(c_, 6, argv, lens));
		bool got = r && r->type == REDIS_REPLY_STATUS;
		note(r);
		token = 0;
		return got;
	}
	bool set_fenced(const std::string &key, std::int64_t &token)
	{
		const std::string counter = "rawtoken:" + key;
		const char *incr[] = {"INCR", counter.c_str()};
		size_t incr_lens[] = {4, counter.size()};
		const char *argv[] = {"SET", key.c_str(), value_.c_str(), "NX", "PX", ttl_.c_str()};
		size_t lens[] = {3, key.size(), value_.size(), 2, 2, ttl_.size()};
		redisAppendCommandArgv(c_, 2, incr, incr_lens);
		redisAppendCommandArgv(c_, 6, argv, lens);
		void *a = nullptr, *b = nullptr;
		if (redisGetReply(c_, &a) != REDIS_OK || redisGetReply(c_, &b) != REDIS_OK) {
			error_ = c_->errstr;
			if (a)
				freeReplyObject(a);
			return false;
		}
		auto *n = static_cast<redisReply *>(a), *r = static_cast<redisReply *>(b);
		bool got = n->type == REDIS_REPLY_INTEGER && r->type == REDIS_REPLY_STATUS;
		token = got ? n->integer : 0;
		freeReplyObject(n);
		note(r);
		return got;
	}
	void note(redisReply *r)
	{
		if (!r)
			error_ = c_->errstr;
		else if (r->type == REDIS_REPLY_ERROR)
			error_ = r->str;
		if (r)
			freeReplyObject(r);
	}
	Kind kind_;
	std::string value_, ttl_, error_;
	redisContext *c_ = nullptr;
};
#endif

} // namespace

std::unique_ptr<Session>
open_session(const System &sys, const std::string &url, int client, std::string &error)
{
	switch (sys.kind) {
	case Kind::locker: {
		pglease::ClientOptions o;
		auto r = pglease::connect(url, o);
		if (!r) {
			error = r.error().message;
			return nullptr;
		}
		return std::make_unique<LockerSession>(std::move(*r), sys.ttl_ms);
	}
	case Kind::advisory:
	case Kind::handmade:
	case Kind::floor: {
		auto s = std::make_unique<PgSession>(sys.kind, url, client);
		if (!s->ok()) {
			error = s->error();
			return nullptr;
		}
		return s;
	}
	case Kind::etcd_raw: {
		auto s = std::make_unique<EtcdRawSession>(url);
		if (!s->ok()) {
			error = "etcd lease grant failed: " + s->error();
			return nullptr;
		}
		return s;
	}
	case Kind::redis_raw:
	case Kind::redis_raw_fenced:
	case Kind::redis_spin: {
#ifdef PGLEASE_BENCH_HIREDIS
		auto s = std::make_unique<RedisRawSession>(sys.kind, url, client, sys.ttl_ms);
		if (!s->ok()) {
			error = "redis " + url + ": not connected";
			return nullptr;
		}
		return s;
#else
		error = "built without hiredis";
		return nullptr;
#endif
	}
	case Kind::zookeeper_raw: {
		auto s = std::make_unique<ZkRawSession>(url);
		if (!s->connected()) {
			error = "ZooKeeper session to " + url + " not established";
			return nullptr;
		}
		return s;
	}
	}
	error = "unknown system kind";
	return nullptr;
}

} // namespace bench
