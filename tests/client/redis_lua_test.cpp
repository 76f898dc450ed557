// redis_lua_test.cpp -- the Redis providers' Lua scripts (client/src/redis/lua/)
// run as Lua against a real redis-server on a loopback port free when it
// starts (support.hpp's ScriptServer, scripts/redis.sh), without the C++
// providers: each script is SCRIPT LOADed and run by EVALSHA with the keys
// and arguments its banner names, and its contract checked directly -- the
// keys it sets and their TTLs, its answers for a grant, a refusal, a renewal,
// a release, a stale token, a damaged counter.  Never mocked, never skipped.
//
// The scripts are the build's composed texts (redis_lua/NAME.lua, what
// cmake/embed_lua.cmake embeds in redis/lua.hpp: ScriptsAreWhatTheClientSends
// checks they are the same); PGLEASE_LUA_DIR=<dir> runs the contract cases
// against the scripts of another directory instead (a copy with a
// comparison flipped must fail them).
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "redis/connection.hpp"
#include "redis/keys.hpp"
#include "redis/lua.hpp"
#include "support.hpp"

using namespace std::chrono_literals;
using namespace pglease::detail::redis;

namespace {

class RedisServer : public test_support::ScriptServer {
public:
	RedisServer() : ScriptServer("redis.sh") {}
	Endpoint endpoint() const { return Endpoint{"127.0.0.1", port()}; }
};

RedisServer &
server()
{
	static RedisServer server;
	static const ::testing::AssertionResult started = server.start();
	if (!started) {
		ADD_FAILURE() << started.message() << " (install redis-server: scripts/install-deps.sh)";
		std::abort();
	}
	return server;
}

Connection &
redis()
{
	static auto c = Connection::open(server().endpoint(), Timeouts{2000ms, 2000ms});
	if (!c) {
		ADD_FAILURE() << "cannot connect: " << c.error();
		std::abort();
	}
	return *c;
}

std::string
lua_dir()
{
	const char *dir = std::getenv("PGLEASE_LUA_DIR");
	return dir && *dir ? dir : PGLEASE_REDIS_LUA_DIR;
}

std::string
script_text(const std::string &name, const std::string &dir = lua_dir())
{
	std::ifstream in(dir + "/" + name + ".lua", std::ios::binary);
	std::ostringstream text;
	text << in.rdbuf();
	if (!in || text.str().empty())
		ADD_FAILURE() << "no script " << dir << "/" << name << ".lua";
	return text.str();
}

Reply
ok(const pglease::Result<Reply> &reply)
{
	if (!reply) {
		ADD_FAILURE() << reply.error();
		return Reply{};
	}
	return *reply;
}

// run -- SCRIPT LOAD the script NAME (once), then EVALSHA it with keys and args
Reply
run(const std::string &name, const std::vector<std::string> &keys, const std::vector<std::string> &args)
{
	static std::map<std::string, std::string> loaded;
	if (!loaded.count(name)) {
		Reply sha = ok(redis().command({"SCRIPT", "LOAD", script_text(name)}));
		EXPECT_TRUE(sha.is_string()) << name << ".lua does not load: " << sha.text;
		loaded[name] = sha.text;
	}
	const std::string numkeys = std::to_string(keys.size());
	std::vector<std::string_view> argv{"EVALSHA", loaded[name], numkeys};
	argv.insert(argv.end(), keys.begin(), keys.end());
	argv.insert(argv.end(), args.begin(), args.end());
	return ok(redis().command(argv));
}

long long
integer(const Reply &r)
{
	EXPECT_TRUE(r.is_integer()) << "not an integer: " << (r.is_error() ? r.text : "(another kind)");
	return r.integer;
}

Reply
cmd(std::initializer_list<std::string_view> argv)
{
	return ok(redis().command(argv));
}

std::string
get(const std::string &key)
{
	return cmd({"GET", key}).text;
}

long long
pttl(const std::string &key)
{
	return cmd({"PTTL", key}).integer;
}

long long
server_ms()
{
	Reply t = cmd({"TIME"});
	return std::stoll(t.elements[0].text) * 1000 + std::stoll(t.elements[1].text) / 1000;
}

// keys -- a fresh resource per test
Keys
fresh()
{
	return keys_of(std::string{"lua/"} + ::testing::UnitTest::GetInstance()->current_test_info()->name());
}

// the scripts' calls, with the arguments of redis/lock.cpp, shared.cpp,
// permits.cpp, grant.cpp and election.cpp
Reply
acquire(const Keys &k, const std::string &holder, int ttl, int mark = 0, bool marked = false)
{
	return run("acquire", {k.lock, k.counter, k.writers},
	           {holder, std::to_string(ttl), std::to_string(mark), marked ? "1" : "0"});
}
Reply
reader(const Keys &k, const std::string &holder, int ttl)
{
	return run("shared", {k.lock, k.counter, k.writers}, {holder, std::to_string(ttl), "shared", "0"});
}
Reply
permit(const Keys &k, const std::string &holder, int ttl, int limit)
{
	return run("permits", {k.lock, k.counter, k.writers},
	           {holder, std::to_string(ttl), "limit:" + std::to_string(limit), std::to_string(limit)});
}
Reply
renew(const Keys &k, const std::string &match, const std::string &mode, int ttl)
{
	return run("renew", {k.lock}, {match, mode, std::to_string(ttl)});
}
Reply
release(const Keys &k, const std::string &match, const std::string &mode)
{
	return run("release", {k.lock}, {match, mode, k.released});
}

Reply
campaign(const Keys &k, const std::string &holder, int ttl, const std::string &value)
{
	return run("campaign", {k.lock, k.counter, k.value, k.epoch},
	           {holder, std::to_string(ttl), value, k.election});
}

} // namespace

TEST(RedisLua, ScriptsAreWhatTheClientSends)
{
	const std::map<std::string, std::string_view> embedded{{"acquire", lua::acquire},
	                                                       {"shared", lua::shared},
	                                                       {"permits", lua::permits},
	                                                       {"campaign", lua::campaign},
	                                                       {"renew", lua::renew},
	                                                       {"release", lua::release},
	                                                       {"withdraw", lua::withdraw},
	                                                       {"renew_leader", lua::renew_leader},
	                                                       {"resign", lua::resign},
	                                                       {"proclaim", lua::proclaim},
	                                                       {"read", lua::read},
	                                                       {"redlock_acquire", lua::redlock_acquire},
	                                                       {"redlock_extend", lua::redlock_extend},
	                                                       {"redlock_release", lua::redlock_release}};
	for (const auto &[name, text] : embedded) {
		EXPECT_EQ(script_text(name, PGLEASE_REDIS_LUA_DIR), text) << name;
		Script script{std::string{text}};
		Reply sha = cmd({"SCRIPT", "LOAD", text});
		EXPECT_EQ(sha.text, script.sha1()) << name << ": EVALSHA's name is SCRIPT LOAD's";
	}
}

// ---- acquire.lua: the exclusive lock -------------------------------------------

TEST(RedisLua, AcquireGrantsTheNextTokenAndSetsTheLock)
{
	Keys k = fresh();
	EXPECT_EQ(integer(acquire(k, "h1", 5000)), 1);
	EXPECT_EQ(get(k.lock), "1:h1");
	EXPECT_GT(pttl(k.lock), 4000);
	EXPECT_LE(pttl(k.lock), 5000);
	EXPECT_EQ(get(k.counter), "1");
	EXPECT_EQ(pttl(k.counter), -1) << "the counter never expires";
	EXPECT_EQ(cmd({"EXISTS", k.writers}).integer, 0) << "a grant leaves no writer's mark";
}

TEST(RedisLua, AcquireRefusesAnotherHolderAndChangesNothing)
{
	Keys k = fresh();
	ASSERT_EQ(integer(acquire(k, "h1", 5000)), 1);
	long long answer = integer(acquire(k, "h2", 5000));
	EXPECT_LT(answer, 0);
	EXPECT_GE(answer, -5000) << "-(ms until the lock may be free)";
	EXPECT_LT(answer, -4000);
	EXPECT_EQ(get(k.lock), "1:h1");
	EXPECT_EQ(get(k.counter), "1");
}

TEST(RedisLua, AcquireByItsHolderGivesItsTokenBackWithTheNewTtl)
{
	Keys k = fresh();
	ASSERT_EQ(integer(acquire(k, "h1", 1000)), 1);
	EXPECT_EQ(integer(acquire(k, "h1", 9000)), 1);
	EXPECT_GT(pttl(k.lock), 8000);
	EXPECT_EQ(get(k.counter), "1") << "no second token";
}

TEST(RedisLua, AcquireAfterAReleaseGrantsAHigherToken)
{
	Keys k = fresh();
	ASSERT_EQ(integer(acquire(k, "h1", 5000)), 1);
	ASSERT_EQ(integer(release(k, "1:h1", "value")), 1);
	EXPECT_EQ(integer(acquire(k, "h2", 5000)), 2);
	EXPECT_EQ(get(k.lock), "2:h2");
}

TEST(RedisLua, AcquireRefusesADamagedCounterWritingNothing)
{
	Keys k = fresh();
	for (const char *damaged : {"abc", "5.5", "-3", "9007199254740993", "01"}) {
		cmd({"SET", k.counter, damaged});
		Reply r = acquire(k, "h1", 5000);
		ASSERT_TRUE(r.is_error()) << damaged;
		EXPECT_NE(r.text.find("PGLEASE_COUNTER"), std::string::npos) << r.text;
		EXPECT_EQ(cmd({"EXISTS", k.lock}).integer, 0) << damaged << ": nothing written";
		EXPECT_EQ(get(k.counter), damaged);
	}
	cmd({"SET", k.counter, "9007199254740991"});
	Reply r = acquire(k, "h1", 5000);
	ASSERT_TRUE(r.is_error());
	EXPECT_NE(r.text.find("PGLEASE_EXHAUSTED"), std::string::npos) << r.text;
	EXPECT_EQ(cmd({"EXISTS", k.lock}).integer, 0);
	cmd({"SET", k.counter, "9007199254740990"});
	EXPECT_EQ(integer(acquire(k, "h1", 5000)), 9007199254740991LL) << "2^53-1, the last exact token";
}

TEST(RedisLua, AcquireRefusesALockOfItsHolderWithoutAToken)
{
	Keys k = fresh();
	cmd({"SET", k.lock, "x:h1"});
	Reply r = acquire(k, "h1", 5000);
	ASSERT_TRUE(r.is_error());
	EXPECT_NE(r.text.find("PGLEASE_LOCK"), std::string::npos) << r.text;
	EXPECT_EQ(get(k.lock), "x:h1");
}

TEST(RedisLua, AWaitingWriterMarksItselfAndTakesItsMarkBack)
{
	Keys k = fresh();
	ASSERT_EQ(integer(acquire(k, "h1", 5000)), 1);
	long long now = server_ms();
	EXPECT_LT(integer(acquire(k, "w", 5000, 3000)), 0);
	Reply score = cmd({"ZSCORE", k.writers, "w"});
	ASSERT_TRUE(score.is_string()) << "a refused writer that will wait leaves its mark";
	EXPECT_NEAR(std::stod(score.text), now + 3000, 500);
	EXPECT_GT(pttl(k.writers), 2000);
	EXPECT_EQ(integer(run("withdraw", {k.writers}, {"w"})), 1);
	EXPECT_EQ(cmd({"EXISTS", k.writers}).integer, 0);
	EXPECT_EQ(integer(run("withdraw", {k.writers}, {"w"})), 0) << "no mark left";

	EXPECT_LT(integer(acquire(k, "w", 5000, 3000)), 0);
	ASSERT_EQ(integer(release(k, "1:h1", "value")), 1);
	EXPECT_EQ(integer(acquire(k, "w", 5000, 3000, true)), 2);
	EXPECT_TRUE(cmd({"ZSCORE", k.writers, "w"}).is_nil()) << "granted, the writer's mark goes";
	EXPECT_LT(integer(acquire(k, "x", 5000, 0)), 0);
	EXPECT_EQ(cmd({"EXISTS", k.writers}).integer, 0) << "a try that will not wait marks nothing";
}

// ---- renew.lua and release.lua --------------------------------------------------

TEST(RedisLua, RenewExtendsOnlyTheMatchingGrant)
{
	Keys k = fresh();
	ASSERT_EQ(integer(acquire(k, "h1", 2000)), 1);
	EXPECT_EQ(integer(renew(k, "1:h1", "value", 9000)), 1);
	EXPECT_GT(pttl(k.lock), 8000);
	EXPECT_EQ(integer(renew(k, "1:h2", "value", 20000)), 0) << "another holder";
	EXPECT_EQ(integer(renew(k, "0:h1", "value", 20000)), 0) << "a stale token";
	EXPECT_EQ(integer(renew(k, "2:", "token", 20000)), 0) << "another token";
	EXPECT_LE(pttl(k.lock), 9000) << "a refused renewal changes nothing";
	EXPECT_EQ(integer(renew(k, "1:", "token", 12000)), 1) << "by token alone";
	EXPECT_GT(pttl(k.lock), 11000);
	Keys none = keys_of("lua/no such lock");
	EXPECT_EQ(integer(renew(none, "1:h1", "value", 1000)), 0);
	EXPECT_EQ(cmd({"EXISTS", none.lock}).integer, 0);
}

TEST(RedisLua, ReleaseDeletesOnlyTheMatchingGrantAndPublishes)
{
	Keys k = fresh();
	ASSERT_EQ(integer(acquire(k, "h1", 5000)), 1);
	auto sub = Subscriber::open(server().endpoint(), Timeouts{2000ms, 2000ms}, k.released);
	ASSERT_TRUE(sub) << sub.error();
	EXPECT_EQ(integer(release(k, "1:h2", "value")), 0);
	EXPECT_EQ(integer(release(k, "2:", "token")), 0);
	EXPECT_EQ(get(k.lock), "1:h1") << "a stale release changes nothing";
	EXPECT_EQ(integer(release(k, "1:h1", "value")), 1);
	EXPECT_EQ(cmd({"EXISTS", k.lock}).integer, 0);
	EXPECT_EQ(get(k.counter), "1") << "the counter stays";
	auto message = sub->wait(2000ms);
	ASSERT_TRUE(message) << message.error();
	ASSERT_TRUE(message->has_value()) << "the release publishes on " << k.released;
	EXPECT_EQ((*message)->payload, "released");
	EXPECT_EQ(integer(release(k, "1:h1", "value")), 0) << "released already";
}

// ---- shared.lua and permits.lua: the sorted set of grants -------------------------

TEST(RedisLua, ReadersShareTheSortedSetOfGrants)
{
	Keys k = fresh();
	long long now = server_ms();
	EXPECT_EQ(integer(reader(k, "r1", 5000)), 1);
	EXPECT_EQ(integer(reader(k, "r2", 8000)), 2);
	EXPECT_EQ(cmd({"TYPE", k.lock}).text, "zset");
	Reply kind = cmd({"ZSCORE", k.lock, "=shared"});
	EXPECT_EQ(kind.text, "inf");
	EXPECT_NEAR(std::stod(cmd({"ZSCORE", k.lock, "1:r1"}).text), now + 5000, 500);
	EXPECT_NEAR(std::stod(cmd({"ZSCORE", k.lock, "2:r2"}).text), now + 8000, 500);
	EXPECT_GT(pttl(k.lock), 7000) << "the key covers its longest grant";
	EXPECT_EQ(integer(reader(k, "r1", 5000)), 1) << "a reader's own grant, renewed";
	EXPECT_EQ(get(k.counter), "2");

	EXPECT_EQ(integer(renew(k, "1:r1", "value", 20000)), 1);
	EXPECT_GT(pttl(k.lock), 19000);
	EXPECT_EQ(integer(renew(k, "3:r1", "value", 20000)), 0);
	EXPECT_EQ(integer(release(k, "1:r1", "value")), 1);
	EXPECT_TRUE(cmd({"ZSCORE", k.lock, "1:r1"}).is_nil());
	EXPECT_EQ(integer(release(k, "1:r1", "value")), 0);
	EXPECT_EQ(integer(release(k, "2:", "token")), 1) << "the last grant: the key goes";
	EXPECT_EQ(cmd({"EXISTS", k.lock}).integer, 0);
}

TEST(RedisLua, AWriterWaitsForReadersAndLaterReadersForItsMark)
{
	Keys k = fresh();
	ASSERT_EQ(integer(reader(k, "r1", 5000)), 1);
	long long answer = integer(acquire(k, "w", 5000, 3000));
	EXPECT_LT(answer, 0) << "a writer waits for the readers";
	EXPECT_GE(answer, -5000);
	EXPECT_LT(integer(reader(k, "r2", 5000)), 0) << "a reader waits behind a waiting writer";
	ASSERT_EQ(integer(run("withdraw", {k.writers}, {"w"})), 1);
	EXPECT_EQ(integer(reader(k, "r2", 5000)), 2) << "its mark withdrawn, readers come in";
	ASSERT_EQ(integer(release(k, "1:r1", "value")), 1);
	ASSERT_EQ(integer(release(k, "2:r2", "value")), 1);
	EXPECT_EQ(integer(acquire(k, "w", 5000, 3000, true)), 3) << "the set gone, the lock";
	EXPECT_EQ(get(k.lock), "3:w");
	EXPECT_LT(integer(reader(k, "r3", 5000)), 0) << "a reader waits for a lock";
	Reply own = reader(k, "w", 5000);
	ASSERT_TRUE(own.is_error());
	EXPECT_NE(own.text.find("PGLEASE_MISMATCH own:lock"), std::string::npos) << own.text;
}

TEST(RedisLua, PermitsAdmitUpToTheirLimit)
{
	Keys k = fresh();
	EXPECT_EQ(integer(permit(k, "p1", 5000, 2)), 1);
	EXPECT_EQ(integer(permit(k, "p2", 5000, 2)), 2);
	EXPECT_EQ(cmd({"ZSCORE", k.lock, "=limit:2"}).text, "inf");
	long long answer = integer(permit(k, "p3", 5000, 2));
	EXPECT_LT(answer, 0) << "two of two held";
	EXPECT_GE(answer, -5000);
	EXPECT_EQ(integer(permit(k, "p2", 5000, 2)), 2) << "a holder's own permit, renewed";
	Reply other = permit(k, "p3", 5000, 3);
	ASSERT_TRUE(other.is_error());
	EXPECT_NE(other.text.find("PGLEASE_MISMATCH limit:2"), std::string::npos) << other.text;
	Reply readers = reader(k, "r", 5000);
	ASSERT_TRUE(readers.is_error());
	EXPECT_NE(readers.text.find("PGLEASE_MISMATCH limit:2"), std::string::npos) << readers.text;
	Reply lock = acquire(k, "l", 5000);
	ASSERT_TRUE(lock.is_error()) << "a lock on permits";
	EXPECT_NE(lock.text.find("PGLEASE_MISMATCH limit:2"), std::string::npos) << lock.text;
	ASSERT_EQ(integer(release(k, "1:p1", "value")), 1);
	EXPECT_EQ(integer(permit(k, "p3", 5000, 2)), 3) << "a released permit admits one";
	EXPECT_EQ(cmd({"ZCARD", k.lock}).integer, 3) << "two grants and the kind";
}

TEST(RedisLua, AnExpiredPermitIsPrunedAndItsPlaceGiven)
{
	Keys k = fresh();
	ASSERT_EQ(integer(permit(k, "p1", 150, 1)), 1);
	EXPECT_LT(integer(permit(k, "p2", 5000, 1)), 0);
	std::this_thread::sleep_for(300ms);
	EXPECT_EQ(integer(permit(k, "p2", 5000, 1)), 2);
	EXPECT_TRUE(cmd({"ZSCORE", k.lock, "1:p1"}).is_nil()) << "pruned";
	EXPECT_EQ(integer(renew(k, "1:p1", "value", 5000)), 0) << "an expired grant is not renewed";
}

TEST(RedisLua, APermitOnALockIsAMismatch)
{
	Keys k = fresh();
	ASSERT_EQ(integer(acquire(k, "h1", 5000)), 1);
	Reply r = permit(k, "p1", 5000, 2);
	ASSERT_TRUE(r.is_error());
	EXPECT_NE(r.text.find("PGLEASE_MISMATCH lock"), std::string::npos) << r.text;
	EXPECT_EQ(get(k.lock), "1:h1");
}

// ---- the election's scripts ------------------------------------------------------

TEST(RedisLua, ACampaignSetsTheLockTheValueAndTheEpoch)
{
	Keys k = fresh();
	auto told = Subscriber::open(server().endpoint(), Timeouts{2000ms, 2000ms}, k.election);
	ASSERT_TRUE(told) << told.error();
	long long now = server_ms();
	EXPECT_EQ(integer(campaign(k, "c1", 5000, "v1")), 1);
	auto elected = told->wait(2000ms);
	ASSERT_TRUE(elected) << elected.error();
	ASSERT_TRUE(elected->has_value()) << "a campaign that grants publishes on " << k.election;
	EXPECT_EQ((*elected)->payload, "elected");
	EXPECT_EQ(get(k.lock), "1:c1");
	std::string value = get(k.value);
	ASSERT_EQ(value.rfind("1:", 0), 0u) << value;
	EXPECT_NEAR(std::stod(value.substr(2, value.find(':', 2) - 2)), now, 1000) << value;
	EXPECT_EQ(value.substr(value.rfind(':') + 1), "v1");
	EXPECT_GT(pttl(k.value), 4000);
	EXPECT_FALSE(get(k.epoch).empty()) << "a new counter, a new epoch";
	EXPECT_LT(integer(campaign(k, "c2", 5000, "v2")), 0);
	EXPECT_EQ(get(k.value), value) << "a refused campaign changes nothing";
	EXPECT_EQ(integer(campaign(k, "c1", 5000, "v1")), 1);
	EXPECT_EQ(get(k.value), value) << "a re-campaign keeps the term's since";
	auto quiet = told->wait(200ms);
	ASSERT_TRUE(quiet) << quiet.error();
	EXPECT_FALSE(quiet->has_value()) << "nothing changed, nothing published";

	Reply view = run("read", {k.lock, k.value, k.counter, k.epoch}, {});
	ASSERT_TRUE(view.is_array());
	ASSERT_EQ(view.elements.size(), 5u);
	EXPECT_EQ(view.elements[0].text, "1:c1");
	EXPECT_EQ(view.elements[1].text, value);
	EXPECT_EQ(view.elements[2].text, "1");
	EXPECT_GT(view.elements[3].integer, 4000);
	EXPECT_EQ(view.elements[4].text, get(k.epoch));
}

TEST(RedisLua, ALeaderRenewsProclaimsAndResignsItsOwnTermOnly)
{
	Keys k = fresh();
	ASSERT_EQ(integer(campaign(k, "c1", 2000, "v1")), 1);
	std::string since = get(k.value).substr(0, get(k.value).rfind(':'));
	EXPECT_EQ(integer(run("renew_leader", {k.lock, k.value}, {"1:c1", "value", "9000"})), 1);
	EXPECT_GT(pttl(k.lock), 8000);
	EXPECT_GT(pttl(k.value), 8000);
	EXPECT_EQ(integer(run("renew_leader", {k.lock, k.value}, {"0:c1", "value", "20000"})), 0);
	EXPECT_LE(pttl(k.lock), 9000);

	EXPECT_EQ(integer(run("proclaim", {k.lock, k.value}, {"1:c1", "1:", "v2", k.election})), 1);
	EXPECT_EQ(get(k.value), since + ":v2") << "the term's since kept";
	EXPECT_EQ(integer(run("proclaim", {k.lock, k.value}, {"0:c1", "0:", "v3", k.election})), 0);
	EXPECT_EQ(get(k.value), since + ":v2");

	EXPECT_EQ(integer(run("resign", {k.lock, k.value}, {"0:c1", "value", k.released, k.election})), 0);
	EXPECT_EQ(get(k.lock), "1:c1");
	EXPECT_EQ(integer(run("resign", {k.lock, k.value}, {"1:c1", "value", k.released, k.election})), 1);
	EXPECT_EQ(cmd({"EXISTS", k.lock, k.value}).integer, 0);
	Reply view = run("read", {k.lock, k.value, k.counter, k.epoch}, {});
	ASSERT_TRUE(view.is_array());
	EXPECT_EQ(view.elements[0].text, "") << "no leader";
	EXPECT_EQ(view.elements[2].text, "1") << "the term that ended";
}

TEST(RedisLua, ReadersOnAnElectionsNameLeadNobody)
{
	Keys k = fresh();
	ASSERT_EQ(integer(reader(k, "r1", 5000)), 1);
	Reply view = run("read", {k.lock, k.value, k.counter, k.epoch}, {});
	ASSERT_TRUE(view.is_array()) << view.text;
	EXPECT_EQ(view.elements[0].text, "");
	EXPECT_EQ(integer(run("renew_leader", {k.lock, k.value}, {"1:r1", "value", "9000"})), 0);
	EXPECT_EQ(integer(run("proclaim", {k.lock, k.value}, {"1:r1", "1:", "v", k.election})), 0);
	EXPECT_EQ(cmd({"EXISTS", k.value}).integer, 0);
}

// ---- Redlock's, on each node ---------------------------------------------------------

TEST(RedisLua, RedlockScriptsCompareTheGrantsValue)
{
	Keys k = fresh();
	EXPECT_EQ(integer(run("redlock_acquire", {k.lock}, {"abc:h1", "5000"})), 1);
	EXPECT_EQ(get(k.lock), "abc:h1");
	EXPECT_GT(pttl(k.lock), 4000);
	EXPECT_EQ(integer(run("redlock_acquire", {k.lock}, {"def:h2", "5000"})), 0);
	EXPECT_EQ(integer(run("redlock_extend", {k.lock}, {"def:h2", "20000"})), 0);
	EXPECT_LE(pttl(k.lock), 5000);
	EXPECT_EQ(integer(run("redlock_extend", {k.lock}, {"abc:h1", "20000"})), 1);
	EXPECT_GT(pttl(k.lock), 19000);
	EXPECT_EQ(integer(run("redlock_release", {k.lock}, {"def:h2"})), 0);
	EXPECT_EQ(get(k.lock), "abc:h1");
	EXPECT_EQ(integer(run("redlock_release", {k.lock}, {"abc:h1"})), 1);
	EXPECT_EQ(cmd({"EXISTS", k.lock}).integer, 0);
	EXPECT_EQ(cmd({"EXISTS", k.counter}).integer, 0) << "Redlock keeps no counter";
}
