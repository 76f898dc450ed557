// conformance.hpp -- what the conformance suites share (conformance_test.cpp
// for locks, election_conformance_test.cpp for elections,
// sharing_conformance_test.cpp for shared leases and semaphores): the providers
// named in PGLEASE_CONFORMANCE, their documented capabilities, and the
// fixture that connects to one and can stop, start and break its server;
// Worker, a helper process of the suite to kill and freeze.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "memory/space.hpp"
#include "pglease/pglease.hpp"

namespace conformance {

struct Provider {
	std::string name;
	std::string url;
	std::string stop_cmd; // empty: no server (memory)
	std::string start_cmd;
	std::string break_cmd; // {resource} is replaced
};

inline std::ostream &
operator<<(std::ostream &os, const Provider &p)
{
	return os << p.name;
}

inline std::vector<std::string>
split(const std::string &s, char sep)
{
	std::vector<std::string> out;
	std::string item;
	std::istringstream in(s);
	while (std::getline(in, item, sep))
		out.push_back(item);
	return out;
}

// Entries of PGLEASE_CONFORMANCE that are not name|url|stop|start|break
// (reported by ConformanceSetup, never dropped silently).
inline std::vector<std::string> malformed_entries;

inline std::vector<Provider>
providers_from_env()
{
	std::vector<Provider> out;
	malformed_entries.clear();
	out.push_back({"memory", "memory:conformance", "", "", ""});
	if (const char *env = std::getenv("PGLEASE_CONFORMANCE")) {
		for (const std::string &entry : split(env, ';')) {
			auto f = split(entry, '|');
			if (f.size() == 5)
				out.push_back({f[0], f[1], f[2], f[3], f[4]});
			else
				malformed_entries.push_back(entry);
		}
	}
	return out;
}

inline int
shell(const std::string &cmd)
{
	return std::system(cmd.c_str());
}

inline std::string
unique_resource()
{
	const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
	static std::atomic<int> n{0};
	std::string name = info->name();
	for (char &c : name)
		if (c == '/')
			c = '-';
	return "conf/" + name + "/" + std::to_string(n++) + "/" + std::to_string(::getpid());
}

// The capabilities each provider documents (docs/providers.md "What each one gives").
inline pglease::Capabilities
documented(const std::string &name)
{
	pglease::Capabilities c;
	if (name == "postgres") {
		c.distributed = c.fencing_token = c.fenced_write = c.fifo_wait = c.ephemeral = c.durable =
		    c.survives_failover = c.election = c.shared_mode = c.semaphore = true;
	} else if (name == "memory") {
		c.fencing_token = c.fifo_wait = c.election = c.shared_mode = c.semaphore = true;
	} else if (name == "redis" || name == "rediss") { // rediss: the same provider over TLS
		c.distributed = c.fencing_token = c.election = c.shared_mode = c.semaphore = true;
	} else if (name == "redlock") {
		c.distributed = c.survives_failover = true;
	} else if (name == "etcd" || name == "zookeeper") {
		c.distributed = c.fencing_token = c.fifo_wait = c.ephemeral = c.durable = c.survives_failover =
		    c.election = true;
		if (name == "etcd")
			c.shared_mode = c.semaphore = true;
	}
	if (name == "zookeeper")
		c.shared_mode = c.semaphore = true;
	// a label that takes back its own grant (LeaseOptions::reclaim)
	c.reclaim = name == "postgres" || name == "memory" || name == "redis" || name == "rediss";
	return c;
}

class Conformance : public ::testing::TestWithParam<Provider> {
protected:
	void SetUp() override
	{
		auto r = pglease::connect(GetParam().url);
		ASSERT_TRUE(r) << GetParam().url << ": " << r.error();
		locker = std::move(*r);
	}
	void TearDown() override
	{
		// a test that stopped the server must leave it running
		if (stopped)
			shell(GetParam().start_cmd);
	}
	bool has_server() const { return !GetParam().stop_cmd.empty(); }
	void stop_server()
	{
		stopped = true;
		ASSERT_EQ(shell(GetParam().stop_cmd), 0) << GetParam().stop_cmd;
	}
	void start_server()
	{
		ASSERT_EQ(shell(GetParam().start_cmd), 0) << GetParam().start_cmd;
		stopped = false;
	}
	// break_grant -- make the grant of resource disappear server-side
	void break_grant(const std::string &resource)
	{
		if (!has_server()) {
			auto space = pglease::detail::memory::lock_space(GetParam().url.substr(7));
			ASSERT_TRUE(space->break_grant(resource));
			return;
		}
		std::string cmd = GetParam().break_cmd;
		ASSERT_NE(cmd.find("{resource}"), std::string::npos) << cmd;
		for (auto at = cmd.find("{resource}"); at != std::string::npos; at = cmd.find("{resource}", at))
			cmd.replace(at, 10, resource);
		ASSERT_EQ(shell(cmd), 0) << cmd;
	}
	bool tokens() const { return locker->capabilities().fencing_token; }
	// how long after a TTL's end a provider may take to end the grant
	// (etcd rounds a lease up to whole seconds and reaps every 500 ms;
	// ZooKeeper's session expiry runs on its tick)
	std::chrono::milliseconds expiry_slack() const { return std::chrono::milliseconds{2500}; }
	// psql -c SQL on the provider's database (PostgreSQL only): its exit status
	int psql(const std::string &sql) const
	{
		return shell("psql -X -q -v ON_ERROR_STOP=1 -d '" + GetParam().url + "' -c \"" + sql + "\" >/dev/null 2>&1");
	}

	std::unique_ptr<pglease::Locker> locker;
	bool stopped = false;
};

// Worker -- a helper process (the executable named by the environment
// variable ENV, which tests/providers/conformance.sh sets) run with ARGS,
// its stdout read line by line; the cases that kill (SIGKILL) or freeze
// (SIGSTOP) a holder run it so.  Resumed and killed when destroyed.
class Worker {
public:
	Worker(const char *env, const std::vector<std::string> &args)
	{
		const char *path = std::getenv(env);
		if (!path) {
			ADD_FAILURE() << env << " is not set: run the suite with "
			                        "`ctest --test-dir build/client -R '^conformance$'`";
			return;
		}
		std::vector<char *> argv{const_cast<char *>(path)};
		for (const auto &a : args)
			argv.push_back(const_cast<char *>(a.c_str()));
		argv.push_back(nullptr);
		int fds[2];
		if (pipe(fds) != 0) {
			ADD_FAILURE() << "pipe failed";
			return;
		}
		pid_ = fork();
		if (pid_ == 0) {
			dup2(fds[1], 1);
			close(fds[0]);
			close(fds[1]);
			execv(path, argv.data());
			_exit(127);
		}
		close(fds[1]);
		out_ = fdopen(fds[0], "r");
	}
	Worker(const Worker &) = delete;
	Worker &operator=(const Worker &) = delete;
	~Worker()
	{
		if (pid_ > 0) {
			kill(pid_, SIGCONT);
			kill(pid_, SIGKILL);
			waitpid(pid_, nullptr, 0);
		}
		if (out_)
			std::fclose(out_);
	}
	// the next line of its output, without the newline; "" at EOF
	std::string line()
	{
		char buf[256];
		if (!out_ || !std::fgets(buf, sizeof buf, out_))
			return "";
		std::string s{buf};
		if (!s.empty() && s.back() == '\n')
			s.pop_back();
		return s;
	}
	void signal(int sig) { ASSERT_EQ(kill(pid_, sig), 0); }
	void reap()
	{
		waitpid(pid_, nullptr, 0);
		pid_ = -1;
	}

private:
	pid_t pid_ = -1;
	std::FILE *out_ = nullptr;
};

} // namespace conformance
