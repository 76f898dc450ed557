// zookeeper_auth_test.cpp -- zookeeper://user:password@...: digest
// authentication and the creator-only ACLs of the nodes the provider creates,
// against a real ZooKeeper server (scripts/zookeeper.sh, its port drawn free
// by support.hpp's ScriptServer).  The attackers are plain sessions of the
// ZooKeeper C client: unauthenticated, another user, and the holder's user
// name with another password (ZooKeeper's digest scheme accepts any
// user:password and makes it an identity, so a wrong password is another
// identity, refused at its first change).  Every message a test sees is
// checked for the password text.  Elections get the same ACLs (their
// folder and <root>/.election).  Never mocked, never skipped.
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#define THREADED // the synchronous calls of libzookeeper_mt
#include <zookeeper/zookeeper.h>

#include "pglease/pglease.hpp"
#include "support.hpp"

using pglease::Errc;
using namespace test_support;

namespace {

constexpr const char *password = "s3cret-Pw@zk"; // '@' in it: the last '@' ends the userinfo
constexpr const char *password_escaped = "s3cret-Pw%40zk";

ScriptServer *server = nullptr;

// the URL of user:PASSWORD (escaped) at the server, chroot ROOT
std::string
url(const std::string &root, const std::string &user = "alice", const std::string &pw = password_escaped)
{
	return "zookeeper://" + user + ":" + pw + "@127.0.0.1:" + std::to_string(server->port()) + root;
}

// a chroot of this test alone
std::string
test_root()
{
	return "/pglease-auth-" + current_test_name() + "-" + std::to_string(::getpid());
}

// an error message checked for the password (raw and escaped)
::testing::AssertionResult
no_password(const std::string &message)
{
	if (message.find(password) != std::string::npos || message.find(password_escaped) != std::string::npos ||
	    message.find("s3cret") != std::string::npos)
		return ::testing::AssertionFailure() << "the password shows in: " << message;
	return ::testing::AssertionSuccess();
}

pglease::ClientOptions
quick()
{
	pglease::ClientOptions o;
	o.connect_timeout = 3s;
	return o;
}

// Raw -- a plain C-client session (the attacker, or a setup step), with
// optional digest credentials
class Raw {
public:
	explicit Raw(const std::string &auth = "")
	{
		zoo_set_debug_level(static_cast<ZooLogLevel>(0));
		zh_ = zookeeper_init(("127.0.0.1:" + std::to_string(server->port())).c_str(),
		                     [](zhandle_t *, int, int, const char *, void *) {}, 10000, nullptr, nullptr, 0);
		ok_ = zh_ && eventually([&] { return zoo_state(zh_) == ZOO_CONNECTED_STATE; }, 5s);
		if (ok_ && !auth.empty()) {
			std::promise<int> verdict;
			ok_ = zoo_add_auth(
			          zh_, "digest", auth.data(), static_cast<int>(auth.size()),
			          [](int rc, const void *data) {
				          static_cast<std::promise<int> *>(const_cast<void *>(data))->set_value(rc);
			          },
			          &verdict) == ZOK;
			auto f = verdict.get_future();
			ok_ = ok_ && f.wait_for(5s) == std::future_status::ready && f.get() == ZOK;
		}
	}
	~Raw()
	{
		if (zh_)
			zookeeper_close(zh_);
	}
	Raw(const Raw &) = delete;
	Raw &operator=(const Raw &) = delete;
	bool ok() const { return ok_; }
	int remove(const std::string &path) { return zoo_delete(zh_, path.c_str(), -1); }
	int set_acl(const std::string &path, ACL_vector acl) { return zoo_set_acl(zh_, path.c_str(), -1, &acl); }
	int create(const std::string &path, int mode = 0)
	{
		return zoo_create(zh_, path.c_str(), "x", 1, &ZOO_OPEN_ACL_UNSAFE, mode, nullptr, 0);
	}
	int set_data(const std::string &path) { return zoo_set(zh_, path.c_str(), "y", 1, -1); }
	std::vector<std::string> children(const std::string &path)
	{
		String_vector names{};
		std::vector<std::string> out;
		if (zoo_get_children(zh_, path.c_str(), 0, &names) == ZOK) {
			for (int i = 0; i < names.count; i++)
				out.emplace_back(names.data[i]);
			deallocate_String_vector(&names);
		}
		return out;
	}
	// the ACL of PATH as "scheme:id=perms" strings
	std::vector<std::string> acl(const std::string &path)
	{
		ACL_vector acl{};
		Stat stat{};
		std::vector<std::string> out;
		if (zoo_get_acl(zh_, path.c_str(), &acl, &stat) == ZOK) {
			for (int i = 0; i < acl.count; i++)
				out.push_back(std::string{acl.data[i].id.scheme} + ":" + acl.data[i].id.id + "=" +
				              std::to_string(acl.data[i].perms));
			deallocate_ACL_vector(&acl);
		}
		return out;
	}

private:
	zhandle_t *zh_ = nullptr;
	bool ok_ = false;
};

// world:anyone with only READ: what an attacker would set to lock everyone out
ACL_vector
read_only_for_all()
{
	return ZOO_READ_ACL_UNSAFE;
}

class ZookeeperAuth : public ::testing::Test {
protected:
	static void SetUpTestSuite()
	{
		server = new ScriptServer("zookeeper.sh");
		started = server->start();
	}
	static void TearDownTestSuite()
	{
		delete server;
		server = nullptr;
	}
	void SetUp() override
	{
		ASSERT_TRUE(started) << "install ZooKeeper: scripts/install-deps.sh";
		root = test_root();
		auto r = pglease::connect(url(root), quick());
		ASSERT_TRUE(r) << r.error();
		locker = std::move(*r);
	}
	static inline ::testing::AssertionResult started = ::testing::AssertionFailure();
	std::string root;
	std::unique_ptr<pglease::Locker> locker;
};

// Fails before this change: zookeeper://user:password@... was refused by
// connect() ("credentials ... are not supported"), so SetUp failed.
// lock_node_of -- the "lock-" node of a writer's pair (the one a renewal checks)
std::string
lock_node_of(const std::vector<std::string> &nodes)
{
	for (const auto &node : nodes)
		if (node.find("-lock-") != std::string::npos)
			return node;
	return nodes.empty() ? std::string{} : nodes.front();
}

TEST_F(ZookeeperAuth, ConformanceBasicsThroughAnAuthenticatedSession)
{
	auto first = locker->acquire("payroll", opts(5s));
	ASSERT_TRUE(first) << first.error();
	auto contender = in_other_thread([&] { return locker->try_acquire("payroll", opts(5s)); });
	ASSERT_FALSE(contender);
	EXPECT_EQ(contender.error().code, Errc::timeout) << contender.error();
	auto renewed = first->renew();
	ASSERT_TRUE(renewed) << renewed.error();
	auto waiter = std::async(std::launch::async, [&] { return locker->acquire("payroll", opts(5s, 10s)); });
	std::this_thread::sleep_for(300ms);
	ASSERT_TRUE(first->release());
	auto second = waiter.get();
	ASSERT_TRUE(second) << second.error();
	EXPECT_GT(second->token(), first->token());
	// every node it made carries the creator-only ACL
	Raw look;
	ASSERT_TRUE(look.ok());
	auto acl = look.acl(root);
	ASSERT_EQ(acl.size(), 2u) << ::testing::PrintToString(acl);
	EXPECT_EQ(acl[0].rfind("digest:alice:", 0), 0u) << acl[0];
	EXPECT_EQ(acl[0].substr(acl[0].size() - 3), "=31") << "ALL for the creator";
	EXPECT_EQ(acl[1], "world:anyone=1") << "READ for anyone";
	EXPECT_EQ(look.acl(root + "/payroll"), acl);
	auto nodes = look.children(root + "/payroll");
	ASSERT_EQ(nodes.size(), 2u) << "a writer's pair, lock- and __WRIT__ (docs/shared-leases.md)";
	for (const auto &node : nodes)
		EXPECT_EQ(look.acl(root + "/payroll/" + node), acl) << node;
}

// no identity but the holder's can delete its node, re-ACL the root or the
// resource's folder, queue in the folder or change the node's data
TEST_F(ZookeeperAuth, OtherIdentitiesCannotBreakOrLockOut)
{
	auto held = locker->acquire("payroll", opts(5s));
	ASSERT_TRUE(held) << held.error();
	const std::string folder = root + "/payroll";
	Raw look;
	ASSERT_TRUE(look.ok());
	auto nodes = look.children(folder);
	ASSERT_EQ(nodes.size(), 2u) << "a writer's pair, lock- and __WRIT__ (docs/shared-leases.md)";
	const std::string node = folder + "/" + lock_node_of(nodes);
	struct Attacker {
		const char *who;
		std::string auth;
	};
	for (const Attacker &a : {Attacker{"unauthenticated", ""}, Attacker{"mallory", "mallory:other"},
	                          Attacker{"alice with a wrong password", "alice:wrong"}}) {
		SCOPED_TRACE(a.who);
		Raw attacker(a.auth);
		ASSERT_TRUE(attacker.ok());
		EXPECT_EQ(attacker.remove(node), ZNOAUTH);
		EXPECT_EQ(attacker.remove(folder), ZNOAUTH);
		EXPECT_EQ(attacker.set_acl(root, read_only_for_all()), ZNOAUTH);
		EXPECT_EQ(attacker.set_acl(folder, read_only_for_all()), ZNOAUTH);
		EXPECT_EQ(attacker.set_acl(node, read_only_for_all()), ZNOAUTH);
		EXPECT_EQ(attacker.set_data(node), ZNOAUTH);
		EXPECT_EQ(attacker.create(folder + "/_c_0-lock-", ZOO_PERSISTENT_SEQUENTIAL), ZNOAUTH)
		    << "a planted node would sort first and block the resource";
		EXPECT_EQ(attacker.create(root + "/other"), ZNOAUTH);
	}
	auto renewed = held->renew();
	EXPECT_TRUE(renewed) << "the holder still holds: " << renewed.error();
	EXPECT_EQ(look.children(folder), nodes);
	auto waiter = std::async(std::launch::async, [&] { return locker->acquire("payroll", opts(5s, 10s)); });
	std::this_thread::sleep_for(300ms);
	ASSERT_TRUE(held->release());
	auto next = waiter.get();
	ASSERT_TRUE(next) << next.error();
	EXPECT_GT(next->token(), held->token());
	auto other = locker->try_acquire("another", opts(5s));
	EXPECT_TRUE(other) << "nobody was locked out: " << other.error();
}

// ZooKeeper's digest scheme takes any password as an identity; the wrong
// one is refused at its first create under the right one's nodes: fast,
// permission, not retryable, no password in the message
TEST_F(ZookeeperAuth, WrongPasswordFailsFastWithPermission)
{
	auto held = locker->acquire("payroll", opts(5s));
	ASSERT_TRUE(held) << held.error();
	auto wrong = pglease::connect(url(root, "alice", "wrong-s3cret"), quick());
	ASSERT_TRUE(wrong) << wrong.error();
	for (const char *resource : {"payroll", "fresh"}) { // a lock node in alice's folder; a folder in her root
		SCOPED_TRACE(resource);
		auto started = Clock::now();
		auto r = in_other_thread([&] { return (*wrong)->acquire(resource, opts(5s, 3s)); });
		ASSERT_FALSE(r);
		EXPECT_EQ(r.error().code, Errc::permission) << r.error();
		EXPECT_FALSE(pglease::is_retryable(r.error()));
		EXPECT_LT(ms_since(started), 1500) << "refused, not waited for";
		EXPECT_NE(r.error().message.find("wrong password"), std::string::npos) << r.error();
		EXPECT_TRUE(no_password(r.error().message));
		EXPECT_EQ(r.error().message.find("wrong-s3cret"), std::string::npos) << r.error();
	}
	auto renewed = held->renew();
	EXPECT_TRUE(renewed) << renewed.error();
}

// a root made without credentials (world:anyone:cdrwa) is refused with
// credentials: anyone could re-ACL it or delete under it
TEST_F(ZookeeperAuth, OpenRootIsRefused)
{
	const std::string open_root = root + "-open";
	{
		Raw setup;
		ASSERT_TRUE(setup.ok());
		ASSERT_EQ(setup.create(open_root), ZOK);
	}
	auto c = pglease::connect(url(open_root), quick());
	ASSERT_TRUE(c) << c.error();
	auto r = (*c)->try_acquire("payroll", opts(5s));
	ASSERT_FALSE(r);
	EXPECT_EQ(r.error().code, Errc::permission) << r.error();
	EXPECT_NE(r.error().message.find("world:anyone"), std::string::npos) << r.error();
	EXPECT_TRUE(no_password(r.error().message));
	Raw look;
	EXPECT_TRUE(eventually([&] { return look.children(open_root + "/payroll").empty(); }, 3s))
	    << "the refused acquire's lock node goes with its session";
}

// an election (docs/election.md "ZooKeeper") gets the ACLs of a lock: its
// folder and <root>/.election too; anyone may read who leads, nobody else
// may change the value, break the term or queue; an open .election is refused
TEST_F(ZookeeperAuth, ElectionsCarryTheCreatorOnlyAcls)
{
	auto lead = locker->campaign("payroll", "host-a", opts(5s));
	ASSERT_TRUE(lead) << lead.error();
	const std::string folder = root + "/.election/payroll";
	Raw look;
	ASSERT_TRUE(look.ok());
	auto nodes = look.children(folder);
	ASSERT_EQ(nodes.size(), 1u) << "an election's one lock- node";
	const std::string node = folder + "/" + nodes[0];
	auto acl = look.acl(root);
	ASSERT_EQ(acl.size(), 2u) << ::testing::PrintToString(acl);
	EXPECT_EQ(look.acl(root + "/.election"), acl);
	EXPECT_EQ(look.acl(folder), acl);
	EXPECT_EQ(look.acl(node), acl);
	auto reader = pglease::connect("zookeeper://127.0.0.1:" + std::to_string(server->port()) + root, quick());
	ASSERT_TRUE(reader) << reader.error();
	auto seen = (*reader)->leader("payroll");
	ASSERT_TRUE(seen) << seen.error();
	EXPECT_TRUE(seen->has_leader && seen->value == "host-a" && seen->term == lead->term());
	Raw attacker("mallory:other");
	ASSERT_TRUE(attacker.ok());
	EXPECT_EQ(attacker.set_data(node), ZNOAUTH) << "another identity changed the leader's value";
	EXPECT_EQ(attacker.remove(node), ZNOAUTH);
	EXPECT_EQ(attacker.create(folder + "/_c_0-lock-", ZOO_PERSISTENT_SEQUENTIAL), ZNOAUTH);
	auto p = lead->proclaim("host-b");
	ASSERT_TRUE(p) << p.error();
	seen = (*reader)->leader("payroll");
	ASSERT_TRUE(seen) << seen.error();
	EXPECT_EQ(seen->value, "host-b");
	// alice's own root, but .election made open (world:anyone:cdrwa) by a raw session
	const std::string other_root = root + "-open-election";
	auto other = pglease::connect(url(other_root), quick());
	ASSERT_TRUE(other) << other.error();
	// (on other threads: this one leads, and may not wait for another lease)
	auto warmup = in_other_thread([&] { return (*other)->try_acquire("warmup", opts(5s)); });
	ASSERT_TRUE(warmup) << "alice's root made: " << warmup.error();
	{
		Raw alice(std::string{"alice:"} + password);
		ASSERT_TRUE(alice.ok());
		ASSERT_EQ(alice.create(other_root + "/.election"), ZOK);
	}
	auto refused = in_other_thread([&] { return (*other)->campaign("payroll", "host-c", opts(5s)); });
	ASSERT_FALSE(refused);
	EXPECT_EQ(refused.error().code, Errc::permission) << refused.error();
	EXPECT_NE(refused.error().message.find(other_root + "/.election lets world:anyone"), std::string::npos)
	    << refused.error();
	EXPECT_TRUE(no_password(refused.error().message));
}

// without credentials, today's behaviour: world:anyone:cdrwa, so anyone
// reaching the server can delete a holder's node (what the docs warn of)
TEST_F(ZookeeperAuth, WithoutCredentialsAnyoneCanBreakALease)
{
	const std::string open_root = root + "-nocreds";
	auto c = pglease::connect("zookeeper://127.0.0.1:" + std::to_string(server->port()) + open_root, quick());
	ASSERT_TRUE(c) << c.error();
	auto held = (*c)->acquire("payroll", opts(5s));
	ASSERT_TRUE(held) << held.error();
	Raw attacker;
	ASSERT_TRUE(attacker.ok());
	auto nodes = attacker.children(open_root + "/payroll");
	ASSERT_EQ(nodes.size(), 2u) << "a writer's pair, lock- and __WRIT__ (docs/shared-leases.md)";
	EXPECT_EQ(attacker.remove(open_root + "/payroll/" + lock_node_of(nodes)), ZOK);
	auto renewed = held->renew();
	ASSERT_FALSE(renewed) << "the holder learns it at its next renew";
	EXPECT_EQ(renewed.error().code, Errc::lost) << renewed.error();
}

TEST(ZookeeperAuthUrl, TlsIsRefusedSayingWhy)
{
	for (const char *u : {"zookeepers://127.0.0.1:2182", "zookeeper://127.0.0.1:2182?cacert=/tmp/ca.pem",
	                      "zookeeper://alice:s3cret-Pw@127.0.0.1:2182/x?cert=/c.pem&key=/k.pem"}) {
		SCOPED_TRACE(u);
		auto r = pglease::connect(u);
		ASSERT_FALSE(r);
		EXPECT_EQ(r.error().code, Errc::invalid_argument) << r.error();
		EXPECT_NE(r.error().message.find("TLS is not available"), std::string::npos) << r.error();
		EXPECT_TRUE(no_password(r.error().message));
	}
	pglease::ClientOptions o;
	o.tls_ca_file = "/tmp/ca.pem";
	auto r = pglease::connect("zookeeper://127.0.0.1:2182", o);
	ASSERT_FALSE(r);
	EXPECT_EQ(r.error().code, Errc::invalid_argument) << r.error();
	EXPECT_NE(r.error().message.find("no TLS"), std::string::npos) << r.error();
}

TEST(ZookeeperAuthUrl, MalformedCredentialsAreRefusedWithoutThePassword)
{
	for (const char *u :
	     {"zookeeper://alice@127.0.0.1:2182", "zookeeper://:s3cret-Pw@127.0.0.1:2182",
	      "zookeeper://alice:@127.0.0.1:2182", "zookeeper://alice:s3cret%zz@127.0.0.1:2182",
	      "zookeeper://alice:s3cret-Pw@127.0.0.1:0", "zookeeper://alice:s3cret-Pw@127.0.0.1",
	      "zookeeper://alice:s3cret-Pw@127.0.0.1:2182/x?other=1",
	      "zookeeper://alice:s3cret-Pw@127.0.0.1:2182/x/", "zookeeper://alice:s3cret,Pw@127.0.0.1:2182",
	      "zookeeper://127.0.0.1:2181,alice:s3cret-Pw@127.0.0.1:2182"}) {
		SCOPED_TRACE(u);
		auto r = pglease::connect(u);
		ASSERT_FALSE(r);
		EXPECT_EQ(r.error().code, Errc::invalid_argument) << r.error();
		EXPECT_TRUE(no_password(r.error().message));
	}
}

} // namespace
