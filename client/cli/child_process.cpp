// child_process.cpp -- spawn and supervise the command of `pglease run` and
// `pglease elect` (see child_process.hpp).
#include "child_process.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <string_view>
#include <thread>

extern char **environ;

namespace pglease::cli {

namespace {

using namespace std::chrono_literals;

// The child signals are passed on to: a signal handler can reach nothing else.
std::atomic<pid_t> g_child{0};
// Whether pglease itself was sent one of those signals.
std::atomic<bool> g_signalled{false};

void
forward_signal(int sig)
{
	g_signalled = true;
	pid_t child = g_child.load();
	if (child > 0)
		kill(child, sig);
}

void
forward_signals_to(pid_t child)
{
	g_child = child;
	struct sigaction sa {};
	sa.sa_handler = forward_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, nullptr);
	sigaction(SIGINT, &sa, nullptr);
	sigaction(SIGHUP, &sa, nullptr);
}

} // namespace

int
spawn_command(const std::vector<std::string> &command, const Environment &env, pid_t &child)
{
	// Everything the child needs is built here: the renewal thread is
	// running, so setenv, or any allocation between fork and exec, would be
	// undefined.  posix_spawnp takes the environment explicitly.
	std::vector<std::string> env_strings;
	for (const auto &[name, value] : env)
		env_strings.push_back(name + "=" + value);
	for (char **e = environ; *e; e++) {
		const std::string_view entry{*e};
		const bool replaced = std::any_of(env.begin(), env.end(), [&](const auto &var) {
			return entry.size() > var.first.size() && entry.compare(0, var.first.size(), var.first) == 0 &&
			       entry[var.first.size()] == '=';
		});
		if (!replaced)
			env_strings.emplace_back(entry);
	}
	std::vector<char *> envp;
	for (auto &e : env_strings)
		envp.push_back(e.data());
	envp.push_back(nullptr);
	std::vector<std::string> arg_strings = command;
	std::vector<char *> argv;
	for (auto &a : arg_strings)
		argv.push_back(a.data());
	argv.push_back(nullptr);
	return posix_spawnp(&child, argv[0], nullptr, nullptr, argv.data(), envp.data());
}

ChildEnd
supervise(pid_t child, const pglease::Lease &lease, const pglease::CancelToken &cancelled,
          std::chrono::milliseconds grace)
{
	forward_signals_to(child);
	ChildEnd end;
	std::optional<std::chrono::steady_clock::time_point> kill_at;
	for (;;) {
		pid_t done = waitpid(child, &end.status, WNOHANG);
		if (done == child)
			break;
		if (done < 0 && errno != EINTR) {
			std::cerr << "pglease: waitpid: " << std::strerror(errno) << "\n";
			end.wait_failed = true;
			return end;
		}
		// valid() also turns false at the local deadline, before any callback
		if ((cancelled.cancelled() || !lease.valid()) && !kill_at) {
			end.lost = true;
			kill(child, SIGTERM);
			kill_at = std::chrono::steady_clock::now() + grace;
		}
		if (kill_at && std::chrono::steady_clock::now() >= *kill_at) {
			kill(child, SIGKILL);
			kill_at = std::chrono::steady_clock::time_point::max();
		}
		std::this_thread::sleep_for(20ms);
	}
	g_child = 0;
	return end;
}

bool
signalled() noexcept
{
	return g_signalled.load();
}

void
default_signals() noexcept
{
	g_child = 0;
	struct sigaction sa {};
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, nullptr);
	sigaction(SIGINT, &sa, nullptr);
	sigaction(SIGHUP, &sa, nullptr);
}

} // namespace pglease::cli
