// endpoints_test.cpp -- the plumbing every provider shares for reaching its
// servers (client/src/detail/): the one host:port list parser, and that every
// provider's URL parser accepts and refuses the same lists with it (IPv6
// literals included), and the one reconnect backoff.  No server.
#include "detail/backoff.hpp"
#include "detail/endpoints.hpp"

#if PGLEASE_TEST_REDIS
#include "redis/endpoint.hpp"
#endif
#if PGLEASE_TEST_ETCD
#include "etcd/url.hpp"
#endif
#if PGLEASE_TEST_ZOOKEEPER
#include "zookeeper/target.hpp"
#endif

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using pglease::Errc;
using pglease::detail::HostPort;
using pglease::detail::parse_host_list;
using std::chrono::milliseconds;

TEST(HostList, ReadsNamesAddressesAndBracketedIPv6InOrder)
{
	auto nodes =
	    parse_host_list("cache-1.example.com:6379,127.0.0.1:1,[::1]:65535,[fe80::1%eth0]:2,my_host:0080");
	ASSERT_TRUE(nodes) << nodes.error();
	const std::vector<HostPort> want = {{"cache-1.example.com", 6379},
	                                    {"127.0.0.1", 1},
	                                    {"::1", 65535},
	                                    {"fe80::1%eth0", 2},
	                                    {"my_host", 80}};
	EXPECT_EQ(*nodes, want);
	EXPECT_EQ(to_string((*nodes)[2]), "[::1]:65535") << "an IPv6 host is written back in brackets";
	EXPECT_EQ(to_string((*nodes)[4]), "my_host:80") << "the port is written back in decimal";
	for (const char *ok : {"[::ffff:1.2.3.4]:1", "[2001:db8::8a2e:370:7334]:443", "[::]:1", "h:1"})
		EXPECT_TRUE(parse_host_list(ok)) << ok << ": " << parse_host_list(ok).error();
}

struct Refused {
	std::string list;
	const char *says;
};

// The lists every provider must refuse, and what the message says.
std::vector<Refused>
refused_lists()
{
	return {
	    {"", "no host:port"},
	    {"h", "missing port"},
	    {"h:", "missing port"},
	    {"[::1]", "missing port"},
	    {"[::1]x:1", "missing port"},
	    {":1", "empty host"},
	    {"[]:1", "empty host"},
	    {"h:0", "1 to 65535"},
	    {"h:65536", "1 to 65535"},
	    {"h:12ab", "1 to 65535"},
	    {"h:-1", "1 to 65535"},
	    {"h:99999999999999999999", "1 to 65535"},
	    {"a b:1", "host \"a b\""},
	    {"127.0.0.1 :1", "host \"127.0.0.1 \""},
	    {"h\t:1", "host"},
	    {"h\xc3\xa9:1", "host"},
	    {std::string(254, 'a') + ":1", "253"},
	    {"[not v6]:1", "IPv6"},
	    {"[127.0.0.1]:1", "IPv6"},
	    {"[1:2]:1", "IPv6"},
	    {"[g::1]:1", "IPv6"},
	    {"[::1 ]:1", "IPv6"},
	    {"[fe80::1%]:1", "zone"},
	    {"[fe80::1%e th]:1", "zone"},
	    {"::1:6379", "brackets"},
	    {"[::1:6379", "unterminated"},
	    {"a:1,,b:2", "empty node"},
	    {"a:1,", "empty node"},
	    {",a:1", "empty node"},
	    {"a:1,b c:2,d:3", "host \"b c\""},
	};
}

TEST(HostList, RefusesWhatCouldNeverBeReachedSayingWhy)
{
	for (const Refused &c : refused_lists()) {
		auto nodes = parse_host_list(c.list);
		if (nodes) {
			ADD_FAILURE() << "\"" << c.list << "\" was accepted";
			continue;
		}
		EXPECT_EQ(nodes.error().code, Errc::invalid_argument) << c.list;
		EXPECT_NE(nodes.error().message.find(c.says), std::string::npos)
		    << c.list << ": \"" << nodes.error().message << "\" should say \"" << c.says << "\"";
	}
}

// Each provider's parser on a URL made of the list: ok, or the error message.
struct Verdict {
	bool accepted;
	std::string message;
};

template <class R>
Verdict
verdict_of(const R &parsed)
{
	return parsed ? Verdict{true, ""} : Verdict{false, parsed.error().message};
}

std::vector<std::pair<std::string, Verdict>>
provider_verdicts(const std::string &list)
{
	std::vector<std::pair<std::string, Verdict>> out;
#if PGLEASE_TEST_REDIS
	// redis:// takes one node, redlock:// three or more
	const bool several = std::count(list.begin(), list.end(), ',') >= 2;
	out.emplace_back(
	    "redis", verdict_of(pglease::detail::redis::parse_url((several ? "redlock://" : "redis://") + list)));
#endif
#if PGLEASE_TEST_ETCD
	out.emplace_back("etcd", verdict_of(pglease::detail::etcd::parse_target("etcd://" + list, pglease::ClientOptions{})));
#endif
#if PGLEASE_TEST_ZOOKEEPER
	out.emplace_back("zookeeper", verdict_of(pglease::detail::zookeeper::parse_url("zookeeper://" + list)));
#endif
	(void)list;
	return out;
}

TEST(HostList, EveryProviderAcceptsAndRefusesTheSameLists)
{
	const std::vector<std::string> accepted = {"h:1", "[::1]:2181", "[fe80::1%eth0]:1", "[::ffff:1.2.3.4]:1",
	                                           "a:1,[::1]:2,c.example.com:3"};
	for (const auto &list : accepted)
		for (const auto &[provider, v] : provider_verdicts(list))
			EXPECT_TRUE(v.accepted) << provider << " refused \"" << list << "\": " << v.message;
	for (const Refused &c : refused_lists()) {
		const std::string why = parse_host_list(c.list).error().message;
		for (const auto &[provider, v] : provider_verdicts(c.list)) {
			EXPECT_FALSE(v.accepted) << provider << " accepted \"" << c.list << "\"";
			EXPECT_NE(v.message.find(why), std::string::npos)
			    << provider << " on \"" << c.list << "\": \"" << v.message << "\" should say \"" << why
			    << "\"";
		}
	}
}

#if PGLEASE_TEST_ZOOKEEPER
TEST(HostList, ZooKeeperHandsTheCClientUnbracketedIPv6AndDecimalPorts)
{
	auto target = pglease::detail::zookeeper::parse_url("zookeeper://[::1]:2181,h:0080/x");
	ASSERT_TRUE(target) << target.error();
	EXPECT_EQ(target->hosts, "::1:2181,h:80");
	EXPECT_EQ(target->root, "/x");
}
#endif

// ---- the backoff -------------------------------------------------------------

TEST(Backoff, DelaysAreJitteredDoublingAndCapped)
{
	pglease::detail::Backoff backoff{100ms, 400ms};
	const milliseconds ceilings[] = {100ms, 200ms, 400ms, 400ms};
	for (milliseconds ceiling : ceilings) {
		milliseconds d = backoff.next();
		EXPECT_GE(d, ceiling / 2);
		EXPECT_LE(d, ceiling);
	}
	backoff.reset();
	EXPECT_LE(backoff.next(), 100ms) << "reset starts again from the first delay";
}

TEST(Backoff, NeverRetriesInATightLoop)
{
	// a first delay (and cap) of 0 still waits: the floor is 1 ms, doubling
	pglease::detail::Backoff backoff{0ms, 0ms};
	milliseconds total{0};
	for (int i = 0; i < 10; i++)
		total += backoff.next();
	EXPECT_GE(total, 10ms) << "ten delays of at least 1 ms";
	pglease::detail::Backoff growing{0ms, 1s};
	for (int i = 0; i < 5; i++)
		(void)growing.next();
	EXPECT_GE(growing.next(), 16ms) << "1, 2, 4, 8, 16, 32 ms: the sixth is at least 16";
}

TEST(Backoff, HugeFirstDelayDoesNotOverflow)
{
	pglease::detail::Backoff backoff{milliseconds::max(), milliseconds::max()};
	for (int i = 0; i < 3; i++)
		EXPECT_GE(backoff.next(), milliseconds::max() / 2 - 1ms);
}

} // namespace

// the one %XX decoder of every provider's URL (user, password, query values)
TEST(PercentDecoded, DecodesEscapesAndRefusesBrokenOnes)
{
	std::string out;
	EXPECT_TRUE(pglease::detail::percent_decoded("s3%40cr%3At%2F%25x%2c", out));
	EXPECT_EQ(out, "s3@cr:t/%x,");
	EXPECT_TRUE(pglease::detail::percent_decoded("", out));
	EXPECT_EQ(out, "");
	for (const char *broken : {"%", "%4", "a%4", "%g1", "%1g", "x%"})
		EXPECT_FALSE(pglease::detail::percent_decoded(broken, out)) << broken;
}
