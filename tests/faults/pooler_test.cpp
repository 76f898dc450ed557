// pooler_test.cpp -- the C++ client through PgBouncer in transaction mode.
//
// Run by tests/faults/pooler.sh, which starts the cluster and the pooler and
// exports the DSNs below.  Each client call is one transaction, so the pooler
// may run consecutive calls of one client connection on different server
// backends: the Lease strategy and the advisory strategy (one transaction)
// must work; an ephemeral (session-bound) grant is bound to whichever backend
// ran the acquire, and fails clearly (lost) when the pooler closes it.
//
//   FAULTS_POOL_DSN    pool "faults": 3 server connections, round robin
//   FAULTS_ONE_DSN     pool "faults_one": 1 server connection
//   FAULTS_FRESH_DSN   pool "faults_fresh": 2 server connections, used only
//                      by CallIsBoundedOnWhicheverBackendRunsIt
//   FAULTS_DIRECT_DSN  the server itself, no pooler (arranging and checking)
//   FAULTS_QUICK=1     shorter sleeps
//   FAULTS_STRICT=0    the statement_timeout tests only print what they see
//
// The last three tests pin what the client's statement timeouts do through
// the pooler.  A session-level SET used to leak to other clients of the
// pool and miss the backend the next call ran on; the client now scopes the
// timeout to each call (SET LOCAL in the same message), and these assert
// the documented bounds (and print "# observed:" lines).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "pglease/pglease.hpp"
#include "pglease/postgres.hpp"
#include "../client/pg_client.hpp"

using namespace std::chrono_literals;
using pglease::Errc;
using Clock = std::chrono::steady_clock;

namespace {

std::string
env_or_empty(const char *name)
{
	const char *v = std::getenv(name);
	return v ? v : "";
}

bool
env_flag(const char *name)
{
	return env_or_empty(name) == "1";
}

const bool quick = env_flag("FAULTS_QUICK");
// the client scopes its statement_timeout to each call (SET LOCAL): assert it
const bool strict = env_or_empty("FAULTS_STRICT") != "0";

std::string
pool_dsn()
{
	return env_or_empty("FAULTS_POOL_DSN");
}
std::string
one_dsn()
{
	return env_or_empty("FAULTS_ONE_DSN");
}
std::string
fresh_dsn()
{
	return env_or_empty("FAULTS_FRESH_DSN");
}
std::string
direct_dsn()
{
	return env_or_empty("FAULTS_DIRECT_DSN");
}

std::string
unique_resource()
{
	const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
	static std::atomic<int> n{0};
	return std::string{"pooler/"} + info->name() + "/" + std::to_string(getpid()) + "/" + std::to_string(n++);
}

long long
ms_since(Clock::time_point t0)
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

void
observe(const std::string &what)
{
	std::cout << "# observed: " << what << std::endl;
}

template <class Pred>
bool
eventually(Pred pred, std::chrono::milliseconds limit)
{
	auto end = Clock::now() + limit;
	while (Clock::now() < end) {
		if (pred())
			return true;
		std::this_thread::sleep_for(10ms);
	}
	return pred();
}

// A connection straight to the server, bypassing the pooler.
class Direct {
public:
	Direct() : conn_(direct_dsn()) {}
	pqxx::row one(const std::string &sql)
	{
		pqxx::nontransaction tx{conn_};
		return tx.exec1(sql);
	}
	bool is_current(const std::string &resource, std::int64_t token)
	{
		pqxx::nontransaction tx{conn_};
		return tx.exec_params1("SELECT lease.is_current($1, $2)", resource, token)[0].as<bool>();
	}
	// the server backend a session-bound grant is bound to (0 if none)
	int bound_backend(const std::string &resource)
	{
		pqxx::nontransaction tx{conn_};
		auto r = tx.exec_params("SELECT backend_pid FROM lease.grants WHERE resource = $1", resource);
		return r.empty() || r[0][0].is_null() ? 0 : r[0][0].as<int>();
	}
	bool backend_alive(int pid)
	{
		pqxx::nontransaction tx{conn_};
		return tx.exec_params1("SELECT count(*) = 1 FROM pg_stat_activity WHERE pid = $1", pid)[0].as<bool>();
	}
	std::int64_t acquire(const std::string &resource, const std::string &ttl)
	{
		pqxx::nontransaction tx{conn_};
		auto r = tx.exec_params1("SELECT lease.acquire($1, $2::interval, holder => 'direct-admin')", resource,
		                         ttl);
		return r[0].is_null() ? 0 : r[0].as<std::int64_t>();
	}
	void exec(const std::string &sql)
	{
		pqxx::nontransaction tx{conn_};
		tx.exec(sql);
	}
	pqxx::connection &conn() { return conn_; }

private:
	pqxx::connection conn_;
};

// What a plain client of the pool (not pglease) sees as its statement_timeout.
std::string
show_statement_timeout(pqxx::connection &conn)
{
	pqxx::nontransaction tx{conn};
	auto r = tx.exec1("SELECT current_setting('statement_timeout') || ' on backend ' || pg_backend_pid()");
	return r[0].as<std::string>();
}

pglease::LeaseOptions
opts(std::chrono::milliseconds ttl, std::chrono::milliseconds wait = 0ms)
{
	pglease::LeaseOptions o;
	o.ttl = ttl;
	o.wait = wait;
	return o;
}

class Pooler : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_FALSE(pool_dsn().empty() || one_dsn().empty() || fresh_dsn().empty() || direct_dsn().empty())
		    << "FAULTS_*_DSN unset: run through tests/faults/pooler.sh";
		try {
			Direct d;
			d.exec("CREATE TABLE IF NOT EXISTS pooler_ledger (resource text, token bigint, backend int)");
		} catch (const std::exception &e) {
			FAIL() << "cannot reach the server directly: " << e.what();
		}
	}
};

} // namespace

// ---- Strategy::lease: works through the pooler ---------------------------------

TEST_F(Pooler, LeaseAutoRenewRenewFencedWriteReleaseThroughPooler)
{
	test_support::PgClient client{pool_dsn()};
	Direct direct;
	auto r = unique_resource();
	auto lease = client.acquire(r, opts(900ms));
	ASSERT_TRUE(lease) << lease.error();
	// auto-renew every 300 ms, each renew a transaction on whichever backend
	std::this_thread::sleep_for(quick ? 1500ms : 2500ms);
	EXPECT_TRUE(lease->valid()) << "auto-renew through the pooler did not keep the lease";
	EXPECT_TRUE(direct.is_current(r, lease->token()));
	ASSERT_TRUE(lease->renew());

	for (int i = 0; i < 4; i++) {
		auto wrote = client.fenced(*lease, [&](pqxx::work &tx) {
			tx.exec_params("INSERT INTO pooler_ledger VALUES ($1, $2, pg_backend_pid())", r, lease->token());
		});
		ASSERT_TRUE(wrote) << wrote.error();
	}
	std::vector<int> rows;
	{
		pqxx::nontransaction tx{direct.conn()};
		for (const auto &row : tx.exec_params("SELECT backend FROM pooler_ledger WHERE resource = $1", r))
			rows.push_back(row[0].as<int>());
	}
	std::set<int> backends(rows.begin(), rows.end());
	EXPECT_EQ(rows.size(), 4u);
	EXPECT_GE(backends.size(), 2u) << "the fenced writes all ran on one backend: the pooler did not rotate";
	observe("4 fenced writes of one client ran on " + std::to_string(backends.size()) + " server backends");

	std::int64_t first = lease->token();
	ASSERT_TRUE(lease->release());
	EXPECT_FALSE(direct.is_current(r, first));
	auto again = client.acquire(r, opts(10s));
	ASSERT_TRUE(again) << again.error();
	EXPECT_GT(again->token(), first);
}

TEST_F(Pooler, StaleTokenFencedWriteIsRejectedThroughPooler)
{
	test_support::PgClient a{pool_dsn()}, b{pool_dsn()};
	auto r = unique_resource();
	auto o = opts(1s);
	o.auto_renew = false;
	auto lease = a.acquire(r, o);
	ASSERT_TRUE(lease) << lease.error();
	std::this_thread::sleep_for(1200ms);
	auto taker = b.acquire(r, opts(10s));
	ASSERT_TRUE(taker) << taker.error();
	EXPECT_GT(taker->token(), lease->token());
	bool ran = false;
	auto wrote = a.fenced(*lease, [&](pqxx::work &) { ran = true; });
	ASSERT_FALSE(wrote);
	EXPECT_EQ(wrote.error().code, Errc::lost);
	EXPECT_EQ(wrote.error().sqlstate, "LS001");
	EXPECT_FALSE(ran);
	EXPECT_FALSE(lease->valid());
}

TEST_F(Pooler, LeaseKeptWhenThePoolersServerConnectionsAreTerminated)
{
	test_support::PgClient client{pool_dsn()};
	Direct direct;
	auto r = unique_resource();
	auto lease = client.acquire(r, opts(1500ms));
	ASSERT_TRUE(lease) << lease.error();
	// every server connection behind the pooler, twice: the client's own
	// connections to the pooler survive, or are replaced if a renew was cut
	for (int i = 0; i < 2; i++) {
		direct.exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
		            " WHERE datname = current_database() AND backend_type = 'client backend'"
		            "   AND pid <> pg_backend_pid()");
		std::this_thread::sleep_for(quick ? 700ms : 1200ms);
	}
	EXPECT_TRUE(lease->valid()) << "auto-renew did not survive server connections dying behind the pooler";
	EXPECT_TRUE(direct.is_current(r, lease->token()));
}

// ---- Strategy::ephemeral: bound to a pooled backend, not to the client ----------

TEST_F(Pooler, EphemeralGrantEndsWhenThePoolerClosesItsBackendAndIsReportedLost)
{
	test_support::PgClient client{pool_dsn()};
	Direct direct;
	auto r = unique_resource();
	auto o = opts(30s);
	o.strategy = pglease::Strategy::ephemeral;
	auto lease = client.acquire(r, o);
	ASSERT_TRUE(lease) << lease.error();
	std::atomic<int> calls{0};
	lease->on_lost([&](const pglease::Error &) { calls++; });
	int bound = direct.bound_backend(r);
	ASSERT_NE(bound, 0) << "no backend recorded for a session-bound grant";

	// the client's connection to the pooler stays open; the pooler closes
	// the server connection (server_lifetime, server_idle_timeout, RECONNECT)
	direct.exec("SELECT pg_terminate_backend(" + std::to_string(bound) + ")");
	ASSERT_TRUE(eventually([&] { return !direct.backend_alive(bound); }, 5s));
	EXPECT_FALSE(direct.is_current(r, lease->token())) << "session-bound grant outlived its backend";

	auto renewed = lease->renew();
	ASSERT_FALSE(renewed) << "renew of a grant whose backend exited succeeded";
	EXPECT_EQ(renewed.error().code, Errc::lost) << renewed.error();
	EXPECT_EQ(calls.load(), 1);
	EXPECT_FALSE(lease->valid());
	bool ran = false;
	auto wrote = client.fenced(*lease, [&](pqxx::work &) { ran = true; });
	ASSERT_FALSE(wrote);
	EXPECT_EQ(wrote.error().sqlstate, "LS001");
	EXPECT_FALSE(ran);
	observe("ephemeral grant bound to backend " + std::to_string(bound) +
	        "; the pooler closing that backend ended it while the client stayed connected: renew -> " +
	        std::string{pglease::to_string(renewed.error().code)} + ", fence -> " + wrote.error().sqlstate);
}

TEST_F(Pooler, EphemeralGrantOutlivesTheClientConnectionThroughPooler)
{
	Direct direct;
	auto o = opts(30s);
	o.strategy = pglease::Strategy::ephemeral;

	// without a pooler the grant ends with the client's connection...
	auto r_direct = unique_resource();
	std::int64_t t_direct = 0;
	{
		test_support::PgClient client{direct_dsn()};
		auto lease = client.acquire(r_direct, o);
		ASSERT_TRUE(lease) << lease.error();
		t_direct = lease->detach(); // closes the pinned connection, sends no release
	}
	EXPECT_TRUE(eventually([&] { return !direct.is_current(r_direct, t_direct); }, 3s))
	    << "direct: session-bound grant outlived its connection";

	// ...through the pooler it is bound to a pooled backend that lives on
	auto r = unique_resource();
	std::int64_t token = 0;
	{
		test_support::PgClient client{pool_dsn()};
		auto lease = client.acquire(r, o);
		ASSERT_TRUE(lease) << lease.error();
		token = lease->detach();
	}
	std::this_thread::sleep_for(quick ? 500ms : 1s);
	int bound = direct.bound_backend(r);
	EXPECT_TRUE(direct.backend_alive(bound));
	EXPECT_TRUE(direct.is_current(r, token))
	    << "pooled: the grant ended with the client's connection (documented: it ends with the backend)";
	observe("ephemeral grant through the pooler outlived the client's connection (backend " +
	        std::to_string(bound) +
	        " still pooled): it now ends at its TTL or when the pooler closes that backend");
	direct.exec("SELECT lease.break('" + r + "')");
}

// ---- Strategy::advisory: one transaction, so one backend ------------------------

TEST_F(Pooler, AdvisoryXactLockWorksWithinOneTransactionThroughPooler)
{
	test_support::PgClient a{pool_dsn()}, b{pool_dsn()};
	Direct direct;
	auto r = unique_resource();
	int holder_backend = 0;
	long long locks_seen = -1;
	bool b_timed_out = false;
	auto done = a.with_advisory(r, 1s, [&](pqxx::work &tx) {
		holder_backend = tx.exec1("SELECT pg_backend_pid()")[0].as<int>();
		locks_seen =
		    direct
		        .one("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = " +
		             std::to_string(holder_backend))[0]
		        .as<long long>();
		// another client of the pool is held off while this transaction runs
		std::thread other([&] {
			auto t0 = Clock::now();
			auto second = b.with_advisory(r, 200ms, [](pqxx::work &) {});
			b_timed_out = !second && second.error().code == Errc::timeout && ms_since(t0) < 1500;
		});
		other.join();
	});
	ASSERT_TRUE(done) << done.error();
	EXPECT_EQ(locks_seen, 1) << "the advisory lock was not held by the transaction's backend";
	EXPECT_TRUE(b_timed_out) << "a second client got the advisory lock while the first held it";
	EXPECT_TRUE(eventually(
	    [&] {
		    return direct.one("SELECT count(*) = 0 FROM pg_locks WHERE locktype = 'advisory'")[0].as<bool>();
	    },
	    2s))
	    << "the advisory lock outlived its transaction";
	bool ran = false;
	auto later = b.with_advisory(r, 200ms, [&](pqxx::work &) { ran = true; });
	EXPECT_TRUE(later) << later.error();
	EXPECT_TRUE(ran);
}

// ---- what the client's session-level SET statement_timeout does ------------------

TEST_F(Pooler, StatementTimeoutDoesNotLeakToOtherPoolClients)
{
	// one server connection: every client of "faults_one" shares it
	pqxx::connection plain{one_dsn()};
	std::string before = show_statement_timeout(plain);
	{
		test_support::PgClient client{one_dsn()};
		auto lease = client.try_acquire(unique_resource(), opts(5s));
		ASSERT_TRUE(lease) << lease.error();
	}
	std::string after = show_statement_timeout(plain);
	observe("a plain client of the pool sees statement_timeout = " + before +
	        " before a pglease client used the pool, " + after + " after it disconnected");
	if (strict) {
		EXPECT_EQ(before, after) << "the client's SET statement_timeout leaked to another client of the pool";
	}
}

TEST_F(Pooler, WaitingAcquireIsNotCutShortByOtherClients)
{
	Direct direct;
	auto r = unique_resource();
	ASSERT_GT(direct.acquire(r, "60 s"), 0);

	// pglease clients with wait 0 leave statement_timeout = 2 s (the grace)
	// on the backends they ran on; three of them cover the round-robin pool
	for (int i = 0; i < 3; i++) {
		test_support::PgClient primer{pool_dsn()};
		(void)primer.status();
	}
	{
		pqxx::connection plain{pool_dsn()};
		std::string seen;
		for (int i = 0; i < 3; i++)
			seen += (i ? ", " : "") + show_statement_timeout(plain);
		observe("backends of the pool now have: " + seen);
	}

	const auto wait = 5s;
	test_support::PgClient waiter{pool_dsn()};
	auto t0 = Clock::now();
	auto lease = waiter.acquire(r, opts(10s, wait));
	auto took = ms_since(t0);
	ASSERT_FALSE(lease) << "granted a resource held by another holder";
	observe(
	    "acquire(wait 5s) of a held resource returned after " + std::to_string(took) + " ms: " +
	    std::string{pglease::to_string(lease.error().code)} + " sqlstate '" + lease.error().sqlstate + "'" +
	    (took < 4500 ? " -- cut short: its own SET statement_timeout = 7000 ran on another backend" : ""));
	EXPECT_EQ(lease.error().code, Errc::timeout);
	if (strict) {
		EXPECT_GE(took, 4900) << "acquire gave up before the wait it asked for";
	}
	direct.exec("SELECT lease.break('" + r + "')");
}

TEST_F(Pooler, CallIsBoundedOnWhicheverBackendRunsIt)
{
	// two fresh server connections, so the client's SET and its acquire run
	// on different backends (round robin)
	{
		std::vector<std::thread> warm;
		for (int i = 0; i < 2; i++)
			warm.emplace_back([] {
				pqxx::connection c{fresh_dsn()};
				pqxx::nontransaction tx{c};
				tx.exec("SELECT pg_sleep(0.3)");
			});
		for (auto &t : warm)
			t.join();
	}
	Direct direct;
	auto r = unique_resource();
	std::int64_t t = direct.acquire(r, "1 s");
	ASSERT_GT(t, 0);
	// a fenced transaction holds the grant's row: a take-over waits for it
	const auto fence_held = quick ? 4s : 5s;
	pqxx::connection fencer_conn{direct_dsn()};
	pqxx::work fencer{fencer_conn};
	fencer.exec_params("SELECT lease.fence($1, $2)", r, t);
	auto fenced_at = Clock::now();
	std::this_thread::sleep_for(1200ms); // the grant expires, the row stays locked
	std::thread committer([&] {
		std::this_thread::sleep_until(fenced_at + fence_held);
		fencer.commit();
	});

	test_support::PgClient client{fresh_dsn()};
	auto t0 = Clock::now();
	auto lease = client.try_acquire(r, opts(10s));
	auto took = ms_since(t0);
	committer.join();
	observe(
	    "try_acquire (documented bound: wait 0 + statement_grace 2000 ms) behind a fenced transaction "
	    "returned after " +
	    std::to_string(took) + " ms, " +
	    (lease ? "granted" : std::string{"error "} + std::string{pglease::to_string(lease.error().code)}) +
	    (took > 2500 ? " -- unbounded: it ran on a backend without the client's SET statement_timeout" : ""));
	if (strict) {
		EXPECT_LT(took, 2500) << "a call outlived wait + statement_grace";
	}
	if (lease)
		(void)lease->release();
}
