// etcd_secure_test.cpp -- etcds:// (TLS, client certificates) and etcd's
// user/password authentication, against real etcd members started with
// scripts/etcd.sh on ports drawn free (support.hpp's ScriptServer): one with
// --tls (HTTPS only, --client-cert-auth, certificates from scripts/certs.sh),
// members serving an expired and a wrong-host certificate, and one with auth
// enabled by etcdctl (root, a user whose role grants only the lock prefix
// pglease/lock/, and an outsider whose role grants another prefix), its
// simple tokens expiring after 1 s idle (--auth-token-ttl 1).  Every error
// message a test sees is checked for the passwords.  Never mocked, never
// skipped.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "pglease/pglease.hpp"
#include "support.hpp"

using pglease::Errc;
using namespace test_support;

namespace {

const std::vector<int> member_ports = {0, 1}; // client port P, peer port P+1

// the passwords of the auth member's users: no message may show them
const std::string root_password = "R00t-pw-7d1e";
const std::string locker_password = "Lk@pw-93f2"; // an '@': written %40 in URLs
const std::string locker_password_url = "Lk%40pw-93f2";
const std::string outsider_password = "0ut-pw-c4a8";

// clean -- the error shows none of the passwords (raw or URL-encoded)
::testing::AssertionResult
clean(const pglease::Error &e)
{
	for (const std::string &secret : {root_password, locker_password, locker_password_url, outsider_password})
		if (e.message.find(secret) != std::string::npos)
			return ::testing::AssertionFailure() << "a password in the message: " << e.message;
	return ::testing::AssertionSuccess() << e.message;
}

// failed -- R failed with CODE within LIMIT (since T), its message cleanly
// naming WHAT
template <class R>
void
expect_failure(const R &r, Errc code, const std::string &what, Clock::time_point t, milliseconds limit = 3s)
{
	ASSERT_FALSE(r) << "succeeded";
	EXPECT_EQ(r.error().code, code) << r.error();
	EXPECT_TRUE(clean(r.error()));
	EXPECT_NE(r.error().message.find(what), std::string::npos) << "no \"" << what << "\" in: " << r.error();
	EXPECT_FALSE(pglease::is_retryable(r.error())) << r.error();
	EXPECT_LT(ms_since(t), limit.count()) << "not fast: " << r.error();
}

std::string
unique_resource()
{
	return test_support::unique_resource("etcd-secure/");
}

// handoff -- acquire, renew, a waiter granted on release with a higher token
void
handoff(pglease::Locker &holder_side, pglease::Locker &waiter_side)
{
	auto r = unique_resource();
	auto holder = holder_side.acquire(r, opts(10s));
	ASSERT_TRUE(holder) << holder.error();
	ASSERT_TRUE(holder->renew()) << "renew";
	auto waiter = std::async(std::launch::async, [&] { return waiter_side.acquire(r, opts(10s, 10s)); });
	std::this_thread::sleep_for(300ms);
	const auto first = holder->token();
	auto released = holder->release();
	ASSERT_TRUE(released) << released.error();
	auto second = waiter.get();
	ASSERT_TRUE(second) << second.error();
	EXPECT_GT(second->token(), first);
	auto renewed = second->renew();
	EXPECT_TRUE(renewed) << renewed.error();
	auto end = second->release();
	EXPECT_TRUE(end) << end.error();
}

// ---- TLS -----------------------------------------------------------------------

ScriptServer *tls_member = nullptr;

class EtcdTls : public ::testing::Test {
protected:
	static void SetUpTestSuite()
	{
		if (certs().empty()) {
			started = ::testing::AssertionFailure() << "scripts/certs.sh failed (is openssl installed?)";
			return;
		}
		tls_member = new ScriptServer("etcd.sh", "--tls '" + certs() + "'", member_ports);
		started = tls_member->start();
	}
	static void TearDownTestSuite()
	{
		delete tls_member;
		tls_member = nullptr;
	}
	void SetUp() override { ASSERT_TRUE(started) << "install etcd: scripts/install-deps.sh"; }

	// url -- etcds:// to the TLS member with QUERY
	static std::string url(const std::string &query, int port = 0)
	{
		return "etcds://127.0.0.1:" + std::to_string(port ? port : tls_member->port()) + "/" +
		       (query.empty() ? "" : "?" + query);
	}
	static std::string full_query(const std::string &ca = "ca.crt", const std::string &client = "client")
	{
		return "cacert=" + cert(ca) + "&cert=" + cert(client + ".crt") + "&key=" + cert(client + ".key");
	}
	// attempt -- one try_acquire through URL (connect errors returned too)
	static pglease::Result<pglease::Lease> attempt(const std::string &u,
	                                               pglease::ClientOptions o = quick_backoff())
	{
		auto locker = pglease::connect(u, o);
		if (!locker)
			return locker.error();
		return (*locker)->try_acquire(unique_resource(), opts(5s));
	}

	static inline ::testing::AssertionResult started = ::testing::AssertionFailure();
};

TEST_F(EtcdTls, AcquireRenewReleaseAndAWaitHandOff)
{
	auto a = pglease::connect(url(full_query()), quick_backoff());
	ASSERT_TRUE(a) << a.error();
	auto b = pglease::connect(url(full_query()), quick_backoff());
	ASSERT_TRUE(b) << b.error();
	handoff(**a, **b);
}

TEST_F(EtcdTls, TheClientOptionsFieldsGiveTheSameMaterial)
{
	auto o = quick_backoff();
	o.tls_ca_file = cert("ca.crt");
	o.tls_cert_file = cert("client.crt");
	o.tls_key_file = cert("client.key");
	auto a = pglease::connect(url(""), o);
	ASSERT_TRUE(a) << a.error();
	auto lease = (*a)->try_acquire(unique_resource(), opts(5s));
	ASSERT_TRUE(lease) << lease.error();
	EXPECT_TRUE(lease->release());
	// the URL's parameter wins over the field: a wrong field is not used
	o.tls_ca_file = cert("other-ca.crt");
	auto b = attempt(url("cacert=" + cert("ca.crt")), o);
	EXPECT_TRUE(b) << b.error();
}

TEST_F(EtcdTls, WithoutTheCaTheServerIsRefused)
{
	auto t = Clock::now();
	expect_failure(attempt(url("cert=" + cert("client.crt") + "&key=" + cert("client.key"))),
	               Errc::permission, "certificate", t);
}

TEST_F(EtcdTls, AnotherCaRefusesTheServer)
{
	auto t = Clock::now();
	expect_failure(attempt(url(full_query("other-ca.crt"))), Errc::permission, "certificate", t);
}

TEST_F(EtcdTls, WithoutAClientCertificateTheServerRefuses)
{
	auto t = Clock::now();
	expect_failure(attempt(url("cacert=" + cert("ca.crt"))), Errc::permission, "refused the TLS connection",
	               t);
}

TEST_F(EtcdTls, AClientCertificateOfAnotherCaIsRefused)
{
	auto t = Clock::now();
	expect_failure(attempt(url(full_query("ca.crt", "other"))), Errc::permission,
	               "refused the TLS connection", t);
}

TEST_F(EtcdTls, BadMaterialIsInvalidBeforeAnyIo)
{
	const int dead = free_port(); // nothing listens: no I/O may be needed to refuse these
	auto t = Clock::now();
	expect_failure(attempt(url("cacert=/nonexistent/ca.crt", dead)), Errc::invalid_argument,
	               "/nonexistent/ca.crt", t, 100ms);
	expect_failure(attempt(url("cacert=" + cert("ca.crt") + "&cert=" + cert("client.crt"), dead)),
	               Errc::invalid_argument, "both cert= and key=", t, 100ms);
	expect_failure(attempt(url("cacert=" + certs(), dead)), Errc::invalid_argument, "not a regular file", t,
	               100ms);
	expect_failure(attempt(url("ca=" + cert("ca.crt"), dead)), Errc::invalid_argument, "unknown query", t,
	               100ms);
	expect_failure(attempt("etcd://127.0.0.1:" + std::to_string(dead) + "/?cacert=" + cert("ca.crt")),
	               Errc::invalid_argument, "etcds://", t, 100ms);
	auto o = quick_backoff();
	o.tls_ca_file = cert("ca.crt");
	expect_failure(attempt("etcd://127.0.0.1:" + std::to_string(dead), o), Errc::invalid_argument, "etcds://",
	               t, 100ms);
	o.tls_ca_file = "/nonexistent/options-ca.crt";
	expect_failure(attempt(url("", dead), o), Errc::invalid_argument, "/nonexistent/options-ca.crt", t,
	               100ms);
}

// a member serving certificate NAME (signed by the test CA) is refused, fast
void
refused_server_certificate(const std::string &name, const std::string &reason)
{
	ScriptServer bad("etcd.sh", "--tls '" + certs() + "' --server-cert " + name, member_ports);
	ASSERT_TRUE(bad.start());
	auto t = Clock::now();
	auto locker =
	    pglease::connect("etcds://127.0.0.1:" + std::to_string(bad.port()) + "?cacert=" + cert("ca.crt") +
	                         "&cert=" + cert("client.crt") + "&key=" + cert("client.key"),
	                     quick_backoff());
	ASSERT_TRUE(locker) << locker.error();
	expect_failure((*locker)->try_acquire(unique_resource(), opts(5s)), Errc::permission, reason, t);
}

TEST_F(EtcdTls, AnExpiredServerCertificateIsRefused)
{
	refused_server_certificate("expired", "expired");
}

TEST_F(EtcdTls, AServerCertificateForAnotherHostIsRefused)
{
	refused_server_certificate("wrong-host", "subject name");
}

// ---- authentication -----------------------------------------------------------

ScriptServer *auth_member = nullptr;

// etcdctl -- etcdctl against the auth member (as USER:PASSWORD when given)
Ran
etcdctl(const std::string &args, const std::string &user = "")
{
	return run_command(
	    "ETCDCTL_API=3 etcdctl --endpoints=http://127.0.0.1:" + std::to_string(auth_member->port()) +
	    (user.empty() ? "" : " --user='" + user + "'") + " " + args);
}

// enable_auth -- root, the lock-prefix role and user, an outsider with a role
// on another prefix; then auth enable (the lines docs give operators)
::testing::AssertionResult
enable_auth()
{
	for (const std::string &line :
	     {"user add root --new-user-password='" + root_password + "'", std::string("role add pglease-locker"),
	      std::string("role grant-permission pglease-locker readwrite pglease/lock/ --prefix=true"),
	      "user add locker --new-user-password='" + locker_password + "'",
	      std::string("user grant-role locker pglease-locker"), std::string("role add elsewhere"),
	      std::string("role grant-permission elsewhere readwrite elsewhere/ --prefix=true"),
	      "user add outsider --new-user-password='" + outsider_password + "'",
	      std::string("user grant-role outsider elsewhere"), std::string("auth enable")}) {
		Ran ran = etcdctl(line);
		if (!ran.ok())
			return ::testing::AssertionFailure() << "etcdctl " << line << ": " << ran.output;
	}
	return ::testing::AssertionSuccess();
}

class EtcdAuth : public ::testing::Test {
protected:
	static void SetUpTestSuite()
	{
		auth_member = new ScriptServer("etcd.sh", "--auth-token-ttl 1", member_ports);
		started = auth_member->start();
		if (started)
			started = enable_auth();
	}
	static void TearDownTestSuite()
	{
		delete auth_member;
		auth_member = nullptr;
	}
	void SetUp() override
	{
		ASSERT_TRUE(started) << "install etcd (etcd-server, etcd-client): scripts/install-deps.sh";
	}

	static std::string url(const std::string &userinfo)
	{
		return "etcd://" + userinfo + (userinfo.empty() ? "" : "@") +
		       "127.0.0.1:" + std::to_string(auth_member->port());
	}
	static std::unique_ptr<pglease::Locker> as(const std::string &userinfo)
	{
		auto r = pglease::connect(url(userinfo), quick_backoff());
		EXPECT_TRUE(r) << r.error();
		return r ? std::move(*r) : nullptr;
	}

	static inline ::testing::AssertionResult started = ::testing::AssertionFailure();
};

const std::string locker_user = "locker:" + locker_password_url;

TEST_F(EtcdAuth, APrefixLimitedUserAcquiresRenewsReleasesAndWaits)
{
	auto a = as(locker_user), b = as(locker_user);
	ASSERT_TRUE(a && b);
	handoff(*a, *b);
	// and by token, as the CLI does
	auto r = unique_resource();
	auto lease = a->acquire(r, opts(10s));
	ASSERT_TRUE(lease) << lease.error();
	auto renewed = b->renew(r, lease->token(), 10s);
	ASSERT_TRUE(renewed) << renewed.error();
	EXPECT_TRUE(*renewed);
	auto released = b->release(r, lease->token());
	ASSERT_TRUE(released) << released.error();
	EXPECT_TRUE(*released);
}

TEST_F(EtcdAuth, AWrongPasswordIsPermissionFast)
{
	auto t = Clock::now();
	auto wrong = as("locker:" + outsider_password);
	ASSERT_TRUE(wrong);
	expect_failure(wrong->try_acquire(unique_resource(), opts(5s)), Errc::permission, "authentication", t);
	auto nobody = as("nobody:" + root_password);
	ASSERT_TRUE(nobody);
	expect_failure(nobody->try_acquire(unique_resource(), opts(5s)), Errc::permission, "authentication", t);
}

TEST_F(EtcdAuth, WithoutCredentialsTheMessageSaysToGiveThem)
{
	auto anonymous = as("");
	ASSERT_TRUE(anonymous);
	auto t = Clock::now();
	expect_failure(anonymous->try_acquire(unique_resource(), opts(5s)), Errc::permission, "user:password@",
	               t);
}

// Elections live under election_prefix= ("pglease/election/"): a user with
// a role on the lock prefix alone is refused a campaign, and the refusal
// names the key and the prefix it needs (issue 36, item 11: it said "lock key")
TEST_F(EtcdAuth, ACampaignWithoutARoleOnTheElectionPrefixSaysWhichPrefix)
{
	auto locker = as(locker_user);
	ASSERT_TRUE(locker);
	auto t = Clock::now();
	auto o = opts(5s);
	expect_failure(locker->campaign("auth/" + unique_resource(), "me", o), Errc::permission, "pglease/election/", t);
	auto refused = locker->campaign("auth/" + unique_resource(), "me", o);
	ASSERT_FALSE(refused);
	EXPECT_NE(refused.error().message.find("election_prefix="), std::string::npos) << refused.error();
	EXPECT_EQ(refused.error().message.find("lock key"), std::string::npos) << refused.error();
}

TEST_F(EtcdAuth, AUserWithoutRightsOnThePrefixCannotEndTheHoldersLease)
{
	auto holder_side = as(locker_user), outsider = as("outsider:" + outsider_password);
	ASSERT_TRUE(holder_side && outsider);
	auto r = unique_resource();
	auto holder = holder_side->acquire(r, opts(10s));
	ASSERT_TRUE(holder) << holder.error();
	auto t = Clock::now();
	expect_failure(outsider->release(r, holder->token()), Errc::permission, "permission denied", t);
	expect_failure(outsider->renew(r, holder->token(), 10s), Errc::permission, "permission denied", t);
	expect_failure(in_other_thread([&] { return outsider->try_acquire(r, opts(5s)); }), Errc::permission,
	               "permission denied", t);
	Ran del = etcdctl("del --prefix pglease/lock/", "outsider:" + outsider_password);
	EXPECT_FALSE(del.ok()) << "the outsider deleted the lock keys: " << del.output;
	EXPECT_NE(del.output.find("permission denied"), std::string::npos) << del.output;
	// the holder still holds: its renewal works and nobody else gets in
	auto renewed = holder->renew();
	EXPECT_TRUE(renewed) << renewed.error();
	auto contender = in_other_thread([&] { return holder_side->try_acquire(r, opts(10s)); });
	ASSERT_FALSE(contender) << "granted twice";
	EXPECT_EQ(contender.error().code, Errc::timeout) << contender.error();
	EXPECT_TRUE(holder->release());
}

// Beyond the lock keys: the outsider cannot revoke the holder's etcd lease
// (etcd checks write rights on the keys attached to it), nor take the lock
// user's rights away (role, user and auth changes are root's).  What etcd
// 3.4 does allow anyone authenticated: a keepalive of any lease ID (it reads
// the ID with LeaseLeases), which ends no lease but can keep a crashed
// holder's grant alive -- docs/production.md says so.
TEST_F(EtcdAuth, AnOutsiderCanNeitherRevokeTheHoldersLeaseNorLockTheLockUserOut)
{
	auto holder_side = as(locker_user);
	ASSERT_TRUE(holder_side);
	auto r = unique_resource();
	// a TTL of at most 5 s keeps the key under the lease its name gives (a
	// longer one moves it to a lease of the full TTL)
	auto holder = holder_side->acquire(r, opts(4s));
	ASSERT_TRUE(holder) << holder.error();
	Ran keys = etcdctl("get --prefix --keys-only pglease/lock/" + r + "/", "root:" + root_password);
	ASSERT_TRUE(keys.ok()) << keys.output;
	const auto slash = keys.output.find_last_of('/');
	ASSERT_NE(slash, std::string::npos) << keys.output;
	const std::string lease_hex = keys.output.substr(slash + 1, 16); // the key ends with its lease ID
	const std::string outsider = "outsider:" + outsider_password;
	for (const std::string &line :
	     {"lease revoke " + lease_hex,
	      std::string("role revoke-permission pglease-locker pglease/lock/ --prefix=true"),
	      std::string("user revoke-role locker pglease-locker"), std::string("user delete locker"),
	      std::string("auth disable")}) {
		Ran ran = etcdctl(line, outsider);
		EXPECT_FALSE(ran.ok()) << "the outsider could: etcdctl " << line << ": " << ran.output;
		EXPECT_NE(ran.output.find("permission denied"), std::string::npos) << line << ": " << ran.output;
	}
	Ran kept = etcdctl("lease keep-alive --once " + lease_hex, outsider);
	EXPECT_TRUE(kept.ok()) << "etcd now refuses an outsider's keepalive: update docs/production.md: "
	                       << kept.output;
	// the holder still holds, and the lock user can still take other locks
	auto renewed = holder->renew();
	EXPECT_TRUE(renewed) << renewed.error();
	auto other = in_other_thread([&] { return holder_side->try_acquire(unique_resource(), opts(5s)); });
	EXPECT_TRUE(other) << "the lock user was locked out: " << other.error();
	EXPECT_TRUE(holder->release());
}

// a token etcd forgot (expired after 1 s idle) is replaced at the next call
TEST_F(EtcdAuth, AnExpiredTokenIsReplacedAtTheNextCall)
{
	auto locker = as(locker_user);
	ASSERT_TRUE(locker);
	auto r = unique_resource();
	auto o = opts(10s);
	o.auto_renew = false;
	auto lease = locker->acquire(r, o);
	ASSERT_TRUE(lease) << lease.error();
	// a token of the same user, issued now and idle as long as the client's:
	// etcd forgets it (so the client's own token is gone too)
	const std::string gateway = "http://127.0.0.1:" + std::to_string(auth_member->port());
	Ran login = run_command("curl -s -m 5 " + gateway +
	                        "/v3/auth/authenticate -d '{\"name\":\"locker\",\"password\":\"" +
	                        locker_password + "\"}'");
	const std::string token = login.output.substr(0, login.output.rfind('"'));
	ASSERT_NE(login.output.find("\"token\":\""), std::string::npos) << login.output;
	std::this_thread::sleep_for(2500ms);
	Ran stale = run_command("curl -s -m 5 -H 'Authorization: " + token.substr(token.rfind('"') + 1) + "' " +
	                        gateway + "/v3/kv/range -d '{\"key\":\"cGdsZWFzZS9sb2NrLw==\"}'");
	ASSERT_NE(stale.output.find("invalid auth token"), std::string::npos) << "not expired: " << stale.output;
	auto renewed = lease->renew();
	EXPECT_TRUE(renewed) << renewed.error();
	std::this_thread::sleep_for(2500ms);
	auto released = lease->release();
	EXPECT_TRUE(released) << released.error();
	// held through heartbeats that each find the token expired (heartbeat 3.3 s > 1 s)
	auto kept = locker->acquire(r, opts(10s));
	ASSERT_TRUE(kept) << kept.error();
	std::this_thread::sleep_for(7500ms);
	EXPECT_TRUE(kept->valid());
	auto end = kept->release();
	EXPECT_TRUE(end) << end.error();
}

// auth disable drops every token; after auth enable the client authenticates again
TEST_F(EtcdAuth, AuthDisabledAndEnabledAgainIsSurvived)
{
	auto locker = as(locker_user);
	ASSERT_TRUE(locker);
	auto r = unique_resource();
	auto o = opts(30s);
	o.auto_renew = false;
	auto lease = locker->acquire(r, o);
	ASSERT_TRUE(lease) << lease.error();
	Ran off = etcdctl("auth disable", "root:" + root_password);
	ASSERT_TRUE(off.ok()) << off.output;
	auto renewed = lease->renew();
	EXPECT_TRUE(renewed) << "auth off: " << renewed.error();
	Ran on = etcdctl("auth enable");
	ASSERT_TRUE(on.ok()) << on.output;
	renewed = lease->renew();
	EXPECT_TRUE(renewed) << "auth on again: " << renewed.error();
	auto released = lease->release();
	EXPECT_TRUE(released) << released.error();
}

} // namespace
