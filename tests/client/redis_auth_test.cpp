// redis_auth_test.cpp -- the redis:// and redlock:// providers against
// redis-servers that want credentials (issue 22): a --requirepass server
// (AUTH password), an ACL user limited to the lock keys (AUTH user password),
// another ACL user without rights on them, and Redlock over three
// password-protected servers.  Real redis-servers started by scripts/redis.sh
// (requirepass=PW) on free ports (support.hpp's ScriptServer); never mocked,
// never skipped.  Every error message a test sees is checked for the
// passwords' text.
#include <chrono>
#include <future>
#include <initializer_list>
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
using pglease::detail::redis::Subscriber;

// The passwords of the tests: the admin's (requirepass: one redis.conf word),
// the lock user's (with '@', ':', '/' and '%', written %-escaped in URLs),
// the intruder's, and one nobody has.
const std::string admin_pw = "Adm1nPw-7Qx";
const std::string locker_pw = "L0ck@er:pw/7%x";
const std::string locker_pw_in_url = "L0ck%40er%3Apw%2F7%25x";
const std::string intruder_pw = "Intrud3rPw-9Zz";
const std::string wrong_pw = "Wr0ngPw-5Kk";

// words -- LINE split at its spaces (an ACL SETUSER line as argv)
std::vector<std::string>
words(const std::string &line)
{
	std::vector<std::string> out;
	std::istringstream in(line);
	for (std::string w; in >> w;)
		out.push_back(w);
	return out;
}

// The ACL user the lock providers need, exactly as the docs give it
// ("Connecting to a production Redis"; PASSWORD replaced): the lock and
// token keys, the release channel, the commands the scripts call, SUBSCRIBE
// for the waiters' wake-up and SELECT for a /db.
const std::string locker_acl_line =
    "ACL SETUSER pglease reset on >PASSWORD ~pglease:lock:* ~pglease:token:* resetchannels "
    "&pglease:released:* +evalsha +eval +get +set +pexpire +pttl +incr +del +publish +subscribe +select";

std::vector<std::string>
locker_acl()
{
	auto argv = words(locker_acl_line);
	for (auto &w : argv)
		if (w == ">PASSWORD")
			w = ">" + locker_pw;
	return argv;
}

// The user of shared leases and permits: the lock's line and the sorted-set
// commands docs/production.md adds for them (with them a waiting writer
// marks itself at the writers' key, pglease:lock:<r> NUL "writers").
const std::string sharer_acl_line =
    "ACL SETUSER sharer reset on >PASSWORD ~pglease:lock:* ~pglease:token:* resetchannels "
    "&pglease:released:* +evalsha +eval +get +set +pexpire +pttl +incr +del +publish +subscribe +select "
    "+time +zadd +zrange +zrangebyscore +zremrangebyscore +zscore +zrem";

// Another client of the same server: every command, no lock key.
const std::string intruder_acl_line = "ACL SETUSER intruder reset on >" + intruder_pw + " ~other:* +@all";

// no_secret -- TEXT shows no password, raw or %-escaped, nor a telling piece
::testing::AssertionResult
no_secret(const std::string &text)
{
	for (const std::string &piece : {admin_pw, locker_pw, locker_pw_in_url, intruder_pw, wrong_pw,
	                                 std::string("Adm1nPw"), std::string("L0ck@er"), std::string("L0ck%40"),
	                                 std::string("pw/7"), std::string("Intrud3r"), std::string("Wr0ngPw")})
		if (text.find(piece) != std::string::npos)
			return ::testing::AssertionFailure() << "shows \"" << piece << "\": " << text;
	return ::testing::AssertionSuccess();
}

// A redis-server with requirepass=admin_pw, started at once on a free port
class AuthServer : public ScriptServer {
public:
	AuthServer() : ScriptServer("redis.sh", "requirepass=" + admin_pw) { started_ = start(); }
	const ::testing::AssertionResult &started() const { return started_; }

	std::string url(const std::string &userinfo, const std::string &path = "") const
	{
		return "redis://" + userinfo + "@127.0.0.1:" + std::to_string(port()) + path;
	}
	std::string node() const { return "127.0.0.1:" + std::to_string(port()); }

	// as -- one command on a connection of its own, AUTHed as user (empty: the default user)
	pglease::Result<Reply> as(const std::string &user, const std::string &pw,
	                          const std::vector<std::string> &argv)
	{
		auto c = Connection::open({"127.0.0.1", port()}, {1000ms, 1000ms}, 0, Credentials{user, pw});
		if (!c)
			return c.error();
		std::vector<std::string_view> args(argv.begin(), argv.end());
		return c->command(args);
	}
	pglease::Result<Reply> admin(const std::vector<std::string> &argv) { return as("", admin_pw, argv); }

	// acl -- ACL SETUSER ... as the admin; true when the server said OK
	::testing::AssertionResult acl(const std::vector<std::string> &setuser)
	{
		auto r = admin(setuser);
		if (r && r->is_status() && r->text == "OK")
			return ::testing::AssertionSuccess();
		return ::testing::AssertionFailure() << "ACL SETUSER: " << (r ? r->text : r.error().message);
	}

private:
	::testing::AssertionResult started_ = ::testing::AssertionFailure();
};

class RedisAuth : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_TRUE(server.started()) << "install redis-server: scripts/install-deps.sh";
		ASSERT_TRUE(server.acl(locker_acl()));
		ASSERT_TRUE(server.acl(words(intruder_acl_line)));
	}
	void TearDown() override
	{
		for (const auto &m : seen) {
			EXPECT_TRUE(no_secret(m));
			std::cout << "  message: " << m << "\n";
		}
	}
	// connected -- a Locker for url (connect does no I/O: it must not fail)
	std::unique_ptr<pglease::Locker> connected(const std::string &url)
	{
		auto r = pglease::connect(url, quick_backoff());
		if (!r) {
			seen.push_back(r.error().message);
			ADD_FAILURE() << "connect: " << r.error();
			return nullptr;
		}
		return std::move(*r);
	}
	// refused -- ERROR is Errc::permission, not retryable, and noted for the secret check
	::testing::AssertionResult refused(const pglease::Error &error)
	{
		seen.push_back(error.message);
		if (error.code != Errc::permission)
			return ::testing::AssertionFailure() << "not permission: " << error;
		if (pglease::is_retryable(error))
			return ::testing::AssertionFailure() << "retryable: " << error;
		return ::testing::AssertionSuccess();
	}
	// hand_off -- acquire, renew, a waiter in another thread granted at the
	// release with a higher token, token-level renew and release
	void hand_off(pglease::Locker &locker, const std::string &r);

	AuthServer server;
	std::vector<std::string> seen;
};

void
RedisAuth::hand_off(pglease::Locker &locker, const std::string &r)
{
	auto first = locker.acquire(r, opts(10s));
	ASSERT_TRUE(first) << first.error();
	EXPECT_GT(first->token(), 0);
	ASSERT_TRUE(first->renew());
	auto waiter = std::async(std::launch::async, [&] { return locker.acquire(r, opts(10s, 5s)); });
	std::this_thread::sleep_for(300ms);
	EXPECT_EQ(waiter.wait_for(0ms), std::future_status::timeout) << "granted while held";
	const auto first_token = first->token();
	ASSERT_TRUE(first->release());
	auto second = waiter.get();
	ASSERT_TRUE(second) << second.error();
	EXPECT_GT(second->token(), first_token);
	auto token = second->detach();
	auto renewed = locker.renew(r, token, 5s);
	ASSERT_TRUE(renewed) << renewed.error();
	EXPECT_TRUE(*renewed);
	auto released = locker.release(r, token);
	ASSERT_TRUE(released) << released.error();
	EXPECT_TRUE(*released);
}

// redlock_round -- a grant set on every node, a contender refused, renew,
// release, and a grant again
void
redlock_round(pglease::Locker &locker, std::vector<std::unique_ptr<AuthServer>> &nodes)
{
	auto lease = locker.acquire("auth/redlock", opts(10s));
	ASSERT_TRUE(lease) << lease.error();
	for (auto &node : nodes) {
		auto held = node->admin({"EXISTS", "pglease:lock:auth/redlock"});
		ASSERT_TRUE(held && held->is_integer());
		EXPECT_EQ(held->integer, 1) << "not set on " << node->node();
	}
	auto second =
	    std::async(std::launch::async, [&] { return locker.try_acquire("auth/redlock", opts(10s)); }).get();
	ASSERT_FALSE(second) << "granted twice";
	EXPECT_EQ(second.error().code, Errc::timeout) << second.error();
	ASSERT_TRUE(lease->renew());
	ASSERT_TRUE(lease->release());
	auto again =
	    std::async(std::launch::async, [&] { return locker.acquire("auth/redlock", opts(10s)); }).get();
	ASSERT_TRUE(again) << again.error();
	ASSERT_TRUE(again->release());
}

} // namespace

// ---- the URL's credentials (no server) ------------------------------------------

TEST(RedisAuthUrl, credentials_are_parsed_and_percent_decoded)
{
	using pglease::detail::redis::parse_url;
	auto plain = parse_url("redis://:" + admin_pw + "@h:1");
	ASSERT_TRUE(plain) << plain.error();
	EXPECT_EQ(plain->credentials.user, "");
	EXPECT_EQ(plain->credentials.password, admin_pw);
	auto escaped = parse_url("redis://pg%6Cease:" + locker_pw_in_url + "@h:1/3");
	ASSERT_TRUE(escaped) << escaped.error();
	EXPECT_EQ(escaped->credentials.user, "pglease");
	EXPECT_EQ(escaped->credentials.password, locker_pw);
	EXPECT_EQ(escaped->db, 3);
	// unescaped '@', ':' and '/' in the password: the last '@' ends it
	auto raw = parse_url("redis://u:a@b:c/d@h:1");
	ASSERT_TRUE(raw) << raw.error();
	EXPECT_EQ(raw->credentials.password, "a@b:c/d");
	EXPECT_EQ(raw->nodes.at(0).host, "h");
	auto lock = parse_url("redlock://u:" + admin_pw + "@a:1,b:2,c:3");
	ASSERT_TRUE(lock) << lock.error();
	EXPECT_EQ(lock->nodes.size(), 3u);
	EXPECT_EQ(lock->credentials.password, admin_pw);
}

TEST(RedisAuthUrl, malformed_credentials_and_unsupported_schemes_are_refused_without_the_password)
{
	struct Case {
		std::string url;
		const char *says;
	};
	const Case cases[] = {
	    {"redis://" + admin_pw + "@h:1", "[user]:password@"},
	    {"redis://u:@h:1", "password is empty"},
	    {"redis://:@h:1", "password is empty"},
	    {"redis://u:" + admin_pw + "%4@h:1", "two hex digits"},
	    {"redis://u:%zz" + admin_pw + "@h:1", "two hex digits"},
	    {"redis://u:" + admin_pw + "@h", "missing port"},
	    {"redis://u:" + admin_pw + "@h:1?x=1", "query"},
	    {"rediss://u:" + admin_pw + "@h:1?cacert=/nonexistent/ca.crt", "/nonexistent/ca.crt"},
	    {"rediss+sentinel://u:" + admin_pw + "@s1:1,s2:2/mymaster", "not supported"},
	    {"redlock://u:" + admin_pw + "@a:1,b:2", "at least 3"},
	};
	for (const Case &c : cases) {
		auto target = pglease::detail::redis::parse_url(c.url);
		if (target) {
			ADD_FAILURE() << "accepted: " << c.says;
			continue;
		}
		EXPECT_EQ(target.error().code, Errc::invalid_argument);
		EXPECT_NE(target.error().message.find(c.says), std::string::npos)
		    << target.error().message << " should say " << c.says;
		EXPECT_TRUE(no_secret(target.error().message));
		// through connect() too: its messages are redacted as well
		auto locker = pglease::connect(c.url);
		ASSERT_FALSE(locker);
		EXPECT_EQ(locker.error().code, Errc::invalid_argument);
		EXPECT_TRUE(no_secret(locker.error().message));
		std::cout << "  " << target.error().message << "\n";
	}
}

// ---- a --requirepass server ------------------------------------------------------

TEST_F(RedisAuth, requirepass_server_acquire_renew_release_and_hand_off_with_the_password)
{
	auto locker = connected(server.url(":" + admin_pw));
	ASSERT_TRUE(locker);
	hand_off(*locker, "auth/requirepass");
	// AUTH comes before SELECT (a SELECT first would be refused NOAUTH)
	auto in_db2 = connected(server.url(":" + admin_pw, "/2"));
	ASSERT_TRUE(in_db2);
	auto lease = in_db2->acquire("auth/db2", opts(5s));
	ASSERT_TRUE(lease) << lease.error();
	auto in_2 =
	    Connection::open({"127.0.0.1", server.port()}, {1000ms, 1000ms}, 2, Credentials{"", admin_pw});
	ASSERT_TRUE(in_2) << in_2.error();
	auto in2 = in_2->command({"EXISTS", "pglease:lock:auth/db2"});
	ASSERT_TRUE(in2 && in2->is_integer());
	EXPECT_EQ(in2->integer, 1) << "the lease is not in database 2";
	auto in0 = server.admin({"EXISTS", "pglease:lock:auth/db2"});
	ASSERT_TRUE(in0 && in0->is_integer());
	EXPECT_EQ(in0->integer, 0) << "the lease went to database 0, not /2";
}

TEST_F(RedisAuth, wrong_or_missing_password_is_permission_at_once_even_with_a_wait)
{
	const std::string urls[] = {
	    "redis://127.0.0.1:" + std::to_string(server.port()), // NOAUTH
	    server.url(":" + wrong_pw),                           // WRONGPASS
	    server.url("pglease:" + wrong_pw),                    // WRONGPASS for an ACL user
	    server.url("nobody:" + admin_pw),                     // no such user
	    server.url(":" + wrong_pw, "/2"),                     // refused before the SELECT
	};
	for (const auto &url : urls) {
		auto locker = connected(url);
		ASSERT_TRUE(locker);
		auto t0 = Clock::now();
		auto lease = locker->acquire("auth/refused", opts(5s, 5s));
		auto took = ms_since(t0);
		ASSERT_FALSE(lease) << "granted with bad credentials";
		EXPECT_TRUE(refused(lease.error()));
		EXPECT_LT(took, 1000) << "a refused password took " << took << " ms (wait was 5 s)";
		auto renewed = locker->renew("auth/refused", 1, 5s);
		ASSERT_FALSE(renewed);
		EXPECT_TRUE(refused(renewed.error()));
		auto released = locker->release("auth/refused", 1);
		ASSERT_FALSE(released);
		EXPECT_TRUE(refused(released.error()));
	}
	auto exists = server.admin({"EXISTS", "pglease:lock:auth/refused", "pglease:token:auth/refused"});
	ASSERT_TRUE(exists && exists->is_integer());
	EXPECT_EQ(exists->integer, 0) << "a refused client wrote a key";
}

// ---- an ACL user limited to the lock keys -----------------------------------------

TEST_F(RedisAuth, acl_user_limited_to_the_lock_keys_acquires_renews_releases_and_hands_off)
{
	// the user really is limited: another key and an admin command are refused
	auto other = server.as("pglease", locker_pw, {"GET", "other:x"});
	ASSERT_TRUE(other && other->is_error());
	EXPECT_EQ(other->text.rfind("NOPERM", 0), 0u) << other->text;
	auto flush = server.as("pglease", locker_pw, {"FLUSHALL"});
	ASSERT_TRUE(flush && flush->is_error());
	// its waiters may subscribe to the release channel (else they would poll)
	auto sub = Subscriber::open({"127.0.0.1", server.port()}, {1000ms, 1000ms}, "pglease:released:auth/acl",
	                            Credentials{"pglease", locker_pw});
	EXPECT_TRUE(sub) << sub.error();

	auto locker = connected(server.url("pglease:" + locker_pw_in_url));
	ASSERT_TRUE(locker);
	hand_off(*locker, "auth/acl");
}

// a waiting writer of the lock-only user cannot mark itself (no TIME, no
// ZADD): it waits unmarked and is granted, never refused for a command the
// lock does not need
TEST_F(RedisAuth, a_lock_only_users_waiting_writer_waits_unmarked_and_is_granted)
{
	auto locker = connected(server.url("pglease:" + locker_pw_in_url));
	ASSERT_TRUE(locker);
	const std::string r = "auth/unmarked";
	auto first = locker->acquire(r, opts(10s));
	ASSERT_TRUE(first) << first.error();
	auto waiter = std::async(std::launch::async, [&] { return locker->acquire(r, opts(10s, 5s)); });
	std::this_thread::sleep_for(300ms);
	auto marks = server.admin({"EXISTS", "pglease:lock:" + r + std::string{"\0writers", 8}});
	ASSERT_TRUE(marks && marks->is_integer());
	EXPECT_EQ(marks->integer, 0) << "a user without ZADD left a mark";
	ASSERT_TRUE(first->release());
	auto second = waiter.get();
	ASSERT_TRUE(second) << second.error();
	EXPECT_GT(second->token(), first->token());
}

// the user of shared leases: its readers share, and its waiting writer
// marks itself within the lock's key pattern and holds a later reader back
TEST_F(RedisAuth, acl_user_with_the_shared_commands_shares_and_its_waiting_writer_holds_readers_back)
{
	auto line = words(sharer_acl_line);
	for (auto &w : line)
		if (w == ">PASSWORD")
			w = ">" + locker_pw;
	ASSERT_TRUE(server.acl(line));
	auto locker = connected(server.url("sharer:" + locker_pw_in_url));
	ASSERT_TRUE(locker);
	const std::string r = "auth/shared";
	auto reader = opts(10s);
	reader.mode = pglease::Mode::shared;
	auto a = locker->acquire(r, reader);
	ASSERT_TRUE(a) << a.error();
	auto b = std::async(std::launch::async, [&] { return locker->acquire(r, reader); }).get();
	ASSERT_TRUE(b) << "a second reader beside the first: " << b.error();
	auto writer = std::async(std::launch::async, [&] { return locker->acquire(r, opts(10s, 5s)); });
	std::this_thread::sleep_for(300ms);
	auto marks = server.admin({"ZCARD", "pglease:lock:" + r + std::string{"\0writers", 8}});
	ASSERT_TRUE(marks && marks->is_integer());
	EXPECT_EQ(marks->integer, 1) << "the waiting writer left no mark";
	auto late = std::async(std::launch::async, [&] { return locker->try_acquire(r, reader); }).get();
	ASSERT_FALSE(late) << "a reader joined the readers while a writer waited";
	EXPECT_EQ(late.error().code, Errc::timeout) << late.error();
	ASSERT_TRUE(a->release());
	ASSERT_TRUE(b->release());
	auto w = writer.get();
	ASSERT_TRUE(w) << w.error();
	EXPECT_GT(w->token(), b->token());
}

TEST_F(RedisAuth, another_acl_user_can_neither_take_over_renew_release_nor_delete_the_lease)
{
	auto holder_locker = connected(server.url("pglease:" + locker_pw_in_url));
	auto intruder = connected(server.url("intruder:" + intruder_pw));
	ASSERT_TRUE(holder_locker && intruder);
	const std::string r = "auth/payroll";
	auto lease = holder_locker->acquire(r, opts(10s));
	ASSERT_TRUE(lease) << lease.error();
	ASSERT_TRUE(lease->renew()); // granted for the grace first: now for its TTL
	const auto token = lease->token();

	auto t0 = Clock::now();
	auto taken = in_other_thread([&] { return intruder->acquire(r, opts(10s, 5s)); });
	ASSERT_FALSE(taken) << "another user took the lease over";
	EXPECT_TRUE(refused(taken.error()));
	EXPECT_LT(ms_since(t0), 1000) << "a refused acquire waited";
	auto renewed = intruder->renew(r, token, 1s);
	ASSERT_FALSE(renewed);
	EXPECT_TRUE(refused(renewed.error()));
	auto released = intruder->release(r, token);
	ASSERT_FALSE(released);
	EXPECT_TRUE(refused(released.error()));
	// behind the providers' back: read the token, delete or overwrite the key,
	// or a script that names the key only inside
	for (const std::vector<std::string> &argv :
	     {std::vector<std::string>{"GET", "pglease:token:" + r},
	      {"DEL", "pglease:lock:" + r},
	      {"SET", "pglease:lock:" + r, "1:me"},
	      {"PEXPIRE", "pglease:lock:" + r, "1"},
	      {"EVAL", "return redis.call('DEL', 'pglease:lock:" + r + "')", "0"}}) {
		auto reply = server.as("intruder", intruder_pw, argv);
		ASSERT_TRUE(reply) << reply.error();
		EXPECT_TRUE(reply->is_error()) << argv[0] << " was allowed";
		auto as_error = pglease::detail::redis::error_from_reply(*reply, {"127.0.0.1", server.port()});
		EXPECT_TRUE(refused(as_error)) << argv[0];
	}
	// the holder still holds, with its own value, and can renew
	EXPECT_TRUE(lease->valid());
	auto value = server.admin({"GET", "pglease:lock:" + r});
	ASSERT_TRUE(value && value->is_string());
	EXPECT_EQ(value->text.rfind(std::to_string(token) + ":", 0), 0u) << value->text;
	auto pttl = server.admin({"PTTL", "pglease:lock:" + r});
	ASSERT_TRUE(pttl && pttl->is_integer());
	EXPECT_GT(pttl->integer, 5000) << "the intruder shortened the lease";
	EXPECT_TRUE(lease->renew());
	EXPECT_TRUE(lease->release());
}

// Key patterns do not stop commands that name no key: FLUSHALL, FLUSHDB and
// SWAPDB end every lease, ACL and CONFIG lock the lock user out.  A user
// without @dangerous can run none of them, and the lease lives on; a user
// with every command (the intruder above, +@all) ends it with FLUSHALL --
// what docs/production.md tells operators ("Who may end a lease").
TEST_F(RedisAuth, only_a_user_without_dangerous_commands_is_kept_from_keyless_ends)
{
	ASSERT_TRUE(
	    server.acl(words("ACL SETUSER careful reset on >" + intruder_pw + " ~other:* +@all -@dangerous")));
	auto holder_locker = connected(server.url("pglease:" + locker_pw_in_url));
	ASSERT_TRUE(holder_locker);
	const std::string r = "auth/keyless";
	auto lease = holder_locker->acquire(r, opts(10s));
	ASSERT_TRUE(lease) << lease.error();
	for (const std::vector<std::string> &argv : {std::vector<std::string>{"FLUSHALL"},
	                                             {"FLUSHDB"},
	                                             {"SWAPDB", "0", "1"},
	                                             {"ACL", "SETUSER", "pglease", "off"},
	                                             {"ACL", "DELUSER", "pglease"},
	                                             {"CONFIG", "SET", "requirepass", wrong_pw}}) {
		auto reply = server.as("careful", intruder_pw, argv);
		ASSERT_TRUE(reply) << reply.error();
		EXPECT_TRUE(reply->is_error())
		    << argv[0] << " " << (argv.size() > 1 ? argv[1] : "") << " was allowed";
		if (reply->is_error()) {
			auto as_error = pglease::detail::redis::error_from_reply(*reply, {"127.0.0.1", server.port()});
			EXPECT_TRUE(refused(as_error)) << argv[0];
		}
	}
	EXPECT_TRUE(lease->renew()) << "a user without @dangerous ended the lease";
	auto other = in_other_thread([&] { return holder_locker->try_acquire("auth/keyless-other", opts(5s)); });
	EXPECT_TRUE(other) << "the lock user was locked out: " << other.error();

	// every command: FLUSHALL names no key, so ~other:* does not stop it
	auto flushed = server.as("intruder", intruder_pw, {"FLUSHALL"});
	ASSERT_TRUE(flushed) << flushed.error();
	EXPECT_FALSE(flushed->is_error()) << "FLUSHALL was refused to +@all: " << flushed->text;
	auto renewed = lease->renew();
	ASSERT_FALSE(renewed) << "the lease survived FLUSHALL";
	EXPECT_EQ(renewed.error().code, Errc::lost) << renewed.error();
	seen.push_back(renewed.error().message);
}

// ---- Redlock over three password-protected servers -------------------------------

TEST(RedlockAuth, three_protected_servers_grant_to_the_password_or_the_acl_user_and_refuse_others)
{
	std::vector<std::unique_ptr<AuthServer>> nodes;
	std::string list;
	for (int i = 0; i < 3; i++) {
		nodes.push_back(std::make_unique<AuthServer>());
		ASSERT_TRUE(nodes.back()->started()) << "install redis-server: scripts/install-deps.sh";
		list += (i ? "," : "") + nodes.back()->node();
	}
	// the default user (requirepass), then the ACL user limited to the lock keys
	for (const std::string &userinfo : {":" + admin_pw, "pglease:" + locker_pw_in_url}) {
		SCOPED_TRACE(userinfo.substr(0, userinfo.find(':')) + " user");
		for (auto &node : nodes)
			ASSERT_TRUE(node->acl(locker_acl()));
		auto good = pglease::connect("redlock://" + userinfo + "@" + list, quick_backoff());
		ASSERT_TRUE(good) << good.error();
		redlock_round(**good, nodes);
	}

	// another ACL user on every node can neither take the lease over nor end it
	auto holder = pglease::connect("redlock://pglease:" + locker_pw_in_url + "@" + list, quick_backoff());
	auto intruder = pglease::connect("redlock://intruder:" + intruder_pw + "@" + list, quick_backoff());
	ASSERT_TRUE(holder && intruder);
	for (auto &node : nodes)
		ASSERT_TRUE(node->acl(words(intruder_acl_line)));
	auto held = (*holder)->acquire("auth/redlock-held", opts(10s));
	ASSERT_TRUE(held) << held.error();
	auto taken = in_other_thread([&] { return (*intruder)->acquire("auth/redlock-held", opts(10s, 5s)); });
	ASSERT_FALSE(taken) << "another user took the Redlock lease over";
	EXPECT_EQ(taken.error().code, Errc::permission) << taken.error();
	EXPECT_TRUE(no_secret(taken.error().message));
	EXPECT_TRUE(held->renew());
	EXPECT_TRUE(held->release());

	for (const std::string &userinfo : {":" + wrong_pw, std::string("nobody:") + admin_pw}) {
		auto bad = pglease::connect("redlock://" + userinfo + "@" + list, quick_backoff());
		ASSERT_TRUE(bad) << bad.error();
		auto t0 = Clock::now();
		auto refused = (*bad)->acquire("auth/redlock", opts(10s, 5s));
		auto took = ms_since(t0);
		ASSERT_FALSE(refused) << "granted with a wrong password";
		EXPECT_EQ(refused.error().code, Errc::permission) << refused.error();
		EXPECT_FALSE(pglease::is_retryable(refused.error()));
		EXPECT_LT(took, 1000) << "a refused password took " << took << " ms (wait was 5 s)";
		EXPECT_TRUE(no_secret(refused.error().message));
		std::cout << "  message: " << refused.error().message << "\n";
	}
}
