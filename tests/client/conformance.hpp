// conformance.hpp -- what the conformance suites share (conformance_test.cpp
// for locks, election_conformance_test.cpp for elections): the providers
// named in PGLEASE_CONFORMANCE, their documented capabilities, and the
// fixture that connects to one and can stop, start and break its server.
#pragma once

#include <unistd.h>

#include <atomic>
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

	std::unique_ptr<pglease::Locker> locker;
	bool stopped = false;
};

} // namespace conformance
