// support.hpp -- what the client test binaries share: lease options, resource
// names, waiting for a condition, shell commands, and servers started by the
// project's own scripts (scripts/<server>.sh) in temporary directories.
// Header-only; every test binary compiles it with PGLEASE_SOURCE_DIR set.
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "pglease/pglease.hpp"

namespace test_support {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using namespace std::chrono_literals;

// source_path -- a file of the checkout
inline std::string
source_path(const std::string &rel)
{
	return std::string(PGLEASE_SOURCE_DIR) + "/" + rel;
}

// sh -- run a shell command line; true when it exits 0
inline bool
sh(const std::string &line)
{
	return std::system(line.c_str()) == 0;
}

// capture -- a shell command's stdout
inline std::string
capture(const std::string &cmd)
{
	std::string out;
	if (FILE *p = ::popen(cmd.c_str(), "r")) {
		char buf[4096];
		size_t n;
		while ((n = fread(buf, 1, sizeof buf, p)) > 0)
			out.append(buf, n);
		::pclose(p);
	}
	return out;
}

inline pglease::LeaseOptions
opts(milliseconds ttl, milliseconds wait = 0ms)
{
	pglease::LeaseOptions o;
	o.ttl = ttl;
	o.wait = wait;
	return o;
}

// quick_backoff -- client options for tests that stop servers: fail and retry fast
inline pglease::ClientOptions
quick_backoff()
{
	pglease::ClientOptions o;
	o.connect_timeout = 500ms;
	o.backoff_initial = 50ms;
	o.backoff_max = 300ms;
	return o;
}

inline std::string
current_test_name()
{
	return ::testing::UnitTest::GetInstance()->current_test_info()->name();
}

// test_resource -- PREFIX + the running test's name (the same on every call)
inline std::string
test_resource(const std::string &prefix)
{
	return prefix + current_test_name();
}

// unique_resource -- a name no other call, test or process uses
inline std::string
unique_resource(const std::string &prefix)
{
	static std::atomic<int> n{0};
	return prefix + current_test_name() + "/" + std::to_string(n++) + "/" + std::to_string(::getpid());
}

// in_other_thread -- the no-nested rule is per thread: contenders run apart
template <class F>
auto
in_other_thread(F &&fn)
{
	return std::async(std::launch::async, std::forward<F>(fn)).get();
}

// eventually -- PRED true within LIMIT (asked every STEP)
template <class Pred>
bool
eventually(Pred pred, milliseconds limit, milliseconds step = 10ms)
{
	auto end = Clock::now() + limit;
	while (Clock::now() < end) {
		if (pred())
			return true;
		std::this_thread::sleep_for(step);
	}
	return pred();
}

inline long long
ms_since(Clock::time_point t)
{
	return std::chrono::duration_cast<milliseconds>(Clock::now() - t).count();
}

// ServerDirs -- servers of one kind, each in a directory under one fresh
// temporary directory, driven by scripts/SCRIPT (start DIR PORT ..., stop
// DIR, kill DIR, ...); every server it named is killed and the directory
// removed when the object goes.
class ServerDirs {
public:
	explicit ServerDirs(std::string script) : script_(source_path("scripts/" + std::move(script)))
	{
		char tmpl[] = "/tmp/pglease-test.XXXXXX";
		if (const char *made = ::mkdtemp(tmpl))
			root_ = made;
	}
	~ServerDirs()
	{
		for (const auto &d : dirs_)
			sh(script_ + " kill '" + d + "' >/dev/null 2>&1");
		std::error_code ignored;
		if (!root_.empty())
			std::filesystem::remove_all(root_, ignored);
	}
	ServerDirs(const ServerDirs &) = delete;
	ServerDirs &operator=(const ServerDirs &) = delete;

	bool ok() const { return !root_.empty(); }
	// dir -- a server's directory (killed at the end)
	std::string dir(const std::string &name)
	{
		dirs_.push_back(root_ + "/" + name);
		return dirs_.back();
	}
	// run -- scripts/SCRIPT VERB 'DIR' ARGS, quietly; true when it exits 0
	bool run(const std::string &verb, const std::string &dir, const std::string &args = "") const
	{
		return ok() && sh(script_ + " " + verb + " '" + dir + "' " + args + " >/dev/null");
	}
	const std::string &script() const { return script_; }

private:
	std::string script_;
	std::string root_;
	std::vector<std::string> dirs_;
};

// ScriptServer -- one server of a test, in a ServerDirs of its own
class ScriptServer {
public:
	ScriptServer(const std::string &script, int port, std::string start_args = "")
	    : dirs_(script), dir_(dirs_.dir("server")), port_(port), start_args_(std::move(start_args))
	{
	}
	bool start() { return dirs_.run("start", dir_, std::to_string(port_) + " " + start_args_); }
	bool stop() { return dirs_.run("stop", dir_); }
	bool kill() { return dirs_.run("kill", dir_); }
	int port() const { return port_; }

private:
	ServerDirs dirs_;
	std::string dir_;
	int port_;
	std::string start_args_;
};

} // namespace test_support
