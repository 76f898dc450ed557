// advise_emit_test.cpp -- the C++ that `pglease advise --emit cpp` prints,
// compiled and run for every provider the tree can choose and pglease
// implements: PostgreSQL Lease, Ephemeral and Advisory, Redis Lease (one
// node) and Redis Redlock (three nodes), etcd Lease, ZooKeeper Ephemeral,
// and the Election of --one-active on each of PostgreSQL, Redis, etcd and
// ZooKeeper, each against a real server.
//
// How a program is made from the emitted text (the lines after the four lines
// and the explanation, at most 20, asserted here):
//   - the placeholder URL (advise.hpp's emit_*_url) becomes the test server's:
//     "" for PostgreSQL (libpq's environment: PGHOST, PGPORT, PGDATABASE of
//     the test database, as scripts/test.sh exports them), redis://, redlock://
//     (three nodes), etcd:// and zookeeper:// of servers this file starts,
//     each on a loopback port drawn free when it starts (support.hpp's
//     ScriptServer: a bind race is retried on a new port);
//   - the one section line (emit_section_marker) becomes a probe: from another
//     thread, over another connection, try to take the same resource, and print
//     "held token N" when that is refused as busy (timeout), "NOT held ..." when
//     not; for an Election: from another thread, over another connection,
//     leader() must show the emitted leadership's term and value and a
//     campaign that does not wait must be refused (timeout), "held token
//     TERM" then;
//   - the result is the body of main in a translation unit that includes
//     <pglease/pglease.hpp>, <pglease/postgres.hpp> (pglease::fenced and
//     with_advisory), <atomic> (the emitted lost flag) and, for the
//     probe, <cstdio> and <thread>:  int main() { <body> return 0; }, where
//     main first prints why pglease::connect(url) fails, if it does, so a
//     failing run says why the emitted code returned 1.
// It is compiled with the compiler of this build and the flags CMake passes
// (ADVISE_EMIT_*: pglease's include directories, the .a files of pglease and
// pglease_redis, libpqxx, libpq and hiredis from pkg-config, -pthread), run,
// and must exit 0 and print "held".
#include "advise.hpp"
#include "support.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using pglease::cli::AdviseInput;
using pglease::cli::AdviseResult;
using pglease::cli::decide;
using pglease::cli::render;

constexpr std::size_t max_emitted_lines = 20;

std::vector<std::string>
split(const std::string &text, char separator)
{
	std::vector<std::string> parts;
	std::istringstream stream{text};
	for (std::string part; std::getline(stream, part, separator);)
		if (!part.empty())
			parts.push_back(part);
	return parts;
}

std::string
shell_quoted(const std::string &word)
{
	std::string quoted = "'";
	for (char c : word)
		quoted += c == '\'' ? std::string{"'\\''"} : std::string{c};
	return quoted + "'";
}

struct ShellRun {
	int status = -1; // exit status, or -1 when it did not exit normally
	std::string output;
};

// run_shell -- run a command with sh, stdout and stderr together.
ShellRun
run_shell(const std::string &command)
{
	ShellRun run;
	FILE *pipe = popen((command + " 2>&1").c_str(), "r");
	if (pipe == nullptr)
		return run;
	char buffer[4096];
	for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
		run.output.append(buffer, n);
	const int status = pclose(pipe);
	run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	return run;
}

// The probes the section line is replaced with: another thread, another
// connection, the same resource; refused with Errc::timeout means held.
constexpr const char *probes = R"(
static bool
probe_refused(const char *url, const char *resource)
{
	bool refused = false;
	std::thread other([&] {
		auto locker = pglease::connect(url);
		if (!locker) {
			std::printf("probe: %s\n", locker.error().message.c_str());
			return;
		}
		auto lease = (*locker)->try_acquire(resource);
		refused = !lease && lease.error().code == pglease::Errc::timeout;
		if (!refused)
			std::printf("probe: %s\n", lease ? "granted" : lease.error().message.c_str());
	});
	other.join();
	return refused;
}

// An election's probe: another connection sees this term as the leader's
// and cannot win a campaign that does not wait.
static bool
probe_elected(const char *url, const char *election, long long term)
{
	bool elected = false;
	std::thread other([&] {
		auto locker = pglease::connect(url);
		if (!locker) {
			std::printf("probe: %s\n", locker.error().message.c_str());
			return;
		}
		auto view = (*locker)->leader(election);
		if (!view || !view->has_leader || view->term != term || view->value != "host-1:8080") {
			std::printf("probe: leader() %s\n", view ? (view->has_leader ? "shows another leader" : "shows none")
			                                          : view.error().message.c_str());
			return;
		}
		pglease::LeaseOptions options;
		options.ttl = std::chrono::seconds{5};
		auto won = (*locker)->campaign(election, "probe", options);
		elected = !won && won.error().code == pglease::Errc::timeout;
		if (!elected)
			std::printf("probe: campaign %s\n", won ? "won" : won.error().message.c_str());
	});
	other.join();
	return elected;
}

// Why the emitted code would return 1 at its connect, for the test's message.
static void
report_connect_error(const char *url)
{
	auto locker = pglease::connect(url);
	if (!locker)
		std::printf("connect(\"%s\"): %s\n", url, locker.error().message.c_str());
}

static bool
probe_advisory_refused(const char *url, const char *resource)
{
	bool refused = false;
	std::thread other([&] {
		auto client = pglease::connect(url);
		if (!client) {
			std::printf("probe: %s\n", client.error().message.c_str());
			return;
		}
		auto done = pglease::with_advisory(**client, resource, std::chrono::milliseconds{100}, [](pqxx::work &) {});
		refused = !done && done.error().code == pglease::Errc::timeout;
		if (!refused)
			std::printf("probe: %s\n", done ? "granted" : done.error().message.c_str());
	});
	other.join();
	return refused;
}
)";

// probe_line -- what the section line becomes for the strategy (see the banner)
std::string
probe_line(const std::string &strategy, const std::string &url, const std::string &resource)
{
	if (strategy == "Advisory")
		return "std::printf(\"%s\\n\", probe_advisory_refused(" + url + ", " + resource +
		       ") ? \"held\" : \"NOT held\");";
	if (strategy == "Election")
		return "std::printf(\"%s token %lld\\n\", probe_elected(" + url + ", " + resource +
		       ", leadership->term()) ? \"held\" : \"NOT held\", static_cast<long "
		       "long>(leadership->term()));";
	return "std::printf(\"%s token %lld\\n\", probe_refused(" + url + ", " + resource +
	       ") ? \"held\" : \"NOT held\", static_cast<long long>(lease->token()));";
}

struct Case {
	std::string name;
	AdviseInput input;
	std::string provider_strategy; // what decide must pick, "Redis/Redlock"
	std::string_view placeholder;
	std::string url; // the test server's
};

AdviseInput
job(std::chrono::milliseconds section, std::set<std::string> infra, bool failover = false,
    bool one_active = false)
{
	AdviseInput input;
	input.resource = "advise/emit/" + std::to_string(getpid());
	input.section = section;
	input.instances = 4;
	input.infra = std::move(infra);
	input.failover = failover;
	input.one_active = one_active;
	input.explain = true; // the emitted code must be found after the explanation too
	input.emit = "cpp";
	return input;
}

class AdviseEmit : public ::testing::Test {
protected:
	using Server = test_support::ScriptServer;
	static std::string scratch_;
	// the servers of the suite: one redis-server, three Redlock nodes, etcd, ZooKeeper
	static inline std::unique_ptr<Server> redis_;
	static inline std::vector<std::unique_ptr<Server>> redlock_;
	static inline std::unique_ptr<Server> etcd_;
	static inline std::unique_ptr<Server> zookeeper_;
	static inline std::string redis_error_;
	static inline std::string etcd_error_;
	static inline std::string zookeeper_error_;

	// start -- a server of SCRIPT on a free port (OFFSETS: the other ports it
	// binds); what went wrong added to ERROR
	static std::unique_ptr<Server> start(const std::string &script, std::string &error,
	                                     const std::vector<int> &offsets = {0})
	{
		auto server = std::make_unique<Server>(script, "", offsets);
		if (const auto started = server->start(); !started)
			error += started.message() + std::string{"\n"};
		return server;
	}

	static void SetUpTestSuite()
	{
		char dir[] = "/tmp/advise_emit.XXXXXX";
		if (mkdtemp(dir) != nullptr)
			scratch_ = dir; // check_emitted_program asserts it
		if (ADVISE_EMIT_ETCD)
			etcd_ = start("etcd.sh", etcd_error_, {0, 1}); // its peer port: client port + 1
		if (ADVISE_EMIT_ZOOKEEPER)
			zookeeper_ = start("zookeeper.sh", zookeeper_error_);
		if (!ADVISE_EMIT_REDIS)
			return;
		redis_ = start("redis.sh", redis_error_);
		for (int i = 0; i < 3; i++)
			redlock_.push_back(start("redis.sh", redis_error_));
	}

	// every server is killed and its directory removed with its object
	static void TearDownTestSuite()
	{
		redis_.reset();
		redlock_.clear();
		etcd_.reset();
		zookeeper_.reset();
		if (!scratch_.empty())
			(void)run_shell("rm -rf " + shell_quoted(scratch_));
	}

	// check_emitted_program -- make the program (see the banner), compile, run.
	void check_emitted_program(const Case &c)
	{
		SCOPED_TRACE(c.name);
		ASSERT_FALSE(scratch_.empty()) << "no scratch directory under /tmp";
		const AdviseResult result = decide(c.input);
		ASSERT_TRUE(result.advice) << result.refusal;
		ASSERT_EQ(result.advice->provider + "/" + result.advice->strategy, c.provider_strategy);

		// The emitted code: what follows the four lines and the explanation.
		std::vector<std::string> lines = split(render(*result.advice, c.input), '\n');
		const std::size_t skip = 4 + result.advice->explanation.size();
		ASSERT_GT(lines.size(), skip);
		lines.erase(lines.begin(), lines.begin() + static_cast<std::ptrdiff_t>(skip));
		std::string emitted;
		for (const std::string &line : lines)
			emitted += line + "\n";
		EXPECT_LE(lines.size(), max_emitted_lines) << emitted;

		std::string body;
		int placeholders = 0;
		int sections = 0;
		const std::string quoted_placeholder = "\"" + std::string{c.placeholder} + "\"";
		const std::string resource = "\"" + c.input.resource + "\"";
		const std::string url = "\"" + c.url + "\"";
		for (std::string line : lines) {
			if (const std::size_t at = line.find(quoted_placeholder); at != std::string::npos) {
				line.replace(at, quoted_placeholder.size(), url);
				++placeholders;
			}
			const std::size_t indent = line.find_first_not_of(" \t");
			if (indent != std::string::npos && line.compare(indent, pglease::cli::emit_section_marker.size(),
			                                                pglease::cli::emit_section_marker) == 0) {
				++sections;
				line = line.substr(0, indent) + probe_line(result.advice->strategy, url, resource);
			}
			body += "\t" + line + "\n";
		}
		ASSERT_EQ(placeholders, 1) << "the placeholder URL " << c.placeholder << " once in:\n" << emitted;
		ASSERT_EQ(sections, 1) << "one \"" << pglease::cli::emit_section_marker << "\" line in:\n" << emitted;

		const std::string base = scratch_ + "/" + c.name;
		{
			std::ofstream source{base + ".cpp"};
			source << "#include <pglease/pglease.hpp>\n#include <pglease/postgres.hpp>\n\n"
			          "#include <atomic>\n#include <cstdio>\n#include <thread>\n"
			       << probes << "\nint\nmain()\n{\n\treport_connect_error(" << url << ");\n"
			       << body << "\treturn 0;\n}\n";
		}
		std::string compile = shell_quoted(ADVISE_EMIT_CXX);
		for (const std::string &flag : split(ADVISE_EMIT_FLAGS, '|'))
			compile += " " + shell_quoted(flag);
		for (const std::string &dir : split(ADVISE_EMIT_INCLUDES, '|'))
			compile += " -I" + shell_quoted(dir);
		compile += " -o " + shell_quoted(base) + " " + shell_quoted(base + ".cpp");
		for (const std::string &lib : split(ADVISE_EMIT_LIBS, '|'))
			compile += " " + shell_quoted(lib);
		const ShellRun compiled = run_shell(compile);
		ASSERT_EQ(compiled.status, 0) << "the emitted code does not compile:\n"
		                              << emitted << "\n$ " << compile << "\n"
		                              << compiled.output;

		const ShellRun ran = run_shell("timeout 60 " + shell_quoted(base));
		std::printf("  %s printed: %s", c.name.c_str(), ran.output.c_str());
		EXPECT_EQ(ran.status, 0) << "the program made of:\n" << emitted << "printed:\n" << ran.output;
		EXPECT_EQ(ran.output.find("NOT held"), std::string::npos) << ran.output;
		EXPECT_NE(("\n" + ran.output).find("\nheld"), std::string::npos) << "no \"held\" line:\n"
		                                                                 << ran.output;
		if (result.advice->strategy == "Redlock")
			EXPECT_NE(ran.output.find("held token 0\n"), std::string::npos) << "Redlock has no token:\n"
			                                                                << ran.output;
		else if (result.advice->strategy != "Advisory")
			EXPECT_EQ(ran.output.find("held token 0\n"), std::string::npos) << "a token > 0:\n" << ran.output;
	}

	void require_postgres()
	{
		if (std::getenv("PGDATABASE") == nullptr)
			FAIL() << "no test database: scripts/test.sh exports PGHOST, PGPORT and PGDATABASE (pg_lease "
			          "installed)";
	}

	void require_redis()
	{
		if (!ADVISE_EMIT_REDIS)
			GTEST_SKIP() << "built with PGLEASE_WITH_REDIS=OFF: no Redis provider to link";
		if (!redis_error_.empty())
			FAIL() << redis_error_;
	}

	void require_zookeeper()
	{
		if (!ADVISE_EMIT_ZOOKEEPER)
			GTEST_SKIP() << "built with PGLEASE_WITH_ZOOKEEPER=OFF: no ZooKeeper provider to link";
		if (!zookeeper_error_.empty())
			FAIL() << zookeeper_error_;
	}

	void require_etcd()
	{
		if (!ADVISE_EMIT_ETCD)
			GTEST_SKIP() << "built with PGLEASE_WITH_ETCD=OFF: no etcd provider to link";
		if (!etcd_error_.empty())
			FAIL() << etcd_error_;
	}
};

std::string AdviseEmit::scratch_;

// url -- SCHEME://127.0.0.1:PORT,... of the servers
std::string
url(const std::string &scheme, const std::vector<const test_support::ScriptServer *> &servers)
{
	std::string hosts;
	for (const auto *server : servers)
		hosts += (hosts.empty() ? "" : ",") + std::string{"127.0.0.1:"} + std::to_string(server->port());
	return scheme + "://" + hosts;
}

TEST_F(AdviseEmit, postgres_lease_program_compiles_runs_and_holds_the_lease)
{
	require_postgres();
	check_emitted_program({"postgres_lease", job(2s, {"postgres", "redis"}), "PostgreSQL/Lease",
	                       pglease::cli::emit_postgres_url, ""});
}

TEST_F(AdviseEmit, postgres_ephemeral_program_compiles_runs_and_holds_the_lease)
{
	require_postgres();
	check_emitted_program({"postgres_ephemeral", job(2s, {"postgres"}, true), "PostgreSQL/Ephemeral",
	                       pglease::cli::emit_postgres_url, ""});
}

TEST_F(AdviseEmit, postgres_advisory_program_compiles_runs_and_holds_the_lock)
{
	require_postgres();
	check_emitted_program({"postgres_advisory", job(200ms, {"postgres"}), "PostgreSQL/Advisory",
	                       pglease::cli::emit_postgres_url, ""});
}

TEST_F(AdviseEmit, redis_lock_program_compiles_runs_and_holds_the_lease)
{
	require_redis();
	check_emitted_program({"redis_lease", job(2s, {"redis"}), "Redis/Lease", pglease::cli::emit_redis_url,
	                       url("redis", {redis_.get()})});
}

TEST_F(AdviseEmit, redlock_program_compiles_runs_and_holds_the_lease_without_a_token)
{
	require_redis();
	check_emitted_program({"redlock", job(2s, {"redis"}, true), "Redis/Redlock",
	                       pglease::cli::emit_redlock_url,
	                       url("redlock", {redlock_[0].get(), redlock_[1].get(), redlock_[2].get()})});
}

TEST_F(AdviseEmit, etcd_program_compiles_runs_and_holds_the_lease)
{
	require_etcd();
	check_emitted_program({"etcd_lease", job(2s, {"etcd"}), "etcd/Lease", pglease::cli::emit_etcd_url,
	                       url("etcd", {etcd_.get()})});
}

TEST_F(AdviseEmit, zookeeper_program_compiles_runs_and_holds_the_lease)
{
	require_zookeeper();
	check_emitted_program({"zookeeper_ephemeral", job(2s, {"zookeeper"}), "ZooKeeper/Ephemeral",
	                       pglease::cli::emit_zookeeper_url, url("zookeeper", {zookeeper_.get()})});
}

// --one-active: the election program on every provider that has elections
TEST_F(AdviseEmit, postgres_election_program_compiles_runs_and_leads)
{
	require_postgres();
	check_emitted_program({"postgres_election", job(2s, {"postgres", "redis"}, false, true),
	                       "PostgreSQL/Election", pglease::cli::emit_postgres_url, ""});
}

TEST_F(AdviseEmit, redis_election_program_compiles_runs_and_leads)
{
	require_redis();
	check_emitted_program({"redis_election", job(2s, {"redis"}, false, true), "Redis/Election",
	                       pglease::cli::emit_redis_url, url("redis", {redis_.get()})});
}

TEST_F(AdviseEmit, etcd_election_program_compiles_runs_and_leads)
{
	require_etcd();
	check_emitted_program({"etcd_election", job(2s, {"etcd"}, false, true), "etcd/Election",
	                       pglease::cli::emit_etcd_url, url("etcd", {etcd_.get()})});
}

TEST_F(AdviseEmit, zookeeper_election_program_compiles_runs_and_leads)
{
	require_zookeeper();
	check_emitted_program({"zookeeper_election", job(2s, {"zookeeper"}, false, true), "ZooKeeper/Election",
	                       pglease::cli::emit_zookeeper_url, url("zookeeper", {zookeeper_.get()})});
}

} // namespace
