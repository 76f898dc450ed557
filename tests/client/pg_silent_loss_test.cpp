// pg_silent_loss_test.cpp -- PostgreSQL: on_lost at the local deadline when
// the server goes silent (issue 36, item 5).
//
// A silent server drops nothing and answers nothing: no RST, no error.  Here
// it is a private cluster (scripts/cluster.sh, on a Unix socket in a
// temporary directory: freezing it touches no cluster another test uses)
// whose postmaster and backends are stopped with SIGSTOP.  The kernel still
// queues new connections in the listen backlog, so a connect hangs like one
// into a black hole, and a statement on an open connection waits forever.
// Every test sends SIGCONT to what it froze when it ends, however it ends.
//
// What is measured: the instant on_lost runs against the lease's local
// deadline (read as now + remaining() once the server is frozen and no
// renewal can succeed), which it may pass by at most 100 ms (loss_slack),
// whatever the renewal in flight is doing:
//  (a) the renewal thread alone, its renewal stuck on a pooled connection
//      until the watchdog's statement_grace + answer margin;
//  (b) the client's one connection busy in another call (a long pg_sleep),
//      so the renewal opens a connection and waits out connect_timeout;
//  (c) two leases of one client, the renewal of one (session-bound, on its
//      own connection, whose backend alone is frozen) stuck: the other
//      goes on renewing through the live server, and the stuck one is lost
//      at its own deadline; and with both renewals stuck, each lease lost
//      at its own deadline.
// Before the fix, one renewal thread made each renewal in turn and
// declared the loss only when the call returned: (a) 0.5 s late, (b) 1 s
// late, (c) the stuck one 0.5 s late and the other lost, unrenewed behind
// the stuck call; both stuck, 1.2 and 3.2 s late.
#include <signal.h>

#include <condition_variable>

#include "support.hpp"

#include <pglease/postgres.hpp>

#include "pg_client.hpp"

namespace {

using namespace test_support;
using pglease::Errc;

constexpr milliseconds loss_slack{100};

// LossClock -- when a lease's on_lost ran, and how often
class LossClock {
public:
	void attach(pglease::Lease &lease)
	{
		lease.on_lost([this](const pglease::Error &e) {
			std::lock_guard<std::mutex> lk(mu_);
			if (calls_++ == 0) {
				at_ = Clock::now();
				error_ = e;
			}
			cv_.notify_all();
		});
	}
	bool wait(milliseconds limit)
	{
		std::unique_lock<std::mutex> lk(mu_);
		return cv_.wait_for(lk, limit, [&] { return calls_ > 0; });
	}
	int calls()
	{
		std::lock_guard<std::mutex> lk(mu_);
		return calls_;
	}
	Clock::time_point at()
	{
		std::lock_guard<std::mutex> lk(mu_);
		return at_;
	}
	pglease::Error error()
	{
		std::lock_guard<std::mutex> lk(mu_);
		return error_;
	}

private:
	std::mutex mu_;
	std::condition_variable cv_;
	int calls_ = 0;
	Clock::time_point at_;
	pglease::Error error_;
};

// deadline_of -- a lease's local deadline, as remaining() tells it now
Clock::time_point
deadline_of(const pglease::Lease &lease)
{
	return Clock::now() + lease.remaining();
}

long long
ms_between(Clock::time_point from, Clock::time_point to)
{
	return std::chrono::duration_cast<milliseconds>(to - from).count();
}

class PgSilentLoss : public ::testing::Test {
protected:
	static void SetUpTestSuite()
	{
		char tmpl[] = "/tmp/pglease-silent-loss.XXXXXX";
		const char *made = ::mkdtemp(tmpl);
		ASSERT_NE(made, nullptr) << "mkdtemp";
		dir_ = made;
		Ran started = run_command("PGLEASE_TEST_PORT=5432 " + source_path("scripts/cluster.sh") + " start '" +
		                          dir_ + "' preload");
		ASSERT_TRUE(started.ok()) << "scripts/cluster.sh start failed (it needs PostgreSQL 15 and pg_lease "
		                             "installed: make deps && make install):\n"
		                          << started.output;
		Ran created = psql("CREATE EXTENSION pg_lease");
		ASSERT_TRUE(created.ok()) << created.output;
	}
	static void TearDownTestSuite()
	{
		if (dir_.empty())
			return;
		(void)run_command("PGLEASE_TEST_PORT=5432 " + source_path("scripts/cluster.sh") + " stop '" + dir_ +
		                  "' immediate");
		std::error_code ignored;
		std::filesystem::remove_all(dir_, ignored);
	}
	void TearDown() override { thaw(); }

	static Ran psql(const std::string &sql)
	{
		return run_command("psql -X -q -A -t -v ON_ERROR_STOP=1 -h '" + dir_ +
		                   "/sock' -p 5432 -U postgres -d postgres -c \"" + sql + "\"");
	}
	static std::string dsn() { return "host=" + dir_ + "/sock port=5432 user=postgres dbname=postgres"; }

	static int postmaster_pid()
	{
		std::ifstream f(dir_ + "/data/postmaster.pid");
		int pid = 0;
		f >> pid;
		return pid;
	}
	// children -- the postmaster's processes: its backends and workers
	static std::vector<int> children(int pid)
	{
		std::ifstream f("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
		std::vector<int> pids;
		for (int child; f >> child;)
			pids.push_back(child);
		return pids;
	}
	void freeze(int pid)
	{
		ASSERT_GT(pid, 0);
		ASSERT_EQ(::kill(pid, SIGSTOP), 0) << "SIGSTOP " << pid;
		frozen_.push_back(pid);
	}
	// freeze_server -- the postmaster first (no new backend), then every child
	void freeze_server()
	{
		int postmaster = postmaster_pid();
		ASSERT_GT(postmaster, 0) << "no postmaster.pid in " << dir_;
		freeze(postmaster);
		for (int child : children(postmaster))
			freeze(child);
	}
	void thaw()
	{
		for (int pid : frozen_)
			(void)::kill(pid, SIGCONT);
		frozen_.clear();
	}

	// ThawFirst -- declared after the lease (and its client), so that the
	// server is thawed before they go: their release would otherwise wait on
	// a frozen backend until the lease's deadline (TearDown comes after them)
	struct ThawFirst {
		PgSilentLoss &test;
		~ThawFirst() { test.thaw(); }
	};

	static std::string dir_;
	std::vector<int> frozen_;
};

std::string PgSilentLoss::dir_;

pglease::ClientOptions
silent_options()
{
	pglease::ClientOptions o;
	o.statement_grace = 2s; // a renewal on a frozen backend: cut off after 2.5 s
	o.connect_timeout = 3s; // a connect into the frozen postmaster's backlog: 3 s
	o.max_idle_connections = 1;
	return o;
}

// expect_lost_on_time -- on_lost ran once, within loss_slack of deadline,
// not before it, and the lease reads lost
void
expect_lost_on_time(const char *what, LossClock &lost, const pglease::Lease &lease,
                    Clock::time_point deadline)
{
	ASSERT_TRUE(lost.wait(20s)) << what << ": on_lost never ran";
	const long long late = ms_between(deadline, lost.at());
	std::cout << what << ": on_lost " << late << " ms after the local deadline\n";
	EXPECT_LE(late, loss_slack.count()) << what << ": on_lost " << late << " ms after the local deadline";
	EXPECT_GE(late, -5) << what << ": on_lost before the local deadline";
	EXPECT_EQ(lost.error().code, Errc::lost) << lost.error();
	EXPECT_FALSE(lease.valid());
	EXPECT_TRUE(lease.cancel_token().cancelled());
	std::this_thread::sleep_for(300ms);
	EXPECT_EQ(lost.calls(), 1) << what;
}

} // namespace

// (a) the renewal thread alone
TEST_F(PgSilentLoss, LostAtTheDeadlineWhileTheRenewalHangs)
{
	test_support::PgClient client{dsn(), silent_options()};
	auto lease = client.acquire(unique_resource("silent/"), opts(3s));
	ASSERT_TRUE(lease) << lease.error();
	LossClock lost;
	lost.attach(*lease);
	freeze_server();
	std::this_thread::sleep_for(100ms);
	const Clock::time_point deadline = deadline_of(*lease);
	expect_lost_on_time("renewal thread alone", lost, *lease, deadline);
	thaw();
}

// (b) the one connection busy: the renewal waits for a connect
TEST_F(PgSilentLoss, LostAtTheDeadlineWhileTheRenewalConnects)
{
	test_support::PgClient client{dsn(), silent_options()};
	auto lease = client.acquire(unique_resource("silent/"), opts(3s));
	ASSERT_TRUE(lease) << lease.error();
	LossClock lost;
	lost.attach(*lease);
	auto busy = std::async(std::launch::async, [&] {
		return client.with_advisory(unique_resource("silent-busy/"), 0ms,
		                            [](pqxx::work &tx) { tx.exec("SELECT pg_sleep(30)"); });
	});
	std::this_thread::sleep_for(300ms); // the sleep has the client's connection
	ASSERT_EQ(busy.wait_for(0s), std::future_status::timeout) << "the busy call ended early";
	freeze_server();
	std::this_thread::sleep_for(100ms);
	const Clock::time_point deadline = deadline_of(*lease);
	expect_lost_on_time("one connection, busy", lost, *lease, deadline);
	thaw();
	(void)busy.get();
}

// (c) one lease's renewal stuck: the other renews, the stuck one is lost on time
TEST_F(PgSilentLoss, OneStuckRenewalDelaysNoOtherLease)
{
	test_support::PgClient client{dsn(), silent_options()};
	auto stuck_opts = opts(3s);
	stuck_opts.session_bound = true; // renewed on its own connection
	auto stuck = client.acquire(unique_resource("silent-stuck/"), stuck_opts);
	ASSERT_TRUE(stuck) << stuck.error();
	const std::string other_resource = unique_resource("silent-other/");
	auto other =
	    in_other_thread([&] { return client.acquire(other_resource, opts(1200ms)); }); // renewed every 400 ms
	ASSERT_TRUE(other) << other.error();
	LossClock stuck_lost, other_lost;
	stuck_lost.attach(*stuck);
	other_lost.attach(*other);
	Ran pid = psql("SELECT backend_pid FROM lease.grants WHERE token = " + std::to_string(stuck->token()));
	ASSERT_TRUE(pid.ok()) << pid.output;
	freeze(std::atoi(pid.output.c_str())); // that backend alone
	std::this_thread::sleep_for(100ms);
	const Clock::time_point deadline = deadline_of(*stuck);
	expect_lost_on_time("the stuck lease", stuck_lost, *stuck, deadline);
	// the stuck renewal (until 2.5 s after it was sent) spanned three of
	// the other lease's heartbeats and more than its TTL
	EXPECT_EQ(other_lost.calls(), 0) << "the other lease was lost: " << other_lost.error();
	EXPECT_TRUE(other->valid());
	std::this_thread::sleep_for(1s);
	EXPECT_EQ(other_lost.calls(), 0) << "the other lease was lost: " << other_lost.error();
	EXPECT_TRUE(other->valid());
	thaw();
}

// (c') both leases' renewals stuck on the frozen server: each lost at its own
// deadline, the later one's loss not held up by the earlier one's renewal
TEST_F(PgSilentLoss, TwoStuckRenewalsEachLostAtItsDeadline)
{
	test_support::PgClient client{dsn(), silent_options()};
	auto first = client.acquire(unique_resource("silent-first/"), opts(2s));
	ASSERT_TRUE(first) << first.error();
	const std::string second_resource = unique_resource("silent-second/");
	auto second = in_other_thread([&] { return client.acquire(second_resource, opts(3s)); });
	ASSERT_TRUE(second) << second.error();
	LossClock first_lost, second_lost;
	first_lost.attach(*first);
	second_lost.attach(*second);
	freeze_server();
	std::this_thread::sleep_for(100ms);
	const Clock::time_point first_deadline = deadline_of(*first);
	const Clock::time_point second_deadline = deadline_of(*second);
	expect_lost_on_time("the first of two", first_lost, *first, first_deadline);
	expect_lost_on_time("the second of two", second_lost, *second, second_deadline);
	thaw();
}

// A fenced write whose server goes silent returns within statement_grace +
// the answer margin, never waits forever (CI's faults.failover hung so: a
// commit on a backend stuck behind a killed WAL sender).  Before, BEGIN, the
// fence and COMMIT of a fenced write were the client's only statements not
// cut off by the watchdog.
namespace {

constexpr milliseconds fenced_bound{2500 + 1500}; // silent_options' grace + margin, + slack

// finished_in_time -- the call's result, or a failure (and the server thawed,
// so the call can end) when it outlived fenced_bound
template <class F>
std::optional<pglease::Result<void>>
finished_in_time(F &&call, const std::function<void()> &thaw)
{
	auto result = std::async(std::launch::async, std::forward<F>(call));
	if (result.wait_for(fenced_bound) == std::future_status::timeout) {
		thaw();
		(void)result.get();
		return std::nullopt;
	}
	return result.get();
}

} // namespace

TEST_F(PgSilentLoss, AFencedWriteOnAFrozenServerReturnsUnavailable)
{
	test_support::PgClient client{dsn(), silent_options()};
	auto lease = client.acquire(unique_resource("silent-fenced/"), opts(30s));
	ASSERT_TRUE(lease) << lease.error();
	ThawFirst thaw_first{*this};
	freeze_server();
	auto wrote = finished_in_time(
	    [&] { return client.fenced(*lease, [](pqxx::work &tx) { tx.exec("SELECT 1"); }); },
	    [this] { thaw(); });
	ASSERT_TRUE(wrote) << "the fenced write still waited after " << fenced_bound.count()
	                   << " ms on a frozen server (BEGIN or the fence unbounded)";
	ASSERT_FALSE(*wrote);
	EXPECT_EQ(wrote->error().code, Errc::unavailable) << wrote->error();
}

TEST_F(PgSilentLoss, AFencedWriteWhoseCommitIsNeverAnsweredIsInDoubt)
{
	test_support::PgClient client{dsn(), silent_options()};
	auto lease = client.acquire(unique_resource("silent-commit/"), opts(30s));
	ASSERT_TRUE(lease) << lease.error();
	ThawFirst thaw_first{*this};
	int backend = 0;
	auto wrote = finished_in_time(
	    [&] {
		    return client.fenced(*lease, [&](pqxx::work &tx) {
			    backend = tx.exec1("SELECT pg_backend_pid()")[0].as<int>();
			    // the backend stops once it has answered: the COMMIT is never read
			    if (::kill(backend, SIGSTOP) == 0)
				    frozen_.push_back(backend);
		    });
	    },
	    [this] { thaw(); });
	ASSERT_GT(backend, 0);
	ASSERT_TRUE(wrote) << "the fenced write's COMMIT still waited after " << fenced_bound.count()
	                   << " ms on a frozen backend";
	ASSERT_FALSE(*wrote);
	EXPECT_EQ(wrote->error().code, Errc::unavailable) << wrote->error();
	EXPECT_EQ(wrote->error().sqlstate, "08007") << "a COMMIT without an answer has an unknown outcome: "
	                                            << wrote->error();
}
