// redis_plumbing_test.cpp -- the Redis plumbing (client/src/redis/) against real
// redis-servers this test starts itself with scripts/redis.sh, each on a
// loopback port free when it starts (support.hpp's ScriptServer: free_port, a
// bind race retried on a new port; a restarted server gets its own port
// back).  Never mocked, never skipped: without redis-server every test fails
// and says how to get one.
#include <stdlib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "redis/connection.hpp"
#include "redis/endpoint.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using pglease::Errc;
using namespace pglease::detail::redis;
using Clock = std::chrono::steady_clock;

namespace {

// A redis-server of this test (scripts/redis.sh): its files in a fresh
// temporary directory, killed and removed when the object goes.  start()
// draws a free port the first time, and takes the same one again after a
// stop or a kill (restart: stop, then start).
class RedisServer : public test_support::ScriptServer {
public:
	explicit RedisServer(bool persist) : ScriptServer("redis.sh", persist ? "persist" : "") {}
	Endpoint endpoint() const { return Endpoint{"127.0.0.1", port()}; }
};

constexpr Timeouts quick{500ms, 500ms};

// The shared server of the tests that never stop theirs.
RedisServer &
shared_server()
{
	static RedisServer server(false);
	static const ::testing::AssertionResult started = server.start();
	EXPECT_TRUE(started) << "install redis-server: scripts/install-deps.sh";
	return server;
}

Connection
connect_or_fail(const Endpoint &endpoint, Timeouts timeouts = quick)
{
	auto c = Connection::open(endpoint, timeouts);
	if (!c) {
		ADD_FAILURE() << "cannot connect to " << to_string(endpoint) << ": " << c.error();
		std::abort();
	}
	return std::move(*c);
}

std::string
key(const std::string &suffix)
{
	return std::string("plumbing/") + ::testing::UnitTest::GetInstance()->current_test_info()->name() + "/" +
	       suffix;
}

} // namespace

TEST(RedisCommand, set_get_round_trip_is_binary_safe)
{
	auto c = connect_or_fail(shared_server().endpoint());
	const std::string value("a\0b\r\n$3\r\nc", 11);
	auto set = c.command({"SET", key("v"), value});
	ASSERT_TRUE(set) << set.error();
	EXPECT_TRUE(set->is_status());
	EXPECT_EQ(set->text, "OK");

	auto got = c.command({"GET", key("v")});
	ASSERT_TRUE(got) << got.error();
	ASSERT_TRUE(got->is_string());
	EXPECT_EQ(got->text, value) << "a value with NUL and CRLF must come back byte for byte";

	auto missing = c.command({"GET", key("missing")});
	ASSERT_TRUE(missing) << missing.error();
	EXPECT_TRUE(missing->is_nil());

	auto n = c.command({"INCR", key("n")});
	ASSERT_TRUE(n) << n.error();
	ASSERT_TRUE(n->is_integer());
	EXPECT_EQ(n->integer, 1);

	ASSERT_TRUE(c.command({"RPUSH", key("list"), "x", "y"}));
	auto list = c.command(std::vector<std::string_view>{"LRANGE", key("list"), "0", "-1"});
	ASSERT_TRUE(list) << list.error();
	ASSERT_TRUE(list->is_array());
	ASSERT_EQ(list->elements.size(), 2u);
	EXPECT_EQ(list->elements[1].text, "y");
}

TEST(RedisCommand, select_db_from_open_applies_to_commands)
{
	auto in_db3 = Connection::open(shared_server().endpoint(), quick, 3);
	ASSERT_TRUE(in_db3) << in_db3.error();
	ASSERT_TRUE(in_db3->command({"SET", key("k"), "3"}));
	auto in_db0 = connect_or_fail(shared_server().endpoint());
	auto got = in_db0.command({"GET", key("k")});
	ASSERT_TRUE(got) << got.error();
	EXPECT_TRUE(got->is_nil()) << "a key set in db 3 must not be visible in db 0";
}

TEST(RedisScript, local_sha1_is_the_name_script_load_gives)
{
	EXPECT_EQ(Script("").sha1(), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
	EXPECT_EQ(Script("abc").sha1(), "a9993e364706816aba3e25717850c26c9cd0d89d");
	EXPECT_EQ(Script(std::string(1000, 'a')).sha1().size(), 40u);

	auto c = connect_or_fail(shared_server().endpoint());
	for (std::size_t len : {0u, 10u, 55u, 56u, 63u, 64u, 65u, 200u}) {
		Script script("return '" + std::string(len, 'x') + "'");
		auto loaded = c.command({"SCRIPT", "LOAD", script.source()});
		ASSERT_TRUE(loaded) << loaded.error();
		EXPECT_EQ(loaded->text, script.sha1()) << "script of padding length " << len;
	}
}

TEST(RedisScript, eval_uses_evalsha_and_falls_back_to_eval_after_script_flush)
{
	auto c = connect_or_fail(shared_server().endpoint());
	Script script("redis.call('SET', KEYS[1], ARGV[1]); return redis.call('INCR', KEYS[2])");
	ASSERT_TRUE(c.command({"SCRIPT", "FLUSH"}));
	ASSERT_TRUE(c.command({"CONFIG", "RESETSTAT"}));

	auto first = c.eval(script, {key("value"), key("counter")}, {"v1"});
	ASSERT_TRUE(first) << first.error();
	ASSERT_TRUE(first->is_integer()) << first->text;
	EXPECT_EQ(first->integer, 1);
	auto second = c.eval(script, {key("value"), key("counter")}, {"v2"});
	ASSERT_TRUE(second) << second.error();
	EXPECT_EQ(second->integer, 2);
	auto value = c.command({"GET", key("value")});
	ASSERT_TRUE(value);
	EXPECT_EQ(value->text, "v2");

	// first call: EVALSHA (NOSCRIPT) then EVAL; second call: EVALSHA only
	auto stats = c.command({"INFO", "commandstats"});
	ASSERT_TRUE(stats) << stats.error();
	EXPECT_NE(stats->text.find("cmdstat_evalsha:calls=2,"), std::string::npos) << stats->text;
	EXPECT_NE(stats->text.find("cmdstat_eval:calls=1,"), std::string::npos) << stats->text;
}

TEST(RedisReply, error_reply_is_a_reply_and_the_connection_stays_usable)
{
	auto c = connect_or_fail(shared_server().endpoint());
	ASSERT_TRUE(c.command({"SET", key("s"), "not a number"}));
	auto wrong = c.command({"INCR", key("s")});
	ASSERT_TRUE(wrong) << "an error reply is not a failed call: " << wrong.error();
	ASSERT_TRUE(wrong->is_error());
	EXPECT_NE(wrong->text.find("not an integer"), std::string::npos) << wrong->text;
	EXPECT_EQ(error_from_reply(*wrong, c.endpoint()).code, Errc::internal);

	auto unknown = c.command({"NO-SUCH-COMMAND"});
	ASSERT_TRUE(unknown);
	EXPECT_TRUE(unknown->is_error());
	EXPECT_EQ(unknown->text.rfind("ERR", 0), 0u) << unknown->text;

	Script failing("return redis.error_reply('LOADING pretend the dataset is loading')");
	auto script_error = c.eval(failing, {}, {});
	ASSERT_TRUE(script_error) << script_error.error();
	ASSERT_TRUE(script_error->is_error());
	EXPECT_EQ(error_from_reply(*script_error, c.endpoint()).code, Errc::unavailable);

	EXPECT_TRUE(c.usable());
	auto ping = c.command({"PING"});
	ASSERT_TRUE(ping) << ping.error();
	EXPECT_EQ(ping->text, "PONG");
}

TEST(RedisConnection, command_past_its_timeout_is_unavailable_and_ends_the_connection)
{
	auto c = connect_or_fail(shared_server().endpoint(), Timeouts{500ms, 200ms});
	auto t0 = Clock::now();
	auto blocked = c.command({"BLPOP", key("empty"), "3"}); // the server holds the reply for 3 s
	auto waited = Clock::now() - t0;
	ASSERT_FALSE(blocked);
	EXPECT_EQ(blocked.error().code, Errc::unavailable) << blocked.error();
	EXPECT_NE(blocked.error().message.find("no reply within 200 ms"), std::string::npos) << blocked.error();
	EXPECT_LT(waited, 1s) << "bounded by the 200 ms command timeout";
	EXPECT_FALSE(c.usable()) << "a late reply could be taken for the next command's";
	auto next = c.command({"PING"});
	ASSERT_FALSE(next);
	EXPECT_EQ(next.error().code, Errc::unavailable);

	ASSERT_TRUE(c.reconnect());
	EXPECT_TRUE(c.usable());
	EXPECT_TRUE(c.command({"PING"}));
}

TEST(RedisConnection, stopped_server_is_unavailable_promptly_and_restarted_one_works_after_reconnect)
{
	RedisServer server(false);
	ASSERT_TRUE(server.start());
	auto c = connect_or_fail(server.endpoint());
	ASSERT_TRUE(c.command({"SET", key("k"), "v"}));

	ASSERT_TRUE(server.stop());
	auto t0 = Clock::now();
	auto gone = c.command({"GET", key("k")});
	ASSERT_FALSE(gone);
	EXPECT_EQ(gone.error().code, Errc::unavailable) << gone.error();
	EXPECT_TRUE(pglease::is_retryable(gone.error()));
	EXPECT_FALSE(c.usable());

	auto refused = c.reconnect();
	ASSERT_FALSE(refused);
	EXPECT_EQ(refused.error().code, Errc::unavailable) << refused.error();
	EXPECT_LT(Clock::now() - t0, 1500ms) << "bounded by the 500 ms timeouts";

	auto fresh = Connection::open(server.endpoint(), quick);
	ASSERT_FALSE(fresh);
	EXPECT_EQ(fresh.error().code, Errc::unavailable) << fresh.error();

	ASSERT_TRUE(server.restart());
	auto back = c.reconnect();
	ASSERT_TRUE(back) << back.error();
	auto ping = c.command({"PING"});
	ASSERT_TRUE(ping) << ping.error();
	EXPECT_EQ(ping->text, "PONG");
}

TEST(RedisConnection, writing_to_a_closed_connection_does_not_raise_sigpipe)
{
	// hiredis writes with write(2): without a guard the second write after the
	// peer's RST raises SIGPIPE, whose default action kills the host service
	RedisServer server(false);
	ASSERT_TRUE(server.start());
	auto c = connect_or_fail(server.endpoint());
	ASSERT_TRUE(server.stop());
	const std::string big(8 << 20, 'x'); // many write(2) calls
	auto sent = c.command({"SET", key("big"), big});
	ASSERT_FALSE(sent) << "the process is still alive, but the command cannot have succeeded";
	EXPECT_EQ(sent.error().code, Errc::unavailable) << sent.error();
}

TEST(RedisConnection, killed_persistent_server_keeps_every_acknowledged_write)
{
	// what the Redis provider's fencing token relies on (AOF, appendfsync always)
	RedisServer server(true);
	ASSERT_TRUE(server.start());
	auto c = connect_or_fail(server.endpoint());
	long long last = 0;
	for (int i = 0; i < 20; i++) {
		auto n = c.command({"INCR", key("token")});
		ASSERT_TRUE(n) << n.error();
		last = n->integer;
	}
	ASSERT_TRUE(server.kill());
	ASSERT_TRUE(server.restart());
	ASSERT_TRUE(c.reconnect());
	auto after = c.command({"INCR", key("token")});
	ASSERT_TRUE(after) << after.error();
	EXPECT_EQ(after->integer, last + 1) << "the counter went back after a crash";
}

TEST(RedisSubscriber, wait_returns_the_published_message_and_times_out_cleanly)
{
	const std::string channel = key("wake");
	auto sub = Subscriber::open(shared_server().endpoint(), quick, channel);
	ASSERT_TRUE(sub) << sub.error();
	auto pub = connect_or_fail(shared_server().endpoint());

	auto t0 = Clock::now();
	auto nothing = sub->wait(150ms);
	auto waited = Clock::now() - t0;
	ASSERT_TRUE(nothing) << "a timeout is not an error: " << nothing.error();
	EXPECT_FALSE(nothing->has_value());
	EXPECT_GE(waited, 150ms);
	EXPECT_LT(waited, 1s);
	EXPECT_TRUE(sub->usable()) << "the subscription must survive a timed-out wait";

	auto receivers = pub.command({"PUBLISH", channel, std::string("released\0!", 10)});
	ASSERT_TRUE(receivers) << receivers.error();
	EXPECT_EQ(receivers->integer, 1);
	auto message = sub->wait(2s);
	ASSERT_TRUE(message) << message.error();
	ASSERT_TRUE(message->has_value());
	EXPECT_EQ((*message)->channel, channel);
	EXPECT_EQ((*message)->payload, std::string("released\0!", 10));

	// two messages in one read: the second is not lost in the reader's buffer
	ASSERT_TRUE(pub.command({"PUBLISH", channel, "one"}));
	ASSERT_TRUE(pub.command({"PUBLISH", channel, "two"}));
	auto one = sub->wait(2s);
	auto two = sub->wait(2s);
	ASSERT_TRUE(one && one->has_value());
	ASSERT_TRUE(two && two->has_value());
	EXPECT_EQ((*one)->payload, "one");
	EXPECT_EQ((*two)->payload, "two");
}

TEST(RedisSubscriber, publish_wakes_a_waiter_before_its_timeout)
{
	const std::string channel = key("wake");
	auto sub = Subscriber::open(shared_server().endpoint(), quick, channel);
	ASSERT_TRUE(sub) << sub.error();
	std::thread publisher([&] {
		std::this_thread::sleep_for(100ms);
		auto pub = Connection::open(shared_server().endpoint(), quick);
		if (pub)
			(void)pub->command({"PUBLISH", channel, "now"});
	});
	auto t0 = Clock::now();
	auto message = sub->wait(5s);
	auto waited = Clock::now() - t0;
	publisher.join();
	ASSERT_TRUE(message) << message.error();
	ASSERT_TRUE(message->has_value());
	EXPECT_LT(waited, 2s) << "woken by the publish, not by the 5 s timeout";
}

TEST(RedisSubscriber, stopped_server_ends_the_wait_as_unavailable)
{
	RedisServer server(false);
	ASSERT_TRUE(server.start());
	auto sub = Subscriber::open(server.endpoint(), quick, key("wake"));
	ASSERT_TRUE(sub) << sub.error();
	ASSERT_TRUE(server.stop());
	auto t0 = Clock::now();
	auto message = sub->wait(5s);
	ASSERT_FALSE(message);
	EXPECT_EQ(message.error().code, Errc::unavailable) << message.error();
	EXPECT_LT(Clock::now() - t0, 2s) << "EOF must end the wait, not its timeout";
	EXPECT_FALSE(sub->usable());
}

TEST(RedisUrl, accepts_one_redis_node_and_three_or_more_redlock_nodes)
{
	auto one = parse_url("redis://127.0.0.1:26379");
	ASSERT_TRUE(one) << one.error();
	EXPECT_FALSE(one->redlock);
	ASSERT_EQ(one->nodes.size(), 1u);
	EXPECT_EQ(one->nodes[0].host, "127.0.0.1");
	EXPECT_EQ(one->nodes[0].port, 26379);
	EXPECT_EQ(one->db, 0);

	auto with_db = parse_url("redis://cache.internal:6400/5");
	ASSERT_TRUE(with_db) << with_db.error();
	EXPECT_EQ(with_db->db, 5);
	auto trailing_slash = parse_url("redis://h:1/");
	ASSERT_TRUE(trailing_slash) << trailing_slash.error();
	EXPECT_EQ(trailing_slash->db, 0);

	auto v6 = parse_url("redis://[::1]:65535");
	ASSERT_TRUE(v6) << v6.error();
	EXPECT_EQ(v6->nodes[0].host, "::1");
	EXPECT_EQ(to_string(v6->nodes[0]), "[::1]:65535");

	auto three = parse_url("redlock://a:1,b:2,c:3");
	ASSERT_TRUE(three) << three.error();
	EXPECT_TRUE(three->redlock);
	ASSERT_EQ(three->nodes.size(), 3u);
	EXPECT_EQ(to_string(three->nodes[2]), "c:3");

	auto highest_db = parse_url("redis://h:1/2147483646");
	ASSERT_TRUE(highest_db) << "redis.conf's databases may be up to INT_MAX: " << highest_db.error();
	EXPECT_EQ(highest_db->db, 2147483646);
	for (const char *ok :
	     {"redis://my-host_1.example.com:1", "redis://[fe80::1%eth0]:1", "redis://[::ffff:1.2.3.4]:1"})
		EXPECT_TRUE(parse_url(ok)) << ok << ": " << parse_url(ok).error();

	auto four = parse_url("redlock://a:1,b:2,c:3,d:4/2");
	ASSERT_TRUE(four) << "even node counts are allowed: " << four.error();
	EXPECT_EQ(four->nodes.size(), 4u);
	EXPECT_EQ(four->db, 2);
}

TEST(RedisUrl, rejects_malformed_urls_with_what_is_wrong)
{
	struct Case {
		const char *url;
		const char *says;
	};
	const Case cases[] = {
	    {"redis://127.0.0.1", "missing port"},
	    {"redis://127.0.0.1:", "missing port"},
	    {"redis://:6379", "empty host"},
	    {"redis://h:0", "1 to 65535"},
	    {"redis://h:65536", "1 to 65535"},
	    {"redis://h:12ab", "1 to 65535"},
	    {"redis://h:-1", "1 to 65535"},
	    {"redis://", "no host:port"},
	    {"redis://h:1/x", "database"},
	    {"redis://h:1,g:2", "use redlock://"},
	    {"redis://pw@h:1", "credentials"},
	    {"redis://a b:1", "host \"a b\""},
	    {"redis://127.0.0.1 :27201", "host \"127.0.0.1 \""},
	    {"redis:// h:1", "host"},
	    {"redis://h\t:1", "host"},
	    {"redis://h\xc3\xa9:1", "host"},
	    {"redis://[not v6]:1", "IPv6"},
	    {"redis://[127.0.0.1]:1", "IPv6"},
	    {"redlock://a:1,b c:2,d:3", "host \"b c\""},
	    {"redis://h:1/2147483647", "database"},
	    {"redis://h:1/99999999999", "database"},
	    {"redis://h:1/-1", "database"},
	    {"redis://h:1/1/2", "database"},
	    {"redis://h:1?timeout=3", "query"},
	    {"redis://::1:6379", "brackets"},
	    {"redis://[::1:6379", "unterminated"},
	    {"redisx://h:1", "scheme"},
	    {"rediss://h:1?cacert=/nonexistent/ca.crt", "/nonexistent/ca.crt"},
	    {"redlock://a:1,b:2,c:3?cacert=/x", "rediss://"},
	    {"postgresql://h:1", "scheme"},
	    {"redlock://a:1,b:2", "at least 3"},
	    {"redlock://a:1", "at least 3"},
	    {"redlock://a:1,b:2,,c:3", "empty node"},
	    {"redlock://a:1,b:2,c:3,", "empty node"},
	    {"redlock://a:1,b:2,a:1", "named twice"},
	    {"redlock://a:1,b,c:3", "missing port"},
	};
	for (const Case &c : cases) {
		auto target = parse_url(c.url);
		if (target) {
			ADD_FAILURE() << c.url << " was accepted";
			continue;
		}
		EXPECT_EQ(target.error().code, Errc::invalid_argument) << c.url;
		EXPECT_NE(target.error().message.find(c.says), std::string::npos)
		    << c.url << ": message \"" << target.error().message << "\" should say \"" << c.says << "\"";
	}
}

TEST(RedisUrl, no_error_message_shows_a_password)
{
	// each URL is refused (something after its credentials is malformed),
	// and a message quoting the URL would print the password to a log or a
	// terminal
	const char *urls[] = {
	    "redis://alice:s3cr3tPW@127.0.0.1:0", "redis://:s3cr3tPW@127.0.0.1:6400/x",
	    "redis://s3cr3tPW@127.0.0.1:6400",    "redis://alice:s3cr3tPW@127.0.0.1",
	    "redis://alice:s3cr3tPW@:6400",       "redis://alice:s3cr3tPW@h:0",
	    "redis://alice:s3/cr3tPW@h:1/0/1",    "redis://alice:s3,cr3tPW@h",
	    "redis://alice:s3@cr3tPW@h:1,g:2",    "redis://alice:s3cr3tPW@h:1?x=1",
	    "redis://h:1?password=s3cr3tPW",      "redis://h:1#s3cr3tPW",
	    "redlock://alice:s3cr3tPW@a:1,b:2",   "redlock://a:1,alice:s3cr3tPW@b:2,c:3",
	    "rediss://alice:s3cr3tPW@h:1/x",      "redis://alice:s3%ZZcr3tPW@h:1",
	    "rediss://alice:s3cr3tPW@h:1?ca=/x",  "redlocks://alice:s3cr3tPW@h:1",
	};
	for (const char *url : urls) {
		auto target = parse_url(url);
		ASSERT_FALSE(target) << url << " was accepted";
		EXPECT_EQ(target.error().code, Errc::invalid_argument) << target.error();
		const std::string &m = target.error().message;
		for (const char *piece : {"s3cr3tPW", "s3cr3", "cr3tPW", "s3/", "s3,", "s3@"})
			EXPECT_EQ(m.find(piece), std::string::npos)
			    << url << ": the message shows \"" << piece << "\": " << m;
		std::cout << url << " -> " << m << "\n";
	}
}

// ---- the ports and servers of the test suites (tests/client/support.hpp) ----

namespace {

// Listener -- a socket listening on 127.0.0.1:PORT while the object lives
// (another process's server, as far as a test server can tell)
class Listener {
public:
	explicit Listener(int port) : port_(port)
	{
		fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int on = 1;
		(void)::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
		sockaddr_in address{};
		address.sin_family = AF_INET;
		address.sin_port = htons(static_cast<std::uint16_t>(port));
		address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		listening_ = fd_ >= 0 &&
		             ::bind(fd_, reinterpret_cast<const sockaddr *>(&address), sizeof address) == 0 &&
		             ::listen(fd_, 16) == 0;
	}
	~Listener() { close(); }
	Listener(const Listener &) = delete;
	Listener &operator=(const Listener &) = delete;
	void close()
	{
		if (fd_ >= 0)
			::close(fd_);
		fd_ = -1;
	}
	bool listening() const { return listening_; }
	int port() const { return port_; }

private:
	int port_;
	int fd_ = -1;
	bool listening_ = false;
};

} // namespace

TEST(TestPorts, free_ports_are_distinct_free_and_below_the_ephemeral_range)
{
	int ephemeral_low = 0;
	std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_low;
	const auto range = test_support::port_range();
	EXPECT_EQ(range.high, ephemeral_low - 1) << "below the kernel's ephemeral range";
	EXPECT_GE(range.low, 1024);
	EXPECT_LT(range.low, range.high);
	std::set<int> seen;
	for (int port : test_support::free_ports(20, {0, 1})) {
		EXPECT_GE(port, range.low);
		EXPECT_LE(port + 1, range.high);
		EXPECT_TRUE(test_support::port_is_free(port)) << port;
		EXPECT_TRUE(test_support::port_is_free(port + 1)) << port + 1 << " (an offset)";
		seen.insert(port);
		seen.insert(port + 1);
	}
	EXPECT_EQ(seen.size(), 40u) << "a port or an offset's port drawn twice";
	for (int port : test_support::free_ports(20))
		EXPECT_EQ(seen.count(port), 0u) << port << " handed out twice in one process";
}

TEST(TestPorts, a_port_someone_listens_on_is_not_free)
{
	Listener held(test_support::free_port());
	ASSERT_TRUE(held.listening());
	EXPECT_FALSE(test_support::port_is_free(held.port()));
	held.close();
	EXPECT_TRUE(test_support::port_is_free(held.port()));
}

TEST(TestServers, a_start_whose_port_was_taken_meanwhile_is_retried_on_a_new_port)
{
	// the first port handed out is held (a bind race lost): the start must
	// draw again, start on the new port, and say nothing of the first
	Listener taken(test_support::free_port());
	ASSERT_TRUE(taken.listening());
	RedisServer server(false);
	int draws = 0;
	server.draw_ports_with([&](std::size_t n, const std::vector<int> &offsets) {
		return ++draws == 1 ? std::vector<int>{taken.port()} : test_support::free_ports(n, offsets);
	});
	ASSERT_TRUE(server.start());
	EXPECT_EQ(draws, 2);
	EXPECT_NE(server.port(), taken.port());
	auto c = connect_or_fail(server.endpoint());
	auto pong = c.command({"PING"});
	ASSERT_TRUE(pong) << pong.error();
	EXPECT_EQ(pong->text, "PONG");
}

TEST(TestServers, a_restart_on_a_port_taken_meanwhile_fails_saying_so_and_works_once_it_is_free)
{
	RedisServer server(false);
	ASSERT_TRUE(server.start());
	const int port = server.port();
	ASSERT_TRUE(server.stop());
	Listener taken(port);
	ASSERT_TRUE(taken.listening());
	const auto again = server.start();
	ASSERT_FALSE(again) << "started while another process holds its port";
	std::cout << "the restart said:\n" << again.message() << "\n";
	EXPECT_NE(std::string(again.message()).find("port " + std::to_string(port) + " of this server was taken"),
	          std::string::npos)
	    << again.message();
	taken.close();
	ASSERT_TRUE(server.start());
	EXPECT_EQ(server.port(), port) << "a restart keeps the server's port";
	EXPECT_TRUE(connect_or_fail(server.endpoint()).command({"PING"}));
}
