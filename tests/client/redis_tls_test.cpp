// redis_tls_test.cpp -- rediss:// and redlocks:// (issue 22): the Redis and
// Redlock providers over TLS, against real redis-servers started by
// scripts/redis.sh in its TLS mode (tls=CERTDIR: TLS only, a client
// certificate required, certificates made by scripts/certs.sh) on free
// ports (support.hpp's ScriptServer); never mocked, never skipped.
//
// What is shown: the conformance behaviours through a TLS connection with a
// password AND a client certificate (acquire, contention, release, a higher
// token, renew, on_lost, a waiter woken by the release through the TLS
// subscriber), the ClientOptions fields, IPv6 and a host name, Redlock over
// three TLS servers; and every refusal with its Errc, within a bound: an
// unknown CA, an expired or wrong-host server certificate, a client
// certificate of another CA or none, unusable files (before any I/O), plain
// TCP to a TLS port and TLS to a plain one.  Every message a test sees is
// checked for the password and for the client key's text.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "pglease/pglease.hpp"
#include "redis/connection.hpp"
#include "redis/endpoint.hpp"
#include "support.hpp"

using pglease::Errc;
using namespace test_support;

namespace {

using pglease::detail::redis::Connection;
using pglease::detail::redis::Credentials;
using pglease::detail::redis::Reply;
using pglease::detail::redis::Tls;
using pglease::detail::redis::TlsContext;

// the servers' password (requirepass: one redis.conf word); no message may show it
const std::string password = "Tls-Pw-4Kd9x";

// query -- cacert=, cert=, key= for the CA and the client pair NAME
std::string
query(const std::string &ca = "ca.crt", const std::string &client = "client")
{
	std::string q = "cacert=" + cert(ca);
	if (!client.empty())
		q += "&cert=" + cert(client + ".crt") + "&key=" + cert(client + ".key");
	return q;
}

// key_lines -- the base64 lines of the client keys: no message may show one
std::vector<std::string>
key_lines()
{
	std::vector<std::string> lines;
	for (const char *name : {"client.key", "other.key"}) {
		std::ifstream in(cert(name));
		for (std::string line; std::getline(in, line);)
			if (line.rfind("-----", 0) != 0 && line.size() > 16)
				lines.push_back(line);
	}
	return lines;
}

// clean -- TEXT shows neither the password nor a line of a key
::testing::AssertionResult
clean(const std::string &text)
{
	if (text.find(password) != std::string::npos || text.find("Tls-Pw") != std::string::npos)
		return ::testing::AssertionFailure() << "shows the password: " << text;
	static const std::vector<std::string> lines = key_lines();
	for (const auto &line : lines)
		if (text.find(line.substr(0, 16)) != std::string::npos)
			return ::testing::AssertionFailure() << "shows key material: " << text;
	return ::testing::AssertionSuccess();
}

// TlsServer -- a TLS-only redis-server with requirepass, a client
// certificate required unless EXTRA says otherwise (more NAME=VALUE lines)
class TlsServer : public ScriptServer {
public:
	explicit TlsServer(const std::string &extra = "")
	    : ScriptServer("redis.sh", "ipv6 tls='" + certs() + "' requirepass=" + password + " " + extra)
	{
	}
	std::string node(const std::string &host = "127.0.0.1") const
	{
		return host + ":" + std::to_string(port());
	}
	// url -- rediss:// to this server as the default user, with Q
	std::string url(const std::string &q = query(), const std::string &host = "127.0.0.1") const
	{
		return "rediss://:" + password + "@" + node(host) + (q.empty() ? "" : "?" + q);
	}
	// admin -- one command on a TLS connection of its own
	pglease::Result<Reply> admin(const std::vector<std::string> &argv) const
	{
		pglease::detail::TlsFiles files{cert("ca.crt"), cert("client.crt"), cert("client.key")};
		auto tls = TlsContext::create(files);
		if (!tls)
			return tls.error();
		auto c =
		    Connection::open({"127.0.0.1", port()}, {1000ms, 1000ms}, 0, Credentials{"", password}, *tls);
		if (!c)
			return c.error();
		std::vector<std::string_view> args(argv.begin(), argv.end());
		return c->command(args);
	}
};

// seen -- every message of this binary, checked at the end of each test
class RedisTlsTest : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_FALSE(certs().empty()) << "scripts/certs.sh failed (is openssl installed?)";
	}
	void TearDown() override
	{
		for (const auto &m : seen) {
			EXPECT_TRUE(clean(m));
			std::cout << "  message: " << m << "\n";
		}
	}
	// connected -- a Locker for url (connect reads files, no network I/O)
	std::unique_ptr<pglease::Locker> connected(const std::string &url,
	                                           pglease::ClientOptions o = quick_backoff())
	{
		auto r = pglease::connect(url, o);
		if (!r) {
			seen.push_back(r.error().message);
			ADD_FAILURE() << "connect: " << r.error().message;
			return nullptr;
		}
		return std::move(*r);
	}
	// refused -- R failed with CODE within LIMIT of T, its message saying WHAT
	template <class R>
	void expect_failure(const R &r, Errc code, const std::string &what, Clock::time_point t,
	                    milliseconds limit = 3s)
	{
		ASSERT_FALSE(r) << "succeeded (expected: " << what << ")";
		seen.push_back(r.error().message);
		EXPECT_EQ(r.error().code, code) << r.error().message;
		EXPECT_NE(r.error().message.find(what), std::string::npos)
		    << "no \"" << what << "\" in: " << r.error().message;
		if (code != Errc::unavailable) {
			EXPECT_FALSE(pglease::is_retryable(r.error())) << r.error().message;
		}
		EXPECT_LT(ms_since(t), limit.count()) << "not fast: " << r.error().message;
	}
	// attempt -- one try_acquire through url (a connect error returned too)
	pglease::Result<pglease::Lease> attempt(const std::string &url,
	                                        pglease::ClientOptions o = quick_backoff())
	{
		auto locker = pglease::connect(url, o);
		if (!locker)
			return locker.error();
		return (*locker)->try_acquire(unique_resource("tls/"), opts(5s));
	}

	std::vector<std::string> seen;
};

// the TLS server most tests share: started once, a client certificate required
TlsServer *shared_server = nullptr;
::testing::AssertionResult shared_started = ::testing::AssertionFailure();

class RedisTls : public RedisTlsTest {
protected:
	static void SetUpTestSuite()
	{
		if (certs().empty())
			return;
		shared_server = new TlsServer();
		shared_started = shared_server->start();
	}
	static void TearDownTestSuite()
	{
		delete shared_server;
		shared_server = nullptr;
	}
	void SetUp() override
	{
		RedisTlsTest::SetUp();
		ASSERT_TRUE(shared_started) << "install redis-server (built with TLS): scripts/install-deps.sh";
	}
	TlsServer &server() { return *shared_server; }
};

} // namespace

// ---- the conformance behaviours through TLS, password and client certificate ----

TEST_F(RedisTls, acquire_contend_release_higher_token_and_renew)
{
	auto a = connected(server().url()), b = connected(server().url());
	ASSERT_TRUE(a && b);
	const std::string r = unique_resource("tls/");
	auto first = a->acquire(r, opts(10s));
	ASSERT_TRUE(first) << first.error().message;
	EXPECT_GT(first->token(), 0);
	auto contender = in_other_thread([&] { return b->try_acquire(r, opts(10s)); });
	ASSERT_FALSE(contender) << "granted twice";
	EXPECT_EQ(contender.error().code, Errc::timeout) << contender.error().message;
	auto renewed = first->renew();
	EXPECT_TRUE(renewed) << renewed.error().message;
	auto pttl = server().admin({"PTTL", "pglease:lock:" + r});
	ASSERT_TRUE(pttl && pttl->is_integer());
	EXPECT_GT(pttl->integer, 8000) << "the grant is not on the server, or the renewal did not reach it";
	ASSERT_TRUE(first->release());
	auto second = in_other_thread([&] { return b->acquire(r, opts(10s)); });
	ASSERT_TRUE(second) << second.error().message;
	EXPECT_GT(second->token(), first->token());
	// by token, as the CLI does
	auto token = second->detach();
	auto by_token = a->renew(r, token, 5s);
	ASSERT_TRUE(by_token) << by_token.error().message;
	EXPECT_TRUE(*by_token);
	auto released = a->release(r, token);
	ASSERT_TRUE(released) << released.error().message;
	EXPECT_TRUE(*released);
}

TEST_F(RedisTls, a_deleted_key_is_lost_exactly_once_through_auto_renew)
{
	auto locker = connected(server().url());
	ASSERT_TRUE(locker);
	const std::string r = unique_resource("tls/");
	auto lease = locker->acquire(r, opts(600ms));
	ASSERT_TRUE(lease) << lease.error().message;
	std::atomic<int> lost{0};
	lease->on_lost([&](const pglease::Error &e) {
		seen.push_back(e.message);
		lost++;
	});
	auto deleted = server().admin({"DEL", "pglease:lock:" + r});
	ASSERT_TRUE(deleted && deleted->is_integer() && deleted->integer == 1);
	EXPECT_TRUE(eventually([&] { return lost.load() > 0; }, 1s)) << "no on_lost within 1 s of the DEL";
	std::this_thread::sleep_for(500ms);
	EXPECT_EQ(lost.load(), 1) << "on_lost must be called exactly once";
	EXPECT_FALSE(lease->valid());
}

TEST_F(RedisTls, release_wakes_a_waiter_through_the_tls_subscriber)
{
	// after 1.5 s of waiting a retry is due every 0.5-1 s: a grant within
	// 150 ms of the release, three rounds in a row, is the publish's doing
	auto locker = connected(server().url());
	ASSERT_TRUE(locker);
	for (int round = 0; round < 3; round++) {
		const std::string r = unique_resource("tls/");
		auto held = locker->acquire(r, opts(10s));
		ASSERT_TRUE(held) << held.error().message;
		auto waiter = std::async(std::launch::async, [&] {
			auto lease = locker->acquire(r, opts(10s, 5s));
			return std::make_pair(lease ? std::string() : lease.error().message, Clock::now());
		});
		std::this_thread::sleep_for(1500ms);
		const auto released_at = Clock::now();
		ASSERT_TRUE(held->release());
		auto [error, at] = waiter.get();
		ASSERT_EQ(error, "");
		auto after = std::chrono::duration_cast<milliseconds>(at - released_at).count();
		EXPECT_LT(after, 150) << "round " << round << ": granted " << after
		                      << " ms after the release: not woken by its publish";
	}
}

TEST_F(RedisTls, the_client_options_fields_give_the_same_material_and_the_url_wins)
{
	auto o = quick_backoff();
	o.tls_ca_file = cert("ca.crt");
	o.tls_cert_file = cert("client.crt");
	o.tls_key_file = cert("client.key");
	auto lease = attempt(server().url(""), o);
	ASSERT_TRUE(lease) << lease.error().message;
	EXPECT_TRUE(lease->release());
	// a wrong CA in the field is not used when the URL names the right one
	o.tls_ca_file = cert("other-ca.crt");
	auto url_wins = attempt(server().url("cacert=" + cert("ca.crt")), o);
	EXPECT_TRUE(url_wins) << url_wins.error().message;
}

TEST_F(RedisTls, an_ipv6_literal_and_a_host_name_are_verified_against_the_certificate)
{
	for (const std::string host : {"[::1]", "localhost"}) {
		auto lease = attempt(server().url(query(), host));
		ASSERT_TRUE(lease) << host << ": " << lease.error().message;
		EXPECT_TRUE(lease->release());
	}
}

TEST_F(RedisTls, a_database_is_selected_after_auth_over_tls)
{
	auto locker = connected("rediss://:" + password + "@" + server().node() + "/3?" + query());
	ASSERT_TRUE(locker);
	const std::string r = unique_resource("tls/");
	auto lease = locker->acquire(r, opts(5s));
	ASSERT_TRUE(lease) << lease.error().message;
	auto in0 = server().admin({"EXISTS", "pglease:lock:" + r});
	ASSERT_TRUE(in0 && in0->is_integer());
	EXPECT_EQ(in0->integer, 0) << "the lease went to database 0, not /3";
	EXPECT_TRUE(lease->release());
}

// ---- refusals: each the right Errc, fast ------------------------------------------

TEST_F(RedisTls, a_server_signed_by_an_unknown_ca_is_refused)
{
	auto t = Clock::now();
	expect_failure(attempt(server().url(query("other-ca.crt"))), Errc::permission, "certificate", t);
	// no cacert=: the system's store, which does not hold the test CA either
	t = Clock::now();
	expect_failure(attempt(server().url("cert=" + cert("client.crt") + "&key=" + cert("client.key"))),
	               Errc::permission, "certificate", t);
}

TEST_F(RedisTls, a_client_certificate_of_another_ca_is_refused)
{
	auto t = Clock::now();
	expect_failure(attempt(server().url(query("ca.crt", "other"))), Errc::permission,
	               "refused our TLS connection", t);
}

TEST_F(RedisTls, no_client_certificate_is_refused_when_the_server_requires_one)
{
	auto t = Clock::now();
	expect_failure(attempt(server().url(query("ca.crt", ""))), Errc::permission, "refused our TLS connection",
	               t);
}

TEST_F(RedisTls, a_wrong_password_over_tls_is_permission)
{
	auto t = Clock::now();
	expect_failure(attempt("rediss://:Wr0ng-" + password.substr(7) + "@" + server().node() + "?" + query()),
	               Errc::permission, "refused", t);
}

TEST_F(RedisTls, plain_tcp_to_the_tls_port_fails_fast_saying_so)
{
	auto t = Clock::now();
	expect_failure(attempt("redis://:" + password + "@" + server().node()), Errc::unavailable, "rediss://",
	               t);
}

TEST_F(RedisTlsTest, tls_to_a_plain_port_is_unavailable_fast_saying_so)
{
	ScriptServer plain("redis.sh");
	ASSERT_TRUE(plain.start());
	auto t = Clock::now();
	expect_failure(attempt("rediss://127.0.0.1:" + std::to_string(plain.port()) + "?" + query()),
	               Errc::unavailable, "TLS", t);
}

TEST_F(RedisTlsTest, unusable_material_is_invalid_before_any_io)
{
	const std::string dead = "127.0.0.1:" + std::to_string(free_port()); // nothing listens there
	auto t = Clock::now();
	expect_failure(attempt("rediss://" + dead + "?cacert=/nonexistent/ca.crt"), Errc::invalid_argument,
	               "/nonexistent/ca.crt", t, 100ms);
	expect_failure(attempt("rediss://" + dead + "?cacert=" + cert("ca.crt") + "&cert=" + cert("client.crt")),
	               Errc::invalid_argument, "both cert= and key=", t, 100ms);
	expect_failure(attempt("rediss://" + dead + "?cacert=" + certs()), Errc::invalid_argument,
	               "not a regular file", t, 100ms);
	expect_failure(attempt("rediss://" + dead + "?ca=" + cert("ca.crt")), Errc::invalid_argument,
	               "unknown query parameter", t, 100ms);
	// a file that is there but no PEM of the right kind; a key of another certificate
	expect_failure(attempt("rediss://" + dead + "?cacert=" + cert("client.key")), Errc::invalid_argument,
	               "not usable", t, 100ms);
	expect_failure(attempt("rediss://:" + password + "@" + dead + "?cacert=" + cert("ca.crt") +
	                       "&cert=" + cert("client.crt") + "&key=" + cert("other.key")),
	               Errc::invalid_argument, "other.key\" is not usable", t, 100ms);
	// TLS material for a plain scheme is refused, not ignored
	expect_failure(attempt("redis://" + dead + "?cacert=" + cert("ca.crt")), Errc::invalid_argument,
	               "rediss://", t, 100ms);
	auto o = quick_backoff();
	o.tls_ca_file = cert("ca.crt");
	expect_failure(attempt("redis://" + dead, o), Errc::invalid_argument, "rediss://", t, 100ms);
	o.tls_ca_file = "/nonexistent/options-ca.crt";
	expect_failure(attempt("rediss://" + dead, o), Errc::invalid_argument, "/nonexistent/options-ca.crt", t,
	               100ms);
}

// a server presenting certificate NAME (signed by the test CA) is refused, fast
class RedisTlsServerCertificate : public RedisTlsTest {
protected:
	void refused(const std::string &name, const std::string &reason)
	{
		TlsServer bad("tls-cert-file=" + cert(name + ".crt") + " tls-key-file=" + cert(name + ".key"));
		ASSERT_TRUE(bad.start());
		auto t = Clock::now();
		expect_failure(attempt(bad.url()), Errc::permission, reason, t);
	}
};

TEST_F(RedisTlsServerCertificate, an_expired_server_certificate_is_refused)
{
	refused("expired", "expired");
}

TEST_F(RedisTlsServerCertificate, a_server_certificate_for_another_host_is_refused)
{
	refused("wrong-host", "mismatch");
}

TEST_F(RedisTlsTest, a_server_not_asking_for_a_client_certificate_takes_the_password_alone)
{
	TlsServer optional("tls-auth-clients=optional");
	ASSERT_TRUE(optional.start());
	auto lease = attempt(optional.url(query("ca.crt", "")));
	ASSERT_TRUE(lease) << lease.error().message;
	EXPECT_TRUE(lease->release());
}

// ---- Redlock over three TLS servers --------------------------------------------

TEST_F(RedisTlsTest, redlock_over_three_tls_servers_grants_contends_renews_and_releases)
{
	std::vector<std::unique_ptr<TlsServer>> nodes;
	std::string list;
	for (int i = 0; i < 3; i++) {
		nodes.push_back(std::make_unique<TlsServer>());
		ASSERT_TRUE(nodes.back()->start());
		list += (i ? "," : "") + nodes.back()->node();
	}
	auto locker = connected("redlocks://:" + password + "@" + list + "?" + query());
	ASSERT_TRUE(locker);
	const std::string r = unique_resource("tls/");
	auto lease = locker->acquire(r, opts(10s));
	ASSERT_TRUE(lease) << lease.error().message;
	for (auto &node : nodes) {
		auto held = node->admin({"EXISTS", "pglease:lock:" + r});
		ASSERT_TRUE(held && held->is_integer()) << (held ? held->text : held.error().message);
		EXPECT_EQ(held->integer, 1) << "not set on " << node->node();
	}
	auto second = in_other_thread([&] { return locker->try_acquire(r, opts(10s)); });
	ASSERT_FALSE(second) << "granted twice";
	EXPECT_EQ(second.error().code, Errc::timeout) << second.error().message;
	EXPECT_TRUE(lease->renew());
	EXPECT_TRUE(lease->release());
	auto again = in_other_thread([&] { return locker->acquire(r, opts(10s)); });
	ASSERT_TRUE(again) << again.error().message;
	EXPECT_TRUE(again->release());
	// a client whose certificate no node accepts is refused by every one: permission
	auto t = Clock::now();
	expect_failure(attempt("redlocks://:" + password + "@" + list + "?" + query("ca.crt", "other")),
	               Errc::permission, "refused", t);
}
