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

namespace bench {
namespace {

using namespace std::chrono_literals;

constexpr auto wait_limit = 2000ms;

// ---- every provider, through the library --------------------------------------------------------

class LockerSession : public Session {
public:
	explicit LockerSession(std::unique_ptr<pglease::Locker> locker) : locker_(std::move(locker)) {}

	bool acquire(const std::string &resource, bool wait, std::int64_t &token) override
	{
		pglease::LeaseOptions o;
		o.ttl = 30s;
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
		return std::make_unique<LockerSession>(std::move(*r));
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
