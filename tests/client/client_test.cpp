// client_test.cpp -- the C++ client against a real server (started by
// scripts/test.sh, which exports PGHOST/PGPORT/PGUSER and PGLEASE_CLUSTER).
// Never skipped: without a server every test fails and says how to get one.
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <new>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <cctype>
#include <cstring>
#include <tuple>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "pglease/pglease.hpp"
#include "pglease/postgres.hpp"
#include "pg_client.hpp"

using namespace std::chrono_literals;
using pglease::Errc;

// Allocation failure on demand, for this thread only: the global operator
// new is replaced for the whole test binary (library included).
namespace {
thread_local bool t_fail_allocations = false;
}

void *
operator new(std::size_t size)
{
	if (t_fail_allocations)
		throw std::bad_alloc{};
	if (void *p = std::malloc(size ? size : 1))
		return p;
	throw std::bad_alloc{};
}

void
operator delete(void *p) noexcept
{
	std::free(p);
}

void
operator delete(void *p, std::size_t) noexcept
{
	std::free(p);
}

namespace {

std::string
unique_resource()
{
	const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
	static std::atomic<int> n{0};
	return std::string{"cxx/"} + info->name() + "/" + std::to_string(n++);
}

// A plain admin connection (superuser) for arranging and checking.
class Admin {
public:
	explicit Admin(const std::string &conninfo = "") : conn_(conninfo) {}
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
	std::int64_t acquire(const std::string &resource, const std::string &ttl)
	{
		pqxx::nontransaction tx{conn_};
		auto r = tx.exec_params1("SELECT lease.acquire($1, $2::interval, holder => 'admin')", resource, ttl);
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

template <class Pred>
bool
eventually(Pred pred, std::chrono::milliseconds limit)
{
	auto end = std::chrono::steady_clock::now() + limit;
	while (std::chrono::steady_clock::now() < end) {
		if (pred())
			return true;
		std::this_thread::sleep_for(10ms);
	}
	return pred();
}

int
run_shell(const std::string &cmd)
{
	int st = std::system(cmd.c_str());
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

class ClientTest : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_NE(std::getenv("PGHOST"), nullptr)
		    << "no test server: run these tests through 'make test' (scripts/test.sh starts one)";
		try {
			Admin probe;
			(void)probe.one("SELECT 1 FROM pg_extension WHERE extname = 'pg_lease'");
		} catch (const std::exception &e) {
			FAIL() << "cannot reach the test server with pg_lease installed: " << e.what();
		}
	}
	pglease::LeaseOptions opts(std::chrono::milliseconds ttl, std::chrono::milliseconds wait = 0ms)
	{
		pglease::LeaseOptions o;
		o.ttl = ttl;
		o.wait = wait;
		return o;
	}
};

} // namespace

// ---- errors and configuration -------------------------------------------------

TEST(Errors, ErrcNamesAndStreaming)
{
	EXPECT_EQ(pglease::to_string(Errc::lost), "lost");
	EXPECT_EQ(pglease::to_string(Errc::not_installed), "not_installed");
	std::ostringstream os;
	os << pglease::Error{Errc::lost, "LS001", "stale"};
	EXPECT_EQ(os.str(), "lost (LS001): stale");
}

TEST(Errors, RetryableSplitsConnectionFromFinalErrors)
{
	EXPECT_TRUE(pglease::is_retryable({Errc::unavailable, "08006", ""}));
	EXPECT_TRUE(pglease::is_retryable({Errc::timeout, "57014", ""}));
	EXPECT_TRUE(pglease::is_retryable({Errc::internal, "40001", ""}));
	EXPECT_FALSE(pglease::is_retryable({Errc::invalid_argument, "22023", ""}));
	EXPECT_FALSE(pglease::is_retryable({Errc::permission, "42501", ""}));
	EXPECT_FALSE(pglease::is_retryable({Errc::lost, "LS001", ""}));
}

// One source of truth: every SQLSTATE the extension defines is mapped, and
// every SQLSTATE of the docs/sql.md table maps to the Errc it implies.
TEST(Errors, SqlstateMappingMatchesExtensionHeaderAndReadme)
{
	std::ifstream header{std::string{PGLEASE_SOURCE_DIR} + "/extension/pg_lease.h"};
	ASSERT_TRUE(header) << "cannot read extension/pg_lease.h";
	std::stringstream text;
	text << header.rdbuf();
	std::regex re{R"(#define\s+(ERRCODE_LEASE_\w+)\s+MAKE_SQLSTATE\('(.)','(.)','(.)','(.)','(.)'\))"};
	std::map<std::string, Errc> expected = {{"ERRCODE_LEASE_NOT_HELD", Errc::lost},
	                                        {"ERRCODE_LEASE_NESTED_WAIT", Errc::nested},
	                                        {"ERRCODE_LEASE_MODE_MISMATCH", Errc::invalid_argument}};
	int found = 0;
	std::string s = text.str();
	for (std::sregex_iterator it{s.begin(), s.end(), re}, end; it != end; ++it) {
		std::string name = (*it)[1];
		std::string code = std::string{(*it)[2]} + std::string{(*it)[3]} + std::string{(*it)[4]} +
		                   std::string{(*it)[5]} + std::string{(*it)[6]};
		ASSERT_TRUE(expected.count(name))
		    << "extension defines " << name << " (" << code << ") but the client does not map it";
		EXPECT_EQ(pglease::errc_from_sqlstate(code), expected[name]) << name;
		found++;
	}
	EXPECT_EQ(found, 3) << "expected the three pg_lease SQLSTATEs in pg_lease.h";

	std::ifstream readme{std::string{PGLEASE_SOURCE_DIR} + "/docs/sql.md"};
	ASSERT_TRUE(readme);
	std::stringstream rt;
	rt << readme.rdbuf();
	std::map<std::string, Errc> table = {{"LS001", Errc::lost},
	                                     {"LS002", Errc::nested},
	                                     {"LS003", Errc::invalid_argument},
	                                     {"22023", Errc::invalid_argument},
	                                     {"22004", Errc::invalid_argument},
	                                     {"42501", Errc::permission},
	                                     {"55000", Errc::not_installed},
	                                     {"0A000", Errc::invalid_argument}};
	for (const auto &[code, errc] : table) {
		EXPECT_NE(rt.str().find("| `" + code + "` |"), std::string::npos)
		    << code << " missing from docs/sql.md";
		EXPECT_EQ(pglease::errc_from_sqlstate(code), errc) << code;
	}
}

TEST(Errors, RefusedLoginsAndBadBytesAreFinal)
{
	for (const char *code : {"22021", "22P05", "22008", "22015", "3D000"})
		EXPECT_EQ(pglease::errc_from_sqlstate(code), Errc::invalid_argument) << code;
	for (const char *code : {"28P01", "28000"}) {
		EXPECT_EQ(pglease::errc_from_sqlstate(code), Errc::permission) << code;
		EXPECT_FALSE(pglease::is_retryable(pglease::Error{pglease::errc_from_sqlstate(code), code, ""}))
		    << code;
	}
}

TEST(Describe, PrintsTheFourLines)
{
	pglease::LeaseOptions o;
	o.ttl = 30s;
	EXPECT_EQ(pglease::describe(o), "Provider: PostgreSQL\nStrategy: Lease\nTTL: 30s\nSafety: fencing\n");
	o.strategy = pglease::Strategy::ephemeral;
	o.ttl = 1500ms;
	EXPECT_EQ(pglease::describe(o),
	          "Provider: PostgreSQL\nStrategy: Ephemeral\nTTL: 1500ms\nSafety: fencing\n");
	o.strategy = pglease::Strategy::advisory;
	o.ttl = 600ms;
	EXPECT_EQ(pglease::describe(o), "Provider: PostgreSQL\nStrategy: Advisory\nTTL: 600ms\nSafety: none\n");
}

// connect(...) is noexcept: running out of memory while it builds the
// PostgreSQL locker must not std::terminate; it answers Errc::internal, or
// (when the locker itself was made) a locker whose every call reports it.
TEST(ClientConstruction, FailedAllocationInConnectReportsInternal)
{
	t_fail_allocations = true;
	auto connected = pglease::connect("");
	t_fail_allocations = false;
	if (!connected) {
		EXPECT_EQ(connected.error().code, Errc::internal) << connected.error();
		return;
	}
	pglease::Locker &client = **connected;
	auto lease = client.acquire("cxx/construction", {});
	ASSERT_FALSE(lease);
	EXPECT_EQ(lease.error().code, Errc::internal);
	EXPECT_NE(lease.error().message.find("construct"), std::string::npos) << lease.error();
	auto rows = pglease::status(client);
	ASSERT_FALSE(rows);
	EXPECT_EQ(rows.error().code, Errc::internal);
	bool ran = false;
	auto advised = pglease::with_advisory(client, "cxx/construction", 0ms, [&](pqxx::work &) { ran = true; });
	ASSERT_FALSE(advised);
	EXPECT_EQ(advised.error().code, Errc::internal);
	EXPECT_FALSE(ran);
}

// The PostgreSQL functions refuse a locker of another provider, before any I/O.
TEST(ClientConstruction, PostgresFunctionsRefuseAnotherProvidersLocker)
{
	auto memory = pglease::connect("memory:pg-functions");
	ASSERT_TRUE(memory) << memory.error();
	auto lease = (*memory)->acquire("cxx/other-provider", {});
	ASSERT_TRUE(lease) << lease.error();
	bool ran = false;
	auto wrote = pglease::fenced(**memory, *lease, [&](pqxx::work &) { ran = true; });
	ASSERT_FALSE(wrote);
	EXPECT_EQ(wrote.error().code, Errc::invalid_argument) << wrote.error();
	EXPECT_NE(wrote.error().message.find("PostgreSQL"), std::string::npos) << wrote.error();
	auto advised = pglease::with_advisory(**memory, "cxx/other-provider", 0ms, [&](pqxx::work &) { ran = true; });
	ASSERT_FALSE(advised);
	EXPECT_EQ(advised.error().code, Errc::invalid_argument) << advised.error();
	auto rows = pglease::status(**memory);
	ASSERT_FALSE(rows);
	EXPECT_EQ(rows.error().code, Errc::invalid_argument) << rows.error();
	EXPECT_FALSE(ran);
}

// ---- grants ------------------------------------------------------------------

TEST_F(ClientTest, AcquireGivesPositiveTokenAndValidLease)
{
	test_support::PgClient client{""};
	auto r = unique_resource();
	auto lease = client.acquire(r, opts(10s));
	ASSERT_TRUE(lease) << lease.error();
	EXPECT_GT(lease->token(), 0);
	EXPECT_EQ(lease->resource(), r);
	EXPECT_TRUE(lease->valid());
	EXPECT_GT(lease->remaining(), 9s);
	Admin admin;
	EXPECT_TRUE(admin.is_current(r, lease->token()));
}

// status shows each grant of a resource with its mode and limit (pg_lease 0.4.0)
TEST_F(ClientTest, StatusShowsModeAndLimitPerGrant)
{
	test_support::PgClient client{""};
	auto rw = unique_resource();
	auto sem = unique_resource();
	auto shared_opts = opts(10s);
	shared_opts.mode = pglease::Mode::shared;
	auto permit_opts = opts(10s);
	permit_opts.limit = 3;
	// the no-nested rule is per thread: each grant is taken in a thread of its own
	auto apart = [](auto fn) { return std::async(std::launch::async, fn).get(); };
	auto a = apart([&] { return client.acquire(rw, shared_opts); });
	auto b = apart([&] { return client.acquire(rw, shared_opts); });
	auto p = apart([&] { return client.acquire(sem, permit_opts); });
	ASSERT_TRUE(a) << a.error();
	ASSERT_TRUE(b) << b.error();
	ASSERT_TRUE(p) << p.error();
	auto rows = client.status();
	ASSERT_TRUE(rows) << rows.error();
	int readers = 0, permits = 0;
	for (const auto &info : *rows) {
		if (info.resource == rw) {
			EXPECT_EQ(info.mode, pglease::Mode::shared);
			EXPECT_EQ(info.limit, 0u);
			++readers;
		} else if (info.resource == sem) {
			EXPECT_EQ(info.mode, pglease::Mode::exclusive);
			EXPECT_EQ(info.limit, 3u);
			++permits;
		}
	}
	EXPECT_EQ(readers, 2) << "each reader is its own grant";
	EXPECT_EQ(permits, 1);
}

TEST_F(ClientTest, ContendedAcquireTimesOutWithinItsWait)
{
	test_support::PgClient a{""}, b{""};
	auto r = unique_resource();
	auto held = a.acquire(r, opts(10s));
	ASSERT_TRUE(held) << held.error();
	// another thread: this one holds a lease, and waiting here would be nested
	std::thread other([&] {
		auto t0 = std::chrono::steady_clock::now();
		auto second = b.acquire(r, opts(10s, 300ms));
		auto took = std::chrono::steady_clock::now() - t0;
		ASSERT_FALSE(second);
		EXPECT_EQ(second.error().code, Errc::timeout);
		EXPECT_GE(took, 250ms);
		EXPECT_LT(took, 2s) << "blocked far beyond the wait it asked for";
	});
	other.join();
}

TEST_F(ClientTest, ReleaseThenReacquireGetsHigherToken)
{
	test_support::PgClient client{""};
	auto r = unique_resource();
	std::int64_t first = 0;
	{
		auto lease = client.acquire(r, opts(10s));
		ASSERT_TRUE(lease) << lease.error();
		first = lease->token();
		ASSERT_TRUE(lease->release());
		EXPECT_FALSE(lease->valid());
	}
	auto again = client.acquire(r, opts(10s));
	ASSERT_TRUE(again) << again.error();
	EXPECT_GT(again->token(), first);
}

TEST_F(ClientTest, DestructorReleases)
{
	test_support::PgClient a{""}, b{""};
	auto r = unique_resource();
	std::int64_t token = 0;
	{
		auto lease = a.acquire(r, opts(30s));
		ASSERT_TRUE(lease) << lease.error();
		token = lease->token();
	}
	Admin admin;
	EXPECT_FALSE(admin.is_current(r, token));
	auto next = b.try_acquire(r, opts(30s));
	ASSERT_TRUE(next) << "not released by the destructor: " << next.error();
	EXPECT_GT(next->token(), token);
}

TEST_F(ClientTest, RenewExtendsTheLocalDeadline)
{
	test_support::PgClient client{""};
	auto o = opts(2s);
	o.auto_renew = false;
	auto lease = client.acquire(unique_resource(), o);
	ASSERT_TRUE(lease) << lease.error();
	std::this_thread::sleep_for(700ms);
	auto before = lease->remaining();
	ASSERT_TRUE(lease->renew());
	EXPECT_GT(lease->remaining(), before + 500ms);
}

TEST_F(ClientTest, AutoRenewKeepsLeasePastItsTtl)
{
	test_support::PgClient client{""};
	Admin admin; // connected before: its connection time is not counted in the lease's life
	auto r = unique_resource();
	auto lease = client.acquire(r, opts(1500ms));
	ASSERT_TRUE(lease) << lease.error();
	std::this_thread::sleep_for(4s);
	// the server first, then the client: the client's deadline is never later
	// than the server's expiry, so "not current" with "still valid" after it
	// would be a safety defect, not a slow machine
	bool current = admin.is_current(r, lease->token());
	bool valid = lease->valid();
	EXPECT_TRUE(current);
	EXPECT_TRUE(valid);
	EXPECT_TRUE(current || !valid) << "the client says held after the server expired it";
}

TEST_F(ClientTest, HeartbeatOverHalfTtlIsRejected)
{
	test_support::PgClient client{""};
	auto o = opts(3s);
	o.heartbeat = 2s;
	auto lease = client.acquire(unique_resource(), o);
	ASSERT_FALSE(lease);
	EXPECT_EQ(lease.error().code, Errc::invalid_argument);
}

TEST_F(ClientTest, InvalidArgumentsMapTo22023)
{
	test_support::PgClient client{""};
	auto lease = client.acquire("", opts(10s));
	ASSERT_FALSE(lease);
	EXPECT_EQ(lease.error().code, Errc::invalid_argument);
	EXPECT_EQ(lease.error().sqlstate, "22023");
	auto longer = client.acquire(unique_resource(), opts(48h));
	ASSERT_FALSE(longer);
	EXPECT_EQ(longer.error().sqlstate, "22023");
	EXPECT_FALSE(pglease::is_retryable(longer.error()));
}

// ---- loss ----------------------------------------------------------------------

TEST_F(ClientTest, RenewAfterTakeoverIsReportedLostExactlyOnce)
{
	test_support::PgClient a{""}, b{""};
	auto r = unique_resource();
	auto o = opts(1s);
	o.auto_renew = false;
	auto lease = a.acquire(r, o);
	ASSERT_TRUE(lease) << lease.error();
	std::atomic<int> calls{0};
	lease->on_lost([&](const pglease::Error &e) {
		EXPECT_EQ(e.code, Errc::lost);
		calls++;
	});
	std::this_thread::sleep_for(1200ms);
	auto taker = b.acquire(r, opts(10s));
	ASSERT_TRUE(taker) << taker.error();
	auto renewed = lease->renew();
	ASSERT_FALSE(renewed);
	EXPECT_EQ(renewed.error().code, Errc::lost);
	(void)lease->renew();
	EXPECT_EQ(calls.load(), 1);
	EXPECT_FALSE(lease->valid());
	EXPECT_TRUE(lease->cancel_token().cancelled());
	EXPECT_GT(taker->token(), lease->token());
}

TEST_F(ClientTest, BreakIsNoticedByAutoRenewAndCallbackRunsOnce)
{
	test_support::PgClient client{""};
	auto r = unique_resource();
	auto lease = client.acquire(r, opts(1500ms));
	ASSERT_TRUE(lease) << lease.error();
	std::atomic<int> calls{0};
	lease->on_lost([&](const pglease::Error &) { calls++; });
	Admin admin;
	admin.exec("SELECT lease.break('" + r + "')");
	EXPECT_TRUE(eventually([&] { return calls.load() == 1; }, 2s)) << "loss not reported";
	std::this_thread::sleep_for(1s);
	EXPECT_EQ(calls.load(), 1);
	EXPECT_FALSE(lease->valid());
}

TEST_F(ClientTest, NestedAcquireIsRefused)
{
	test_support::PgClient client{""};
	auto outer = client.acquire(unique_resource(), opts(10s));
	ASSERT_TRUE(outer) << outer.error();
	auto inner = client.acquire(unique_resource(), opts(10s, 1s));
	ASSERT_FALSE(inner);
	EXPECT_EQ(inner.error().code, Errc::nested);
	auto try_inner = client.try_acquire(unique_resource(), opts(10s));
	ASSERT_FALSE(try_inner);
	EXPECT_EQ(try_inner.error().code, Errc::nested);
	auto allowed = opts(10s);
	allowed.allow_nested_try = true;
	auto explicit_try = client.try_acquire(unique_resource(), allowed);
	EXPECT_TRUE(explicit_try) << explicit_try.error();
	// another thread holds nothing: not nested
	std::thread other([&] {
		auto l = client.acquire(unique_resource(), opts(10s, 1s));
		EXPECT_TRUE(l) << l.error();
	});
	other.join();
}

// ---- fenced writes ------------------------------------------------------------

TEST_F(ClientTest, FencedWriteCommitsWhileHeld)
{
	Admin admin;
	admin.exec("CREATE TABLE IF NOT EXISTS cxx_ledger (resource text, token bigint)");
	test_support::PgClient client{""};
	auto r = unique_resource();
	auto lease = client.acquire(r, opts(10s));
	ASSERT_TRUE(lease) << lease.error();
	auto wrote = client.fenced(*lease, [&](pqxx::work &tx) {
		tx.exec_params("INSERT INTO cxx_ledger VALUES ($1, $2)", r, lease->token());
		return 42;
	});
	ASSERT_TRUE(wrote) << wrote.error();
	EXPECT_EQ(*wrote, 42);
	pqxx::nontransaction tx{admin.conn()};
	EXPECT_EQ(tx.exec_params1("SELECT count(*) FROM cxx_ledger WHERE resource = $1", r)[0].as<int>(), 1);
}

TEST_F(ClientTest, FencedWriteWithStaleTokenIsRejectedAndNotWritten)
{
	Admin admin;
	admin.exec("CREATE TABLE IF NOT EXISTS cxx_ledger (resource text, token bigint)");
	test_support::PgClient a{""}, b{""};
	auto r = unique_resource();
	auto o = opts(1s);
	o.auto_renew = false;
	auto lease = a.acquire(r, o);
	ASSERT_TRUE(lease) << lease.error();
	std::this_thread::sleep_for(1200ms);
	auto taker = b.acquire(r, opts(10s));
	ASSERT_TRUE(taker) << taker.error();
	bool ran = false;
	auto wrote = a.fenced(*lease, [&](pqxx::work &tx) {
		ran = true;
		tx.exec_params("INSERT INTO cxx_ledger VALUES ($1, $2)", r, lease->token());
	});
	ASSERT_FALSE(wrote);
	EXPECT_EQ(wrote.error().code, Errc::lost);
	EXPECT_EQ(wrote.error().sqlstate, "LS001");
	EXPECT_FALSE(ran) << "the write ran after a failed fence";
	pqxx::nontransaction tx{admin.conn()};
	EXPECT_EQ(tx.exec_params1("SELECT count(*) FROM cxx_ledger WHERE resource = $1", r)[0].as<int>(), 0);
	EXPECT_FALSE(lease->valid());
}

TEST_F(ClientTest, ExceptionInFencedCallbackRollsBackAndIsReported)
{
	Admin admin;
	admin.exec("CREATE TABLE IF NOT EXISTS cxx_ledger (resource text, token bigint)");
	test_support::PgClient client{""};
	auto r = unique_resource();
	auto lease = client.acquire(r, opts(10s));
	ASSERT_TRUE(lease) << lease.error();
	auto wrote = client.fenced(*lease, [&](pqxx::work &tx) {
		tx.exec_params("INSERT INTO cxx_ledger VALUES ($1, $2)", r, lease->token());
		throw std::runtime_error("application failure");
	});
	ASSERT_FALSE(wrote);
	EXPECT_EQ(wrote.error().code, Errc::internal);
	pqxx::nontransaction tx{admin.conn()};
	EXPECT_EQ(tx.exec_params1("SELECT count(*) FROM cxx_ledger WHERE resource = $1", r)[0].as<int>(), 0);
	EXPECT_TRUE(lease->valid());
}

// ---- advisory ----------------------------------------------------------------------

TEST_F(ClientTest, AdvisoryStrategyTimesOutCleanly)
{
	test_support::PgClient client{""};
	auto r = unique_resource();
	Admin admin;
	pqxx::work holder{admin.conn()};
	holder.exec_params("SELECT pg_advisory_xact_lock(hashtextextended('pglease:' || $1, 0))", r);
	bool ran = false;
	auto t0 = std::chrono::steady_clock::now();
	auto done = client.with_advisory(r, 200ms, [&](pqxx::work &) { ran = true; });
	auto took = std::chrono::steady_clock::now() - t0;
	ASSERT_FALSE(done);
	EXPECT_EQ(done.error().code, Errc::timeout);
	EXPECT_FALSE(ran);
	EXPECT_LT(took, 1500ms);
	holder.commit();
	auto later = client.with_advisory(r, 200ms, [&](pqxx::work &) { ran = true; });
	EXPECT_TRUE(later) << later.error();
	EXPECT_TRUE(ran);
}

TEST_F(ClientTest, AcquireWithAdvisoryStrategyPointsToWithAdvisory)
{
	test_support::PgClient client{""};
	auto o = opts(1s);
	o.strategy = pglease::Strategy::advisory;
	auto lease = client.acquire(unique_resource(), o);
	ASSERT_FALSE(lease);
	EXPECT_EQ(lease.error().code, Errc::invalid_argument);
}

// ---- connections -----------------------------------------------------------------

TEST_F(ClientTest, AcquireWhileServerDownReturnsUnavailablePromptly)
{
	pglease::ClientOptions co;
	co.connect_timeout = 1s;
	test_support::PgClient client{"host=/nonexistent-pglease-socket-dir port=1", co};
	auto t0 = std::chrono::steady_clock::now();
	auto lease = client.acquire(unique_resource(), opts(5s, 5s));
	auto first = std::chrono::steady_clock::now() - t0;
	ASSERT_FALSE(lease);
	EXPECT_EQ(lease.error().code, Errc::unavailable);
	EXPECT_TRUE(pglease::is_retryable(lease.error()));
	EXPECT_LT(first, 2s);
	t0 = std::chrono::steady_clock::now();
	auto again = client.acquire(unique_resource(), opts(5s, 5s));
	ASSERT_FALSE(again);
	EXPECT_EQ(again.error().code, Errc::unavailable);
	EXPECT_LT(std::chrono::steady_clock::now() - t0, 100ms) << "backoff should answer at once";
}

TEST_F(ClientTest, TerminatedConnectionIsReplacedAndLeaseKept)
{
	test_support::PgClient client{"application_name=cxx_terminated"};
	auto r = unique_resource();
	auto lease = client.acquire(r, opts(1500ms));
	ASSERT_TRUE(lease) << lease.error();
	Admin admin;
	admin.exec(
	    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'cxx_terminated'");
	std::this_thread::sleep_for(2500ms);
	EXPECT_TRUE(lease->valid()) << "auto-renew did not reconnect";
	EXPECT_TRUE(admin.is_current(r, lease->token()));
}

// A session-bound leader whose connection ended cannot proclaim, and the
// refusal names its election (it printed "leadership of  + resource_ +
// ended": the name was inside the string literal).
TEST_F(ClientTest, EphemeralLeadershipEndedWithItsConnectionNamesItsElection)
{
	test_support::PgClient client{"application_name=cxx_ephemeral_leader"};
	auto e = unique_resource();
	auto o = opts(30s);
	o.strategy = pglease::Strategy::ephemeral;
	o.auto_renew = false;
	auto leadership = client.campaign(e, "first", o);
	ASSERT_TRUE(leadership) << leadership.error();
	Admin admin;
	admin.exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = "
	           "'cxx_ephemeral_leader'");
	bool refused = false;
	pglease::Error error;
	(void)eventually(
	    [&] {
		    auto said = leadership->proclaim("second");
		    if (!said)
			    error = said.error();
		    refused = !said && said.error().code == Errc::lost;
		    return refused;
	    },
	    3s);
	ASSERT_TRUE(refused) << "proclaimed after its connection ended: " << error;
	EXPECT_NE(error.message.find("\"" + e + "\""), std::string::npos) << error;
	EXPECT_EQ(error.message.find("resource_"), std::string::npos) << error;
}

TEST_F(ClientTest, EphemeralLeaseEndsWithItsConnection)
{
	test_support::PgClient client{"application_name=cxx_ephemeral"};
	auto r = unique_resource();
	auto o = opts(30s);
	o.strategy = pglease::Strategy::ephemeral;
	auto lease = client.acquire(r, o);
	ASSERT_TRUE(lease) << lease.error();
	std::atomic<int> calls{0};
	lease->on_lost([&](const pglease::Error &) { calls++; });
	Admin admin;
	admin.exec(
	    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'cxx_ephemeral'");
	test_support::PgClient other{""};
	auto o2 = opts(10s);
	o2.allow_nested_try = true; // this thread still holds `lease` locally
	bool taken = eventually([&] { return static_cast<bool>(other.try_acquire(r, o2)); }, 3s);
	EXPECT_TRUE(taken) << "session-bound grant outlived its connection";
	auto renewed = lease->renew();
	EXPECT_FALSE(renewed);
	EXPECT_TRUE(eventually([&] { return calls.load() == 1; }, 1s));
	EXPECT_FALSE(lease->valid());
}

// ---- retries of renew and release (issue 35) --------------------------------------
// Renew and release name one exact grant (resource, token), so the client
// repeats one that failed for a reason that may pass: a lease's release until
// its local deadline, every renew and token call within its own bound.

namespace {

// RowLock -- another session holding FOR SHARE on a grant's row in an open
// transaction, as a fenced write does: every renew and release of that grant
// waits for it (and is cancelled by its statement timeout, 57014)
class RowLock {
public:
	RowLock(const std::string &resource, std::int64_t token) : conn_(""), tx_(conn_)
	{
		(void)tx_.exec_params1("SELECT 1 FROM lease.grants WHERE resource = $1 AND token = $2 FOR SHARE",
		                       resource, token);
	}
	~RowLock()
	{
		try {
			let_go();
		} catch (...) {
		}
	}
	void let_go()
	{
		if (!done_)
			tx_.commit();
		done_ = true;
	}

private:
	pqxx::connection conn_;
	pqxx::work tx_;
	bool done_ = false;
};

// terminate -- end the backends of an application_name (at least one) and
// wait until they are gone
bool
terminate(Admin &admin, const std::string &application)
{
	const std::string of = " FROM pg_stat_activity WHERE application_name = '" + application + "'";
	if (admin.one("SELECT count(pg_terminate_backend(pid))" + of)[0].as<int>() == 0)
		return false;
	return eventually([&] { return admin.one("SELECT count(*)" + of)[0].as<int>() == 0; }, 5s);
}

} // namespace

// The observed failure: on a hot resource a release was cancelled by its
// statement timeout, the client gave up, and every waiter timed out while
// the grant ran out its 30 s TTL.  Now the release is tried again until the
// row is let go, and the waiter is granted then.
TEST_F(ClientTest, ReleaseRetriedAfterAStatementTimeoutFreesTheLeaseAtOnce)
{
	pglease::ClientOptions co;
	co.statement_grace = 300ms;
	test_support::PgClient holder{"", co}, other{""};
	auto r = unique_resource();
	auto lease = holder.acquire(r, opts(30s));
	ASSERT_TRUE(lease) << lease.error();
	const auto token = lease->token();
	RowLock row{r, token};
	auto waiter = std::async(std::launch::async, [&] { // another thread: this one holds a lease
		auto t0 = std::chrono::steady_clock::now();
		auto next = other.acquire(r, opts(30s, 10s));
		return std::make_pair(std::move(next), std::chrono::steady_clock::now() - t0);
	});
	std::thread letting_go([&] {
		std::this_thread::sleep_for(1s); // three statement timeouts of the release
		row.let_go();
	});
	auto t0 = std::chrono::steady_clock::now();
	auto released = lease->release();
	auto took = std::chrono::steady_clock::now() - t0;
	letting_go.join();
	EXPECT_TRUE(released) << "a release cancelled by its statement timeout was not tried again: "
	                      << released.error();
	EXPECT_GE(took, 900ms) << "released through another session's row lock?";
	EXPECT_LT(took, 5s);
	auto [next, waited] = waiter.get();
	ASSERT_TRUE(next) << "the waiter was not granted after the row was let go: " << next.error();
	EXPECT_GT(next->token(), token);
	EXPECT_LT(waited, 5s) << "the waiter waited for the grant's TTL";
}

// A renewal cancelled by its statement timeout is tried again (the renewal
// thread, every 200 ms) until the local deadline: the lease is never lost
// when the row is let go before it, and the server's grant is extended.
TEST_F(ClientTest, RenewalRetriedAfterAStatementTimeoutKeepsTheLease)
{
	pglease::ClientOptions co;
	co.statement_grace = 300ms;
	test_support::PgClient client{"", co};
	Admin admin;
	auto r = unique_resource();
	auto lease = client.acquire(r, opts(3s)); // renewed every second
	ASSERT_TRUE(lease) << lease.error();
	std::atomic<int> lost{0};
	lease->on_lost([&](const pglease::Error &) { lost++; });
	{
		RowLock row{r, lease->token()};
		std::this_thread::sleep_for(2s); // the renewal at 1 s waits and is cancelled, again and again
	}
	std::this_thread::sleep_for(1500ms); // past the deadline the first grant had
	EXPECT_EQ(lost.load(), 0);
	EXPECT_TRUE(lease->valid());
	EXPECT_TRUE(admin.is_current(r, lease->token()))
	    << "the renewals after the row was let go did not reach the server";
}

// A pooled connection whose backend was terminated (a restart, a failover,
// an idle timeout) fails the first try at once; the retry runs on a fresh
// connection, so renew, the token calls and release succeed.
TEST_F(ClientTest, RenewAndReleaseOnATerminatedConnectionAreRetriedOnAFreshOne)
{
	test_support::PgClient client{"application_name=cxx_retry_fresh"};
	Admin admin;
	auto r = unique_resource();
	auto o = opts(10s);
	o.auto_renew = false;
	o.holder = "fresh";
	o.reclaim = true; // the label as given, for the token-level calls
	auto lease = client.acquire(r, o);
	ASSERT_TRUE(lease) << lease.error();

	ASSERT_TRUE(terminate(admin, "cxx_retry_fresh")) << "no pooled connection to terminate";
	auto renewed = lease->renew();
	EXPECT_TRUE(renewed) << renewed.error();
	EXPECT_TRUE(lease->valid());

	ASSERT_TRUE(terminate(admin, "cxx_retry_fresh")) << "no pooled connection to terminate";
	auto by_token = client.renew(r, lease->token(), "fresh", 10s);
	ASSERT_TRUE(by_token) << by_token.error();
	EXPECT_TRUE(*by_token);

	ASSERT_TRUE(terminate(admin, "cxx_retry_fresh")) << "no pooled connection to terminate";
	auto released = lease->release();
	EXPECT_TRUE(released) << released.error();
	EXPECT_FALSE(admin.is_current(r, lease->token())) << "the release did not reach the server";
}

// A permanent error (here 42501: the role may no longer run lease.release)
// is not retried: the release answers at once, long before its bound (the
// lease's local deadline, 30 s away), and changes nothing.
TEST_F(ClientTest, ReleaseFailingForGoodIsNotRetried)
{
	Admin admin;
	admin.exec("DROP ROLE IF EXISTS pglease_api_norelease");
	admin.exec("CREATE ROLE pglease_api_norelease LOGIN");
	auto r = unique_resource();
	std::int64_t token = 0;
	{
		test_support::PgClient client{"user=pglease_api_norelease"};
		auto lease = client.acquire(r, opts(30s));
		ASSERT_TRUE(lease) << lease.error();
		token = lease->token();
		// every role but superusers: back at the end of this block, whatever happens
		admin.exec("REVOKE EXECUTE ON FUNCTION lease.release(pg_catalog.text, pg_catalog.int8) FROM PUBLIC");
		struct Regrant {
			Admin &admin;
			~Regrant()
			{
				admin.exec(
				    "GRANT EXECUTE ON FUNCTION lease.release(pg_catalog.text, pg_catalog.int8) TO PUBLIC");
			}
		} regrant{admin};
		auto t0 = std::chrono::steady_clock::now();
		auto released = lease->release();
		auto took = std::chrono::steady_clock::now() - t0;
		ASSERT_FALSE(released);
		EXPECT_EQ(released.error().code, Errc::permission) << released.error();
		EXPECT_EQ(released.error().sqlstate, "42501");
		EXPECT_LT(took, 1s) << "a permanent error was retried";
	}
	EXPECT_TRUE(admin.is_current(r, token)) << "a refused release changed the grant";
	admin.exec("SELECT lease.release('" + r + "', " + std::to_string(token) + ")");
	admin.exec("DROP ROLE pglease_api_norelease");
}

// The destructor's retries stop at the lease's local deadline (past it the
// grant is over anyway): it never blocks longer, though the row stays locked.
TEST_F(ClientTest, DestructorRetriesTheReleaseNoLongerThanTheLocalDeadline)
{
	pglease::ClientOptions co;
	co.statement_grace = 300ms;
	test_support::PgClient client{"", co};
	auto r = unique_resource();
	auto o = opts(2s);
	o.auto_renew = false;
	auto lease = std::make_unique<pglease::Result<pglease::Lease>>(client.acquire(r, o));
	ASSERT_TRUE(*lease) << lease->error();
	RowLock row{r, (*lease)->token()};
	auto bound = (*lease)->remaining();
	auto t0 = std::chrono::steady_clock::now();
	lease.reset();
	auto took = std::chrono::steady_clock::now() - t0;
	std::cout << "destructor: " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
	          << " ms, the local deadline " << bound.count() << " ms away\n";
	EXPECT_LE(took, bound + 100ms) << "the destructor blocked past the lease's local deadline";
	EXPECT_GE(took, 600ms) << "the release was not tried again after its first statement timeout";
}

// A session-bound grant needs no retry: a failed release closes its session,
// and the backend's exit ends the grant, so the next taker gets it when the
// row is let go, and the release answers within its own bound.
TEST_F(ClientTest, SessionBoundReleaseThatTimesOutEndsTheGrantWithItsSession)
{
	pglease::ClientOptions co;
	co.statement_grace = 300ms;
	test_support::PgClient client{"", co}, other{""};
	auto r = unique_resource();
	auto o = opts(30s);
	o.strategy = pglease::Strategy::ephemeral;
	auto lease = client.acquire(r, o);
	ASSERT_TRUE(lease) << lease.error();
	RowLock row{r, lease->token()};
	auto t0 = std::chrono::steady_clock::now();
	auto released = lease->release();
	auto took = std::chrono::steady_clock::now() - t0;
	row.let_go();
	ASSERT_FALSE(released) << "released through another session's row lock?";
	EXPECT_EQ(released.error().code, Errc::timeout) << released.error();
	EXPECT_LT(took, 1500ms) << "a session-bound release was retried";
	auto o2 = opts(10s);
	o2.allow_nested_try = true;
	EXPECT_TRUE(eventually([&] { return static_cast<bool>(other.try_acquire(r, o2)); }, 3s))
	    << "the grant outlived the session its failed release closed";
}

// Restarts the test cluster: keep these last in the file.
TEST_F(ClientTest, ServerRestartWhileLeaseHeldKeepsLeaseWithinTtl)
{
	const char *cluster = std::getenv("PGLEASE_CLUSTER");
	ASSERT_NE(cluster, nullptr) << "PGLEASE_CLUSTER unset: run through make test";
	test_support::PgClient client{""};
	auto r = unique_resource();
	auto lease = client.acquire(r, opts(20s));
	ASSERT_TRUE(lease) << lease.error();
	ASSERT_EQ(
	    run_shell(std::string{PGLEASE_SOURCE_DIR} + "/scripts/cluster.sh restart '" + cluster + "' fast"), 0);
	ASSERT_TRUE(eventually([&] { return static_cast<bool>(lease->renew()); }, 10s)) << "no reconnect";
	EXPECT_TRUE(lease->valid());
	Admin admin;
	EXPECT_TRUE(admin.is_current(r, lease->token()));
}

TEST_F(ClientTest, ServerDownPastTtlReportsLeaseLostOnce)
{
	const char *cluster = std::getenv("PGLEASE_CLUSTER");
	ASSERT_NE(cluster, nullptr) << "PGLEASE_CLUSTER unset: run through make test";
	pglease::ClientOptions co;
	co.connect_timeout = 1s;
	test_support::PgClient client{"", co};
	auto lease = client.acquire(unique_resource(), opts(1200ms));
	ASSERT_TRUE(lease) << lease.error();
	std::atomic<int> calls{0};
	lease->on_lost([&](const pglease::Error &e) {
		EXPECT_EQ(e.code, Errc::lost);
		calls++;
	});
	std::string script = std::string{PGLEASE_SOURCE_DIR} + "/scripts/cluster.sh";
	ASSERT_EQ(run_shell(script + " stop '" + cluster + "' immediate"), 0);
	bool reported = eventually([&] { return calls.load() == 1; }, 4s);
	ASSERT_EQ(run_shell(script + " start '" + cluster + "' \"$(cat '" + cluster + "/mode')\""), 0);
	EXPECT_TRUE(reported) << "loss not reported while the server was down";
	EXPECT_FALSE(lease->valid());
	std::this_thread::sleep_for(500ms);
	EXPECT_EQ(calls.load(), 1);
}

// issue 22: the holder forms run lease.renew / lease.release only when the
// grant (resource, token) is that holder's, in one statement: the right token
// with another label changes nothing (the lease is not extended, not ended).
// On the database of dsn; its extension's version decides how (0.5.0 on: the
// holder named to lease.renew/lease.release; 0.4.0: through lease.leases).
namespace {

void
expect_holder_calls_act_only_on_that_holders_grant(const std::string &dsn, const std::string &r)
{
	test_support::PgClient client{dsn};
	pglease::LeaseOptions o;
	o.ttl = 3s;
	o.holder = "alice";
	o.reclaim = true; // the label as given, for the token-level calls
	auto lease = client.acquire(r, o);
	ASSERT_TRUE(lease) << lease.error();
	const auto token = lease->detach();
	Admin admin{dsn};
	auto remaining_ms = [&] {
		auto row = admin.one("SELECT coalesce((SELECT (extract(epoch FROM remaining) * 1000)::bigint"
		                     " FROM lease.leases WHERE resource = '" +
		                     r + "'), -1)");
		return row[0].as<long long>();
	};
	for (const char *other : {"mallory", "alic", "alice2", "ALICE"}) {
		auto renewed = client.renew(r, token, other, 60s);
		ASSERT_TRUE(renewed) << other << ": " << renewed.error();
		EXPECT_FALSE(*renewed) << "renewed as " << other;
		auto released = client.release(r, token, other);
		ASSERT_TRUE(released) << other << ": " << released.error();
		EXPECT_FALSE(*released) << "released as " << other;
	}
	EXPECT_TRUE(admin.is_current(r, token)) << "another holder ended the lease";
	EXPECT_LE(remaining_ms(), 3000) << "another holder extended the lease";
	auto empty = client.release(r, token, "");
	ASSERT_FALSE(empty) << "an empty holder must not mean any holder";
	EXPECT_EQ(empty.error().code, Errc::invalid_argument) << empty.error();
	auto renewed = client.renew(r, token, "alice", 60s);
	ASSERT_TRUE(renewed) << renewed.error();
	EXPECT_TRUE(*renewed);
	EXPECT_GT(remaining_ms(), 30000) << "the holder's renew did not extend the lease";
	auto stale = client.release(r, token + 1, "alice");
	ASSERT_TRUE(stale) << stale.error();
	EXPECT_FALSE(*stale);
	auto released = client.release(r, token, "alice");
	ASSERT_TRUE(released) << released.error();
	EXPECT_TRUE(*released);
	EXPECT_FALSE(admin.is_current(r, token));
}

} // namespace

TEST_F(ClientTest, TokenCallsWithAHolderActOnlyOnThatHoldersGrant)
{
	expect_holder_calls_act_only_on_that_holders_grant("", unique_resource());
}

// A database still at pg_lease 0.4.0 (extension_minimum_version): the client
// works there, the holder matched through lease.leases; one re-created older
// under a pooled connection that had read 0.5.0 fails that connection's
// holder call once (42883), and the next connection reads the version again.
TEST_F(ClientTest, TokenCallsWithAHolderWorkOnTheOldestExtensionItAccepts)
{
	const std::string db = "pglease_client_040";
	ASSERT_EQ(run_shell("psql -X -q -d postgres -c 'DROP DATABASE IF EXISTS " + db +
	                    "' -c 'CREATE DATABASE " + db + "' && psql -X -q -d " + db +
	                    " -c \"CREATE EXTENSION pg_lease VERSION '0.4.0'\""),
	          0);
	expect_holder_calls_act_only_on_that_holders_grant("dbname=" + db, unique_resource());

	ASSERT_EQ(run_shell("psql -X -q -d " + db + " -c 'ALTER EXTENSION pg_lease UPDATE'"), 0);
	{
		test_support::PgClient client{"dbname=" + db};
		auto o = opts(30s);
		o.holder = "bob";
		o.reclaim = true;
		auto r = unique_resource();
		auto lease = client.acquire(r, o); // the pooled connection reads 0.5.0
		ASSERT_TRUE(lease) << lease.error();
		const auto token = lease->detach();
		ASSERT_EQ(run_shell("psql -X -q -d " + db +
		                    " -c 'DROP EXTENSION pg_lease CASCADE' -c \"CREATE EXTENSION pg_lease VERSION '0.4.0'\""),
		          0);
		auto missing = client.release(r, token, "bob");
		ASSERT_FALSE(missing) << "lease.release naming the holder ran on pg_lease 0.4.0";
		EXPECT_EQ(missing.error().code, Errc::not_installed) << missing.error();
		auto r2 = unique_resource();
		auto again = client.acquire(r2, o); // a new connection, which reads 0.4.0
		ASSERT_TRUE(again) << again.error();
		const auto token2 = again->detach();
		auto released = client.release(r2, token2, "bob");
		ASSERT_TRUE(released) << "the connection that read 0.5.0 was kept: " << released.error();
		EXPECT_TRUE(*released);
	}
	EXPECT_EQ(run_shell("psql -X -q -d postgres -c 'DROP DATABASE " + db + " WITH (FORCE)'"), 0);
}

// ---- the CLI -----------------------------------------------------------------------

TEST_F(ClientTest, CliRunExportsTokenAndReturnsCommandStatus)
{
	std::string cli = PGLEASE_CLI;
	auto r = unique_resource();
	EXPECT_EQ(
	    run_shell(cli + " run --resource '" + r +
	              "' --ttl 5s -- sh -c 'test \"$PGLEASE_TOKEN\" -gt 0 && test \"$PGLEASE_RESOURCE\" = \"" +
	              r + "\"'"),
	    0);
	EXPECT_EQ(run_shell(cli + " run --resource '" + r + "' --ttl 5s -- sh -c 'exit 3'"), 3);
}

TEST_F(ClientTest, CliRunNotAcquiredExits75)
{
	std::string cli = PGLEASE_CLI;
	auto r = unique_resource();
	Admin admin;
	ASSERT_GT(admin.acquire(r, "30 s"), 0);
	EXPECT_EQ(run_shell(cli + " run --resource '" + r + "' --ttl 5s --wait 200ms -- true 2>/dev/null"), 75);
}

TEST_F(ClientTest, CliRunStopsCommandWhenLeaseLostAndExits76)
{
	std::string cli = PGLEASE_CLI;
	auto r = unique_resource();
	std::atomic<int> code{-1};
	auto t0 = std::chrono::steady_clock::now();
	std::thread runner(
	    [&] { code = run_shell(cli + " run --resource '" + r + "' --ttl 2s -- sleep 30 2>/dev/null"); });
	Admin admin;
	ASSERT_TRUE(eventually(
	    [&] {
		    return admin.one("SELECT count(*) FROM lease.leases WHERE resource = '" + r + "'")[0].as<int>() ==
		           1;
	    },
	    5s));
	admin.exec("SELECT lease.break('" + r + "')");
	runner.join();
	EXPECT_EQ(code.load(), 76);
	EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s) << "the command was not stopped";
}

TEST_F(ClientTest, CliAcquireRenewReleaseAndStatus)
{
	std::string cli = PGLEASE_CLI;
	auto r = unique_resource();
	std::string out = "/tmp/pglease_cli_token_" + std::to_string(getpid());
	ASSERT_EQ(run_shell(cli + " acquire --resource '" + r + "' --ttl 30s --holder cli-test --reclaim > " + out), 0);
	std::ifstream in{out};
	long long token = 0;
	in >> token;
	std::remove(out.c_str());
	ASSERT_GT(token, 0);
	Admin admin;
	EXPECT_TRUE(admin.is_current(r, token)) << "acquire must leave the lease held after the CLI exits";
	EXPECT_EQ(run_shell(cli + " acquire --resource '" + r + "' --ttl 30s 2>/dev/null"), 75);
	EXPECT_EQ(run_shell(cli + " renew --resource '" + r + "' --token " + std::to_string(token) +
	                    " --holder cli-test --ttl 30s"),
	          0);
	EXPECT_EQ(run_shell(cli + " status | grep -q '" + r + "'"), 0);
	EXPECT_EQ(run_shell(cli + " release --resource '" + r + "' --token " + std::to_string(token) +
	                    " --holder cli-test"),
	          0);
	EXPECT_EQ(run_shell(cli + " release --resource '" + r + "' --token " + std::to_string(token) +
	                    " --holder cli-test 2>/dev/null"),
	          76);
	EXPECT_EQ(run_shell(cli + " acquire --resource '" + r + "' 2>/dev/null"), 64);
}

TEST_F(ClientTest, CliHelpAndVersionExit0WithUsageOnStdout)
{
	std::string cli = PGLEASE_CLI;
	EXPECT_EQ(run_shell(cli + " help 2>/dev/null | grep -q '^usage: pglease'"), 0);
	EXPECT_EQ(run_shell(cli + " help >/dev/null 2>&1"), 0);
	EXPECT_EQ(run_shell(cli + " run --help 2>/dev/null | grep -q '^usage: pglease'"), 0);
	EXPECT_EQ(run_shell(cli + " run --help >/dev/null 2>&1"), 0);
	EXPECT_EQ(run_shell(cli + " --version >/dev/null 2>&1"), 0);
	EXPECT_EQ(run_shell(cli + " --version 2>/dev/null | grep -qF 'pglease " +
	                    std::string{pglease::client_version} + "' && " + cli +
	                    " --version | grep -qF 'pg_lease " + std::string{pglease::extension_version} + "'"),
	          0)
	    << "--version must print the client version and the extension version it was built for";
}

// The child's environment is built before fork (no setenv beside the renewal
// thread): the inherited PGLEASE_TOKEN is replaced, not doubled.
TEST_F(ClientTest, CliRunReplacesInheritedLeaseVariables)
{
	std::string cli = PGLEASE_CLI;
	auto r = unique_resource();
	EXPECT_EQ(
	    run_shell("PGLEASE_TOKEN=stale PGLEASE_RESOURCE=stale " + cli + " run --resource '" + r +
	              "' --ttl 5s -- sh -c 'test \"$PGLEASE_TOKEN\" -gt 0 && test \"$PGLEASE_RESOURCE\" = \"" +
	              r + "\" && test $(env | grep -c ^PGLEASE_TOKEN=) -eq 1'"),
	    0);
}

TEST_F(ClientTest, CliRunOfMissingCommandExits127AndReleases)
{
	std::string cli = PGLEASE_CLI;
	auto r = unique_resource();
	EXPECT_EQ(
	    run_shell(cli + " run --resource '" + r + "' --ttl 30s -- /nonexistent/pglease-cmd 2>/dev/null"),
	    127);
	Admin admin;
	EXPECT_EQ(admin.one("SELECT count(*) FROM lease.leases WHERE resource = '" + r + "'")[0].as<int>(), 0)
	    << "the lease must be released when the command cannot run";
}

// libpqxx 6 throws insufficient_privilege without its SQLSTATE: the CLI must
// still answer 77 (permission), not 70 (internal).
TEST_F(ClientTest, CliRenewAndReleaseOfAnotherRolesLeaseExit77)
{
	std::string cli = PGLEASE_CLI;
	auto r = unique_resource();
	Admin admin;
	admin.exec("DROP ROLE IF EXISTS pglease_cli_other");
	admin.exec("CREATE ROLE pglease_cli_other LOGIN");
	std::int64_t token = admin.acquire(r, "30 s");
	ASSERT_GT(token, 0);
	std::string as_other = cli + " --dsn 'user=pglease_cli_other' ";
	// the right holder label ('admin', Admin::acquire's): the role is what refuses
	EXPECT_EQ(run_shell(as_other + "renew --resource '" + r + "' --token " + std::to_string(token) +
	                    " --holder admin --ttl 30s 2>/dev/null"),
	          77);
	EXPECT_EQ(run_shell(as_other + "release --resource '" + r + "' --token " + std::to_string(token) +
	                    " --holder admin 2>/dev/null"),
	          77);
	EXPECT_TRUE(admin.is_current(r, token)) << "another role's renew/release must leave the lease alone";
	admin.exec("DROP ROLE pglease_cli_other");
}

TEST_F(ClientTest, PermissionErrorCarriesSqlstate42501)
{
	auto r = unique_resource();
	Admin admin;
	admin.exec("DROP ROLE IF EXISTS pglease_api_other");
	admin.exec("CREATE ROLE pglease_api_other LOGIN");
	std::int64_t token = admin.acquire(r, "30 s");
	ASSERT_GT(token, 0);
	{
		test_support::PgClient other{"user=pglease_api_other"};
		auto renewed = other.renew(r, token, 30s);
		ASSERT_FALSE(renewed);
		EXPECT_EQ(renewed.error().code, Errc::permission) << renewed.error();
		EXPECT_EQ(renewed.error().sqlstate, "42501");
	}
	admin.exec("DROP ROLE pglease_api_other");
}

// libpqxx 6 throws serialization failures outside sql_error: they must still
// be reported with their SQLSTATE, so is_retryable() says to retry.
TEST_F(ClientTest, SerializationFailureInFencedCallbackIsRetryable)
{
	test_support::PgClient client{""};
	auto lease = client.acquire(unique_resource(), opts(10s));
	ASSERT_TRUE(lease) << lease.error();
	auto done = client.fenced(
	    *lease, [](pqxx::work &tx) { tx.exec("DO $$BEGIN RAISE EXCEPTION USING ERRCODE = '40001'; END$$"); });
	ASSERT_FALSE(done);
	EXPECT_EQ(done.error().sqlstate, "40001") << done.error();
	EXPECT_TRUE(pglease::is_retryable(done.error())) << done.error();
}

// statement_grace bounds every call, not only acquire/renew/release.
TEST_F(ClientTest, FencedStatementPastStatementGraceTimesOut)
{
	pglease::ClientOptions co;
	co.statement_grace = 300ms;
	test_support::PgClient client{"", co};
	auto lease = client.acquire(unique_resource(), opts(10s));
	ASSERT_TRUE(lease) << lease.error();
	auto t0 = std::chrono::steady_clock::now();
	auto done = client.fenced(*lease, [](pqxx::work &tx) { tx.exec("SELECT pg_sleep(3)"); });
	ASSERT_FALSE(done) << "a 3 s statement ran to the end under a 300 ms statement_grace";
	EXPECT_EQ(done.error().code, Errc::timeout) << done.error();
	EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
	EXPECT_TRUE(lease->valid()) << "a timeout is not a loss";
}

TEST_F(ClientTest, WithAdvisoryStatementPastWaitPlusGraceTimesOut)
{
	pglease::ClientOptions co;
	co.statement_grace = 300ms;
	test_support::PgClient client{"", co};
	auto t0 = std::chrono::steady_clock::now();
	auto done =
	    client.with_advisory(unique_resource(), 100ms, [](pqxx::work &tx) { tx.exec("SELECT pg_sleep(3)"); });
	ASSERT_FALSE(done) << "a 3 s statement ran to the end under wait 100 ms + grace 300 ms";
	EXPECT_EQ(done.error().code, Errc::timeout) << done.error();
	EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
}

TEST_F(ClientTest, StatusBlockedPastStatementGraceTimesOut)
{
	pglease::ClientOptions co;
	co.statement_grace = 300ms;
	test_support::PgClient client{"", co};
	// another session holds lease.grants exclusively for 3 s
	std::thread blocker([] {
		run_shell("psql -X -q -c 'BEGIN; LOCK TABLE lease.grants IN ACCESS EXCLUSIVE MODE; "
		          "SELECT pg_sleep(3); COMMIT' >/dev/null");
	});
	Admin admin;
	bool locked = eventually(
	    [&] {
		    return admin
		               .one("SELECT count(*) FROM pg_locks WHERE relation = 'lease.grants'::regclass"
		                    " AND mode = 'AccessExclusiveLock' AND granted")[0]
		               .as<int>() == 1;
	    },
	    2s);
	auto t0 = std::chrono::steady_clock::now();
	auto rows = locked ? client.status()
	                   : pglease::Result<std::vector<pglease::LeaseInfo>>{std::vector<pglease::LeaseInfo>{}};
	auto took = std::chrono::steady_clock::now() - t0;
	blocker.join();
	ASSERT_TRUE(locked) << "the blocking session did not get its lock";
	ASSERT_FALSE(rows) << "status waited past its statement_grace for a locked table";
	EXPECT_EQ(rows.error().code, Errc::timeout) << rows.error();
	EXPECT_LT(took, 2s);
}

// ---- the extension version -------------------------------------------------------

TEST(Version, CompareVersionsComparesDottedNumbers)
{
	EXPECT_LT(pglease::compare_versions("0.1.0", "0.2.0"), 0);
	EXPECT_GT(pglease::compare_versions("0.2.0", "0.1.0"), 0);
	EXPECT_EQ(pglease::compare_versions("0.2.0", "0.2.0"), 0);
	EXPECT_GT(pglease::compare_versions("0.10.0", "0.9.9"), 0) << "parts are numbers, not text";
	EXPECT_EQ(pglease::compare_versions("1.0", "1.0.0"), 0);
	EXPECT_LT(pglease::compare_versions("1.0", "1.0.1"), 0);
	EXPECT_GT(pglease::compare_versions("2", "1.99"), 0);
}

// One source of truth: the version the client checks is default_version of
// pg_lease.control, read by CMake.
TEST(Version, ExtensionVersionIsTheControlFilesDefaultVersion)
{
	std::ifstream control{std::string{PGLEASE_SOURCE_DIR} + "/pg_lease.control"};
	ASSERT_TRUE(control) << "cannot read pg_lease.control";
	std::stringstream text;
	text << control.rdbuf();
	std::smatch m;
	std::string s = text.str();
	ASSERT_TRUE(std::regex_search(s, m, std::regex{R"(default_version\s*=\s*'([^']*)')"}));
	EXPECT_EQ(m[1].str(), std::string{pglease::extension_version});
}

TEST_F(ClientTest, OlderInstalledExtensionIsRefusedWithTheFixNewerIsAccepted)
{
	const std::string db = "pglease_client_version";
	ASSERT_EQ(run_shell("psql -X -q -d postgres -c 'DROP DATABASE IF EXISTS " + db +
	                    "' -c 'CREATE DATABASE " + db + "' && psql -X -q -d " + db +
	                    " -c 'CREATE EXTENSION pg_lease'"),
	          0);
	// as a superuser may: pretend an older install, then a newer one
	auto set_version = [&](const std::string &v) {
		return run_shell("psql -X -q -d " + db + " -c \"UPDATE pg_catalog.pg_extension SET extversion = '" +
		                 v + "' WHERE extname = 'pg_lease'\"");
	};
	ASSERT_EQ(set_version("0.0.1"), 0);
	{
		test_support::PgClient client{"dbname=" + db};
		auto lease = client.acquire(unique_resource(), opts(5s));
		ASSERT_FALSE(lease) << "a client needing " << pglease::extension_minimum_version
		                    << " used a database with pg_lease 0.0.1";
		EXPECT_EQ(lease.error().code, Errc::not_installed) << lease.error();
		EXPECT_NE(lease.error().message.find("0.0.1"), std::string::npos) << lease.error();
		EXPECT_NE(lease.error().message.find(std::string{pglease::extension_minimum_version}),
		          std::string::npos)
		    << lease.error();
		EXPECT_NE(lease.error().message.find("ALTER EXTENSION pg_lease UPDATE"), std::string::npos)
		    << lease.error();
		auto rows = client.status();
		ASSERT_FALSE(rows);
		EXPECT_EQ(rows.error().code, Errc::not_installed) << "refused again, not backed off as unavailable";
	}
	ASSERT_EQ(set_version("999.0.0"), 0);
	{
		test_support::PgClient client{"dbname=" + db};
		auto lease = client.acquire(unique_resource(), opts(5s));
		EXPECT_TRUE(lease) << "a newer extension must be accepted: " << lease.error();
	}
	EXPECT_EQ(run_shell("psql -X -q -d postgres -c 'DROP DATABASE " + db + " WITH (FORCE)'"), 0);
}

TEST_F(ClientTest, MissingExtensionIsReportedNotInstalled)
{
	const std::string db = "pglease_client_noext";
	ASSERT_EQ(run_shell("psql -X -q -d postgres -c 'DROP DATABASE IF EXISTS " + db +
	                    "' -c 'CREATE DATABASE " + db + "'"),
	          0);
	{
		test_support::PgClient client{"dbname=" + db};
		auto lease = client.acquire(unique_resource(), opts(5s));
		ASSERT_FALSE(lease);
		EXPECT_EQ(lease.error().code, Errc::not_installed) << lease.error();
	}
	EXPECT_EQ(run_shell("psql -X -q -d postgres -c 'DROP DATABASE " + db + " WITH (FORCE)'"), 0);
}

// ---- postgresql:// URLs with a password (issue 19) ---------------------------------
//
// scripts/cluster.sh makes pglease_password_user log in with a password
// (SCRAM, pg_hba.conf); these tests reach the cluster through a
// postgresql://user:password@host:port/db URL whose host is the socket
// directory, percent-encoded.  They connect as another role: not run through
// the pooler (tests/faults/pooler.sh runs ClientTest.* only).

namespace {

constexpr const char *url_password = "s3cr3tPW-9f2";

std::string
percent_encoded(const std::string &s)
{
	static const char hex[] = "0123456789ABCDEF";
	std::string out;
	for (unsigned char c : s) {
		if (std::isalnum(c) || c == '-' || c == '_' || c == '.')
			out += static_cast<char>(c);
		else {
			out += '%';
			out += hex[c >> 4];
			out += hex[c & 15];
		}
	}
	return out;
}

// test_url -- the test cluster as postgresql://pglease_password_user:PASSWORD@...
std::string
test_url(const std::string &password, const std::string &database = "")
{
	const char *db = std::getenv("PGDATABASE");
	return "postgresql://pglease_password_user:" + password + "@" + percent_encoded(std::getenv("PGHOST")) +
	       ":" + std::getenv("PGPORT") + "/" + (database.empty() ? (db ? db : "postgres") : database);
}

class PostgresUrlTest : public ClientTest {
protected:
	void SetUp() override
	{
		ClientTest::SetUp();
		if (HasFatalFailure())
			return;
		Admin admin;
		admin.exec("DROP ROLE IF EXISTS pglease_password_user");
		admin.exec(std::string{"CREATE ROLE pglease_password_user LOGIN PASSWORD '"} + url_password + "'");
	}
	void TearDown() override
	{
		if (!std::getenv("PGHOST"))
			return; // SetUp said why
		Admin admin;
		admin.exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
		           " WHERE usename = 'pglease_password_user'");
		admin.exec("SELECT lease.break(resource) FROM lease.leases"
		           " WHERE owner = to_regrole('pglease_password_user')");
		admin.exec("DROP ROLE IF EXISTS pglease_password_user");
	}
};

// capture_cli -- exit code and stderr of a CLI command line
std::pair<int, std::string>
capture_cli(const std::string &args)
{
	std::string err = "/tmp/pglease_cli_err_" + std::to_string(getpid());
	int code = run_shell(std::string{PGLEASE_CLI} + " " + args + " >/dev/null 2>" + err);
	std::ifstream in{err};
	std::stringstream text;
	text << in.rdbuf();
	std::remove(err.c_str());
	return {code, text.str()};
}

} // namespace

TEST_F(PostgresUrlTest, UrlWithPasswordConnectsAndAcquires)
{
	auto locker = pglease::connect(test_url(url_password));
	ASSERT_TRUE(locker) << locker.error();
	EXPECT_EQ((*locker)->provider(), "PostgreSQL");
	auto r = unique_resource();
	auto lease = (*locker)->acquire(r, opts(10s));
	ASSERT_TRUE(lease) << lease.error();
	EXPECT_GT(lease->token(), 0);
	Admin admin;
	EXPECT_TRUE(admin.is_current(r, lease->token()));
	EXPECT_EQ(admin.one("SELECT owner::regrole::text FROM lease.leases WHERE resource = '" + r + "'")[0]
	              .as<std::string>(),
	          "pglease_password_user")
	    << "the lease must be taken as the URL's user";
	ASSERT_TRUE(lease->release());
	// postgres:// is the same form
	auto client = pglease::connect("postgres://" + test_url(url_password).substr(std::strlen("postgresql://")));
	ASSERT_TRUE(client) << client.error();
	auto again = (*client)->acquire(r, opts(10s));
	ASSERT_TRUE(again) << again.error();
	EXPECT_GT(again->token(), lease->token());
}

TEST_F(PostgresUrlTest, WrongPasswordIsPermissionNotRetryableAndNeverShown)
{
	const std::string wrong = "Wr0ngPassw0rd-77";
	auto locker = pglease::connect(test_url(wrong));
	ASSERT_TRUE(locker) << locker.error();
	auto lease = (*locker)->acquire(unique_resource(), opts(10s));
	ASSERT_FALSE(lease);
	EXPECT_EQ(lease.error().code, Errc::permission) << lease.error();
	EXPECT_EQ(lease.error().sqlstate, "28P01");
	EXPECT_FALSE(pglease::is_retryable(lease.error()));
	EXPECT_EQ(lease.error().message.find(wrong), std::string::npos) << lease.error();
	// a second call is refused the same way, not held back as "unreachable"
	auto again = (*locker)->acquire(unique_resource(), opts(10s));
	ASSERT_FALSE(again);
	EXPECT_EQ(again.error().code, Errc::permission) << again.error();
}

TEST_F(PostgresUrlTest, MissingDatabaseIsInvalidArgument)
{
	auto locker = pglease::connect(test_url(url_password, "pglease_no_such_database"));
	ASSERT_TRUE(locker) << locker.error();
	auto lease = (*locker)->acquire(unique_resource(), opts(10s));
	ASSERT_FALSE(lease);
	EXPECT_EQ(lease.error().code, Errc::invalid_argument) << lease.error();
	EXPECT_EQ(lease.error().sqlstate, "3D000");
}

TEST_F(PostgresUrlTest, MalformedDsnIsInvalidArgumentAtConnectWithPasswordMasked)
{
	for (const std::string &dsn :
	     std::vector<std::string>{test_url(url_password) + "?no_such_parameter=1",
	                              "host=/tmp port password=" + std::string{url_password},
	                              "password='" + std::string{url_password} + "' host"}) {
		auto locker = pglease::connect(dsn);
		ASSERT_FALSE(locker) << "accepted: " << pglease::redact(dsn);
		EXPECT_EQ(locker.error().code, Errc::invalid_argument) << locker.error();
		EXPECT_EQ(locker.error().message.find(url_password), std::string::npos) << locker.error();
	}
	// libpq checks option values only when it connects: still final, not "unavailable"
	auto client = pglease::connect("postgresql://pglease_password_user:" + std::string{url_password} + "@h:port/db");
	ASSERT_TRUE(client) << client.error();
	auto lease = (*client)->acquire(unique_resource(), opts(10s));
	ASSERT_FALSE(lease);
	EXPECT_EQ(lease.error().code, Errc::invalid_argument) << lease.error();
	EXPECT_EQ(lease.error().message.find(url_password), std::string::npos) << lease.error();
}

TEST_F(PostgresUrlTest, CliTakesUrlsAndNeverPrintsThePassword)
{
	auto r = unique_resource();
	std::string out = "/tmp/pglease_cli_url_token_" + std::to_string(getpid());
	ASSERT_EQ(run_shell(std::string{PGLEASE_CLI} + " --dsn '" + test_url(url_password) +
	                    "' acquire --resource '" + r + "' --ttl 10s --holder pglease-url-test --reclaim > " + out),
	          0);
	std::ifstream in{out};
	long long token = 0;
	in >> token;
	std::remove(out.c_str());
	ASSERT_GT(token, 0);
	EXPECT_EQ(run_shell(std::string{PGLEASE_CLI} + " --dsn '" + test_url(url_password) +
	                    "' release --resource '" + r + "' --token " + std::to_string(token) + " --holder " +
	                    "pglease-url-test"),
	          0);

	auto [code, err] =
	    capture_cli("--dsn '" + test_url("Wr0ngPassw0rd-77") + "' acquire --resource x --ttl 10s");
	EXPECT_EQ(code, 77) << err;
	EXPECT_EQ(err.find("Wr0ngPassw0rd-77"), std::string::npos) << err;
	std::tie(code, err) =
	    capture_cli("--dsn '" + test_url(url_password) + "?bad_param=1' acquire --resource x --ttl 10s");
	EXPECT_EQ(code, 64) << err;
	EXPECT_EQ(err.find(url_password), std::string::npos) << err;
	std::tie(code, err) = capture_cli("--dsn 'host=/tmp password=" + std::string{url_password} +
	                                  " port' acquire --resource x --ttl 10s");
	EXPECT_EQ(code, 64) << err;
	EXPECT_EQ(err.find(url_password), std::string::npos) << err;
}

TEST(Redact, MasksUrlUserinfoKeywordValuesAndTheDsnsPassword)
{
	EXPECT_EQ(pglease::redact("postgresql://alice:s3cr3t@h:5432/app"), "postgresql://alice:****@h:5432/app");
	EXPECT_EQ(pglease::redact("redis://:pw@h:1/0 and etcd://u:p@ss@h:2"),
	          "redis://:****@h:1/0 and etcd://u:****@h:2");
	EXPECT_EQ(pglease::redact("host=h password=s3cr3t user=u"), "host=h password=**** user=u");
	EXPECT_EQ(pglease::redact("host=h password = 'a b\\'c' user=u"), "host=h password = **** user=u");
	EXPECT_EQ(pglease::redact("x?sslmode=require&password=s3cr3t&y=1"),
	          "x?sslmode=require&password=****&y=1");
	// no userinfo: nothing to mask
	EXPECT_EQ(pglease::redact("redis://h:6379/0"), "redis://h:6379/0");
	// a message quoting only part of the DSN: its password is masked wherever it appears
	EXPECT_EQ(pglease::redact("missing \"=\" after \"s3cr3t%40x\"", "postgresql://a:s3cr3t%40x@h/db"),
	          "missing \"=\" after \"****\"");
	EXPECT_EQ(pglease::redact("bad: s3cr3t@x", "postgresql://a:s3cr3t%40x@h/db"), "bad: ****");
}

// A DSN whose provider cannot be told (no scheme://, not key=value) is refused
// without quoting it: a password in it must not come back in the message
TEST(Redact, ConnectNeverQuotesAnUnparsableDsn)
{
	for (const std::string &dsn : {std::string{"alice:"} + url_password + "@db.example.com/app",
	                               std::string{"postgresql:/alice:"} + url_password + "@h/app"}) {
		auto locker = pglease::connect(dsn);
		ASSERT_FALSE(locker) << dsn;
		EXPECT_EQ(locker.error().code, Errc::invalid_argument);
		EXPECT_EQ(locker.error().message.find(url_password), std::string::npos) << locker.error().message;
	}
}

// ---- a frozen server: every call within its bound (issue 19) -------------------------
//
// The cluster's processes are stopped with SIGSTOP (postmaster and backends):
// the server neither answers nor reports its statement_timeout.  Documented
// bound of a call (docs/limits.md): statement_grace (+ wait for acquire) +
// 0.5 s, plus connect_timeout (libpq: at least 2 s) when it must connect.

namespace {

// FrozenCluster -- SIGSTOP every process of the test cluster until destroyed
class FrozenCluster {
public:
	explicit FrozenCluster(const std::string &cluster)
	    : signal_("pm=$(head -1 '" + cluster + "/data/postmaster.pid'); kill -SIG $pm $(pgrep -P $pm)")
	{
	}
	~FrozenCluster() { thaw(); }
	bool freeze()
	{
		frozen_ = run_shell(with("STOP")) == 0;
		return frozen_;
	}
	void thaw()
	{
		if (frozen_)
			(void)run_shell(with("CONT"));
		frozen_ = false;
	}

private:
	std::string with(const std::string &sig) const
	{
		std::string cmd = signal_;
		cmd.replace(cmd.find("SIG"), 3, sig);
		return cmd;
	}
	std::string signal_;
	bool frozen_ = false;
};

long long
ms_of(std::chrono::steady_clock::duration d)
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

} // namespace

TEST_F(ClientTest, FrozenServerEveryCallReturnsWithinItsBound)
{
	const char *cluster = std::getenv("PGLEASE_CLUSTER");
	ASSERT_NE(cluster, nullptr) << "PGLEASE_CLUSTER unset: run through make test";
	pglease::ClientOptions co;
	co.statement_grace = 1s;
	co.connect_timeout = 2s;
	test_support::PgClient client{"", co};
	auto r = unique_resource();
	auto o = opts(30s);
	o.auto_renew = false;
	auto lease = client.acquire(r, o);
	ASSERT_TRUE(lease) << lease.error();
	const long long slack = 1000; // a loaded 2-core machine
	const long long statement = 1000 + 500, connect = 2000;

	FrozenCluster frozen{cluster};
	ASSERT_TRUE(frozen.freeze());
	auto t0 = std::chrono::steady_clock::now();
	auto renewed = lease->renew();
	long long renew_ms = ms_of(std::chrono::steady_clock::now() - t0);
	t0 = std::chrono::steady_clock::now();
	auto acquired = std::async(std::launch::async, [&] {
		                return client.acquire(unique_resource(), opts(30s, 1s));
	                }).get(); // the no-nested rule is per thread
	long long acquire_ms = ms_of(std::chrono::steady_clock::now() - t0);
	t0 = std::chrono::steady_clock::now();
	auto released = client.release(r, lease->token());
	long long release_ms = ms_of(std::chrono::steady_clock::now() - t0);
	frozen.thaw();

	std::cout << "frozen server: renew " << renew_ms << " ms, acquire(wait 1s) " << acquire_ms
	          << " ms, token release " << release_ms << " ms\n";
	ASSERT_FALSE(renewed);
	EXPECT_LE(renew_ms, statement + slack);
	ASSERT_FALSE(acquired);
	EXPECT_EQ(acquired.error().code, Errc::unavailable) << acquired.error();
	EXPECT_LE(acquire_ms, 1000 + statement + connect + slack);
	ASSERT_FALSE(released);
	EXPECT_EQ(released.error().code, Errc::unavailable) << released.error();
	EXPECT_LE(release_ms, statement + connect + slack);
	// thawed, the client recovers and the lease was never lost server-side
	EXPECT_TRUE(eventually([&] { return static_cast<bool>(lease->renew()); }, 10s));
}

// A lease's release is retried until its local deadline, and no longer, even
// when every try meets a frozen server: each try's statement is cut so the
// client gives up on it by the deadline, and a new connection is opened only
// while connect_timeout fits before it.
TEST_F(ClientTest, FrozenServerDestructorReturnsByTheLocalDeadline)
{
	const char *cluster = std::getenv("PGLEASE_CLUSTER");
	ASSERT_NE(cluster, nullptr) << "PGLEASE_CLUSTER unset: run through make test";
	pglease::ClientOptions co;
	co.statement_grace = 500ms;
	co.connect_timeout = 1s; // libpq waits 2 s
	test_support::PgClient client{"", co};
	auto o = opts(5s);
	o.auto_renew = false;
	auto lease = std::make_unique<pglease::Result<pglease::Lease>>(client.acquire(unique_resource(), o));
	ASSERT_TRUE(*lease) << lease->error();
	FrozenCluster frozen{cluster};
	ASSERT_TRUE(frozen.freeze());
	auto bound = (*lease)->remaining();
	auto t0 = std::chrono::steady_clock::now();
	lease.reset();
	long long took = ms_of(std::chrono::steady_clock::now() - t0);
	frozen.thaw();
	std::cout << "frozen server: destructor " << took << " ms, the local deadline " << bound.count()
	          << " ms away\n";
	EXPECT_LE(took, bound.count() + 100) << "the destructor blocked past the lease's local deadline";
}

// An acquire the client gave up on (its backend was stopped past the call's
// bound) is executed when the backend resumes: the server sees the client
// gone and undoes the grant, instead of leaving a lease nobody knows it holds.
TEST_F(ClientTest, GrantTheClientGaveUpOnIsUndoneByTheServer)
{
	pglease::ClientOptions co;
	co.statement_grace = 500ms;
	test_support::PgClient client{"application_name=cxx_gave_up", co};
	{
		auto warm = client.acquire(unique_resource(), opts(5s)); // one pooled connection
		ASSERT_TRUE(warm) << warm.error();
	}
	Admin admin;
	int pid =
	    admin.one("SELECT pid FROM pg_stat_activity WHERE application_name = 'cxx_gave_up'")[0].as<int>();
	ASSERT_EQ(run_shell("kill -STOP " + std::to_string(pid)), 0);
	auto r = unique_resource();
	auto t0 = std::chrono::steady_clock::now();
	auto lease = client.acquire(r, opts(60s));
	auto elapsed = std::chrono::steady_clock::now() - t0;
	ASSERT_EQ(run_shell("kill -CONT " + std::to_string(pid)), 0);
	ASSERT_FALSE(lease) << "granted by a stopped backend?";
	EXPECT_EQ(lease.error().code, Errc::unavailable) << lease.error();
	EXPECT_LT(elapsed, 2500ms) << "bound: statement_grace + 0.5 s";
	// the resumed backend runs the acquire it had received, then exits
	ASSERT_TRUE(eventually(
	    [&] {
		    return admin.one("SELECT count(*) FROM pg_stat_activity WHERE pid = " + std::to_string(pid))[0]
		               .as<int>() == 0;
	    },
	    10s));
	EXPECT_GT(admin.acquire(r, "5 s"), 0) << "the abandoned acquire left " << r << " held";
}
