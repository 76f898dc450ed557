// support.hpp -- what the client test binaries share: lease options, resource
// names, waiting for a condition, shell commands, loopback ports drawn free
// (free_port, free_ports: the rule of scripts/lib/ports.sh), and servers
// started by the project's own scripts (scripts/<server>.sh) on such ports in
// temporary directories (ScriptServer, ScriptCluster: a bind race is retried
// on new ports).  Header-only; every test binary compiles it with
// PGLEASE_SOURCE_DIR set.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
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

// ---- ports: the rule of scripts/lib/ports.sh ----------------------------------
// No server of a test listens on a fixed port: each asks free_ports for ports
// that are free when it starts.  They are drawn at random above
// PGLEASE_PORT_FLOOR (default 10000) and below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), where no outgoing connection is ever given
// one as its local port, and kept only if a listening socket can be bound to
// 127.0.0.1:PORT.  Another process may still bind one between the check and
// the server's own bind (a bind race): ScriptCluster::start draws again then.

// PortRange -- the ports free_ports draws from, both ends included
struct PortRange {
	int low;
	int high;
};

inline PortRange
port_range()
{
	int floor = 10000;
	if (const char *set = std::getenv("PGLEASE_PORT_FLOOR"); set != nullptr && *set != '\0')
		floor = std::atoi(set);
	int ephemeral_low = 32768;
	std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
	if (int low = 0; range >> low)
		ephemeral_low = low;
	if (ephemeral_low <= floor + 1000)
		floor = 1024;
	return {floor, ephemeral_low - 1};
}

// port_is_free -- a listening socket can be bound to 127.0.0.1:PORT now
inline bool
port_is_free(int port)
{
	const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	int on = 1;
	(void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
	sockaddr_in address{};
	address.sin_family = AF_INET;
	address.sin_port = htons(static_cast<std::uint16_t>(port));
	address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	const bool bound =
	    ::bind(fd, reinterpret_cast<const sockaddr *>(&address), sizeof address) == 0 && ::listen(fd, 1) == 0;
	::close(fd);
	return bound;
}

// free_ports -- N distinct ports free now, none handed out before in this
// process (so a "dead" port drawn for a URL is never given to a server
// later).  OFFSETS: the ports a server binds, relative to the one it is
// given (etcd.sh: {0, 1}, its peer port; a zookeeper.sh ensemble member:
// {0, 100, 200}, its quorum and election ports): each port + offset is
// checked free and none is shared.  Throws std::runtime_error when 100
// draws per port found none.
inline std::vector<int>
free_ports(std::size_t n, const std::vector<int> &offsets = {0})
{
	static std::mutex mutex;
	static std::set<int> handed_out;
	static std::mt19937 random{std::random_device{}()};
	std::lock_guard<std::mutex> lock(mutex);
	const PortRange range = port_range();
	const int reach = offsets.empty() ? 0 : *std::max_element(offsets.begin(), offsets.end());
	std::uniform_int_distribution<int> draw(range.low, range.high - reach);
	std::vector<int> picked;
	for (std::size_t tries = 0; picked.size() < n; tries++) {
		if (tries >= 100 * n)
			throw std::runtime_error("free_ports: no free port in " + std::to_string(range.low) + "-" +
			                         std::to_string(range.high) + " after " + std::to_string(tries) +
			                         " tries");
		const int port = draw(random);
		bool usable = true;
		for (int offset : offsets)
			usable = usable && handed_out.count(port + offset) == 0 && port_is_free(port + offset);
		if (!usable)
			continue;
		picked.push_back(port);
		for (int offset : offsets)
			handed_out.insert(port + offset);
	}
	return picked;
}

inline int
free_port()
{
	return free_ports(1).front();
}

// ---- servers started by scripts/<server>.sh ---------------------------------

// Ran -- what a shell command did: its exit status (-1: it did not exit)
// and its output, stdout and stderr together
struct Ran {
	int status = -1;
	std::string output;
	bool ok() const { return status == 0; }
};

inline Ran
run_command(const std::string &line)
{
	Ran ran;
	if (FILE *p = ::popen(("{ " + line + "\n} 2>&1").c_str(), "r")) {
		char buf[4096];
		size_t n;
		while ((n = fread(buf, 1, sizeof buf, p)) > 0)
			ran.output.append(buf, n);
		const int status = ::pclose(p);
		ran.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	}
	return ran;
}

// CertDir -- the throwaway TLS material of a test binary (scripts/certs.sh:
// a CA, server and client certificates, another CA, an expired and a
// wrong-host certificate), made once by certs() and removed when the binary
// exits; an empty path when certs.sh failed (the tests then fail on the
// missing files, saying which)
struct CertDir {
	std::string path;
	CertDir()
	{
		char tmpl[] = "/tmp/pglease-test-certs.XXXXXX";
		const char *made = ::mkdtemp(tmpl);
		if (made != nullptr && run_command(source_path("scripts/certs.sh") + " '" + made + "'").ok())
			path = made;
		else if (made != nullptr)
			std::filesystem::remove_all(made);
	}
	~CertDir()
	{
		std::error_code ignored;
		if (!path.empty())
			std::filesystem::remove_all(path, ignored);
	}
	CertDir(const CertDir &) = delete;
	CertDir &operator=(const CertDir &) = delete;
};

inline const std::string &
certs()
{
	static const CertDir dir;
	return dir.path;
}

// cert -- one file of certs(): "ca.crt", "client.key", ...
inline std::string
cert(const std::string &name)
{
	return certs() + "/" + name;
}

// LogMarks -- how long each *.log file of a server's directory is: what a
// start writes comes after
using LogMarks = std::map<std::string, std::uintmax_t>;

inline LogMarks
log_marks(const std::string &dir)
{
	LogMarks marks;
	std::error_code ec;
	for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
		if (it->path().extension() == ".log")
			marks[it->path().string()] = std::filesystem::file_size(it->path(), ec);
	return marks;
}

// logged_since -- what the *.log files of DIR got after MARKS
inline std::string
logged_since(const std::string &dir, const LogMarks &marks)
{
	std::string text;
	for (const auto &[path, size] : log_marks(dir)) {
		const auto was = marks.find(path);
		const std::uintmax_t from = was == marks.end() || was->second > size ? 0 : was->second;
		std::ifstream log(path, std::ios::binary);
		log.seekg(static_cast<std::streamoff>(from));
		text.append(std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>());
	}
	return text;
}

// says_port_taken -- TEXT tells of a bind that failed on a port in use
// (redis-server, etcd and Java say "Address already in use"; the scripts'
// own check, claim in scripts/lib/common.sh, "port P is in use already")
inline bool
says_port_taken(std::string text)
{
	for (char &c : text)
		c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
	return text.find("already in use") != std::string::npos ||
	       text.find("in use already") != std::string::npos;
}

// last_lines -- the last N lines of TEXT, each ending in a newline
inline std::string
last_lines(const std::string &text, std::size_t n)
{
	std::vector<std::string> lines;
	std::istringstream in(text);
	for (std::string line; std::getline(in, line);)
		lines.push_back(line);
	std::string tail;
	for (std::size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); i++)
		tail += lines[i] + "\n";
	return tail;
}

inline std::string
joined(const std::vector<int> &ports)
{
	std::string out;
	for (int p : ports)
		out += (out.empty() ? "" : ",") + std::to_string(p);
	return out;
}

// ScriptCluster -- servers of one kind driven by scripts/SCRIPT (start DIR
// PORT ARGS..., stop DIR, kill DIR and its other verbs), each in a directory
// under one fresh temporary directory; every one is killed and the
// directory removed when the object goes.  MEMBERS servers, their ports
// drawn together by free_ports with OFFSETS; ARGS_OF gives a member's start
// arguments after its port, from every member's port (a cluster's spec).
class ScriptCluster {
public:
	using ArgsOf = std::function<std::string(std::size_t member, const std::vector<int> &ports)>;
	// Draw -- where start takes its ports from: free_ports, unless a test of
	// this helper hands out a port it holds (to show a bind race is retried)
	using Draw = std::function<std::vector<int>(std::size_t n, const std::vector<int> &offsets)>;
	static constexpr int start_attempts = 3;

	ScriptCluster(const std::string &script, std::size_t members, std::vector<int> offsets, ArgsOf args_of)
	    : script_(source_path("scripts/" + script)), offsets_(std::move(offsets)),
	      args_of_(std::move(args_of))
	{
		char tmpl[] = "/tmp/pglease-test.XXXXXX";
		if (const char *made = ::mkdtemp(tmpl))
			root_ = made;
		for (std::size_t i = 0; i < members; i++)
			dirs_.push_back(root_ + "/server" + std::to_string(i + 1));
	}
	~ScriptCluster()
	{
		kill_all();
		std::error_code ignored;
		if (!root_.empty())
			std::filesystem::remove_all(root_, ignored);
	}
	ScriptCluster(const ScriptCluster &) = delete;
	ScriptCluster &operator=(const ScriptCluster &) = delete;

	// start -- the first start of every member, all at once (each in a thread:
	// a member's start may wait for its quorum), then READY asked every 100 ms
	// for up to LIMIT.  A start script that failed (most likely a bind race)
	// or a log that says an address is in use kills them all and starts them
	// again on ports drawn anew, up to start_attempts times; READY not true
	// by LIMIT with no such log is not retried.  A failure says what each
	// attempt's scripts and logs said.
	::testing::AssertionResult start(const std::function<bool()> &ready = nullptr, milliseconds limit = 20s)
	{
		if (root_.empty())
			return ::testing::AssertionFailure() << "no temporary directory under /tmp";
		std::string whys;
		for (int attempt = 1; attempt <= start_attempts; attempt++) {
			try {
				ports_ = draw_(dirs_.size(), offsets_);
			} catch (const std::exception &e) {
				return ::testing::AssertionFailure() << e.what();
			}
			const Try t = start_all(ready, limit);
			if (t.ok)
				return ::testing::AssertionSuccess();
			whys += "attempt " + std::to_string(attempt) + " on port(s) " + joined(ports_) + ":\n" + t.why;
			ports_.clear();
			kill_all();
			for (const auto &d : dirs_) {
				std::error_code ignored;
				std::filesystem::remove_all(d, ignored);
			}
			if (!t.retry)
				break;
		}
		return ::testing::AssertionFailure()
		       << script_ << " could not start " << dirs_.size() << " server(s):\n"
		       << whys;
	}

	// restart -- member I again, on its own port, after a stop or a kill; a
	// port taken meanwhile is tried again for a second, then fails saying so
	::testing::AssertionResult restart(std::size_t i)
	{
		if (ports_.empty())
			return ::testing::AssertionFailure() << script_ << ": restart before a start";
		for (int attempt = 1;; attempt++) {
			const Try t = start_one(i, log_marks(dirs_[i]));
			if (t.ok)
				return ::testing::AssertionSuccess();
			if (!t.port_taken || attempt == start_attempts)
				return ::testing::AssertionFailure()
				       << (t.port_taken ? "port " + std::to_string(ports_[i]) +
				                              " of this server was taken by another process while it was "
				                              "down (the test needs it back on the same port):\n"
				                        : std::string())
				       << t.why;
			(void)run(i, "kill");
			std::this_thread::sleep_for(500ms);
		}
	}

	::testing::AssertionResult stop(std::size_t i) const { return verb(i, "stop"); }
	::testing::AssertionResult kill(std::size_t i) const { return verb(i, "kill"); }

	// run -- scripts/SCRIPT VERB 'DIR' ARGS for member I
	Ran run(std::size_t i, const std::string &verb, const std::string &args = "") const
	{
		return run_command(script_ + " " + verb + " '" + dirs_[i] + "' " + args);
	}

	// pid -- member I's pid, from the pidfile its script keeps; 0 if none
	pid_t pid(std::size_t i) const
	{
		std::error_code ec;
		for (std::filesystem::directory_iterator it(dirs_[i], ec), end; !ec && it != end; it.increment(ec)) {
			long long pid = 0;
			if (it->path().extension() == ".pid" && std::ifstream(it->path()) >> pid)
				return static_cast<pid_t>(pid);
		}
		return 0;
	}

	void draw_ports_with(Draw draw) { draw_ = std::move(draw); }
	bool started() const { return !ports_.empty(); }
	std::size_t size() const { return dirs_.size(); }
	// port -- member I's port; 0 before a start that worked
	int port(std::size_t i) const { return ports_.empty() ? 0 : ports_.at(i); }
	const std::vector<int> &ports() const { return ports_; }
	const std::string &dir(std::size_t i) const { return dirs_.at(i); }

private:
	// Try -- how a start went: retry when a new port may help
	struct Try {
		bool ok = true;
		bool port_taken = false;
		bool retry = false;
		std::string why;
	};

	::testing::AssertionResult verb(std::size_t i, const std::string &what) const
	{
		const Ran ran = run(i, what);
		if (ran.ok())
			return ::testing::AssertionSuccess();
		return ::testing::AssertionFailure()
		       << script_ << " " << what << " '" << dirs_[i] << "' (exit " << ran.status << "):\n"
		       << ran.output;
	}

	void kill_all() const
	{
		for (std::size_t i = 0; i < dirs_.size(); i++)
			(void)run(i, "kill");
	}

	// start_one -- member I's start script on its port; what its logs got after MARKS
	Try start_one(std::size_t i, const LogMarks &marks) const
	{
		const std::string args = std::to_string(ports_[i]) + " " + args_of_(i, ports_);
		const Ran ran = run(i, "start", args);
		const std::string logged = logged_since(dirs_[i], marks);
		Try t;
		t.port_taken = says_port_taken(ran.output) || says_port_taken(logged);
		t.ok = ran.ok() && !t.port_taken;
		t.retry = !t.ok;
		if (!t.ok)
			t.why = "$ " + script_ + " start '" + dirs_[i] + "' " + args + "   (exit " +
			        std::to_string(ran.status) + ")\n" + ran.output + last_lines(logged, 20);
		return t;
	}

	// start_all -- every member's start at once; the first that fails kills
	// the others (ending their wait for a quorum); then READY
	Try start_all(const std::function<bool()> &ready, milliseconds limit) const
	{
		std::vector<std::future<Try>> starting;
		for (std::size_t i = 0; i < dirs_.size(); i++)
			starting.push_back(std::async(std::launch::async, [this, i] { return start_one(i, {}); }));
		Try all;
		for (std::size_t left = starting.size(); left > 0;) {
			for (auto &f : starting) {
				if (!f.valid() || f.wait_for(20ms) != std::future_status::ready)
					continue;
				const Try t = f.get();
				left--;
				if (t.ok)
					continue;
				if (all.ok)
					kill_all();
				all.ok = false;
				all.retry = true;
				all.port_taken = all.port_taken || t.port_taken;
				all.why += t.why;
			}
		}
		return all.ok && ready ? await(ready, limit) : all;
	}

	// await -- READY within LIMIT; a log that tells of a port in use is a
	// bind race (retried), a timeout without one is not
	Try await(const std::function<bool()> &ready, milliseconds limit) const
	{
		const auto end = Clock::now() + limit;
		Try t;
		while (!ready()) {
			std::string logs;
			for (const auto &d : dirs_)
				logs += "--- " + d + ":\n" + last_lines(logged_since(d, {}), 20);
			t.port_taken = says_port_taken(logs);
			if (t.port_taken || Clock::now() >= end) {
				t.ok = false;
				t.retry = t.port_taken;
				t.why = (t.port_taken ? std::string("a server's log says its port is in use:\n")
				                      : "not ready within " + std::to_string(limit.count()) + " ms:\n") +
				        logs;
				return t;
			}
			std::this_thread::sleep_for(100ms);
		}
		return t;
	}

	std::string script_;
	std::vector<int> offsets_;
	ArgsOf args_of_;
	std::string root_;
	std::vector<std::string> dirs_;
	std::vector<int> ports_;
	Draw draw_ = [](std::size_t n, const std::vector<int> &offsets) { return free_ports(n, offsets); };
};

// ScriptServer -- one server of a test (a ScriptCluster of one): START_ARGS
// after its port, OFFSETS as free_ports takes them
class ScriptServer {
public:
	explicit ScriptServer(const std::string &script, std::string start_args = "",
	                      std::vector<int> offsets = {0})
	    : server_(script, 1, std::move(offsets),
	              [args = std::move(start_args)](std::size_t, const std::vector<int> &) { return args; })
	{
	}
	// start -- the first time on a port drawn free (drawn again on a bind
	// race); after a stop or a kill, on the same port again
	::testing::AssertionResult start() { return server_.started() ? server_.restart(0) : server_.start(); }
	::testing::AssertionResult stop() { return server_.stop(0); }
	::testing::AssertionResult kill() { return server_.kill(0); }
	// restart -- stop, then start on the same port
	::testing::AssertionResult restart()
	{
		auto stopped = stop();
		return stopped ? start() : stopped;
	}
	Ran run(const std::string &verb, const std::string &args = "") const
	{
		return server_.run(0, verb, args);
	}
	pid_t pid() const { return server_.pid(0); }
	void draw_ports_with(ScriptCluster::Draw draw) { server_.draw_ports_with(std::move(draw)); }
	int port() const { return server_.port(0); }
	const std::string &dir() const { return server_.dir(0); }

private:
	ScriptCluster server_;
};
} // namespace test_support
