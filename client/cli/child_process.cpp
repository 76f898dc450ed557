// child_process.cpp -- spawn and supervise the command of `pglease run` and
// `pglease elect` (see child_process.hpp).
#include "child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string_view>
#include <thread>

#include "dsn.hpp"

extern char **environ;

namespace pglease::cli {

namespace {

using namespace std::chrono_literals;

// The command's process group, which signals are passed on to: a signal
// handler can reach nothing else.  Set only while its watcher, the group's
// leader, is not yet reaped, so the number cannot name another group.
std::atomic<pid_t> g_group{0};
// Whether pglease itself was sent SIGTERM, SIGINT or SIGHUP.
std::atomic<bool> g_signalled{false};

void
forward_signal(int sig)
{
	const int saved = errno;
	g_signalled = true;
	if (pid_t group = g_group.load(); group > 0)
		kill(-group, sig);
	errno = saved;
}

// Set by stop_with_command while it stops the command: the stop supervise
// then sees is its own doing, not one to pass on to pglease.
std::atomic<bool> g_stopping{false};
// Set when pglease is continued (SIGCONT): supervise continues the command,
// after giving it the terminal if it is to have it.
std::atomic<bool> g_continued{false};

// SIGTSTP: ^Z at the terminal reaches pglease's process group, no longer the
// command's, so stop the command, then pglease, as the terminal would have
// stopped both
void
stop_with_command(int)
{
	const int saved = errno;
	if (pid_t group = g_group.load(); group > 0) {
		g_stopping = true;
		kill(-group, SIGTSTP);
	}
	kill(getpid(), SIGSTOP);
	errno = saved;
}

void
note_continued(int)
{
	g_continued = true;
}

void
handle(int sig, void (*handler)(int))
{
	struct sigaction sa {};
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, nullptr);
}

// wait_reaped -- waitpid for pid, through EINTR
pid_t
wait_reaped(pid_t pid, int *status, int options)
{
	pid_t done;
	do
		done = waitpid(pid, status, options);
	while (done < 0 && errno == EINTR);
	return done;
}

// ---- in the forked processes: async-signal-safe calls only (pglease has threads,
// and a fork keeps only the thread that called it)

// watch -- the watcher: lead the command's group, wait until pglease's end
// of the pipe is closed (pglease gone, however it died), then SIGKILL the
// group, this process included
[[noreturn]] void
watch(int read_fd)
{
	(void)setpgid(0, 0); // pglease does it too: whichever runs first
	// the signals pglease passes on to the group are the command's, and ^Z
	// must not stop the watcher: stopped, it could not act on pglease's death
	for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE, SIGUSR1, SIGUSR2})
		signal(sig, SIG_IGN);
	// no copy of pglease's connections, terminal or output pipes outlives it here
	if (read_fd > 0)
		(void)close_range(0, static_cast<unsigned>(read_fd) - 1, 0);
	(void)close_range(static_cast<unsigned>(read_fd) + 1, UINT_MAX, 0);
	char byte;
	for (;;) {
		const ssize_t n = read(read_fd, &byte, 1);
		if (n == 0 || (n < 0 && errno != EINTR))
			break;
	}
	kill(0, SIGKILL);
	_exit(0);
}

// exec_command -- the command's process: join the watcher's group, die with
// pglease, exec the first of paths that runs; on failure its errno on
// report_fd and exit 127
[[noreturn]] void
exec_command(pid_t parent, pid_t group, const std::vector<char *> &paths, char *const argv[],
             char *const envp[], int report_fd)
{
	int error = 0;
	if (setpgid(0, group) != 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
		error = errno;
	} else if (getppid() != parent) {
		// pglease died before the prctl: nothing would end this process with it
		_exit(127);
	} else {
		// execvp's search: a path it cannot read or execute is passed over,
		// one that does not exist too; another failure ends the search
		error = ENOENT;
		for (char *path : paths) {
			execve(path, argv, envp);
			if (errno == EACCES)
				error = EACCES;
			else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE && errno != ENODEV &&
			         errno != ETIMEDOUT) {
				error = errno;
				break;
			}
		}
	}
	(void)!write(report_fd, &error, sizeof error);
	_exit(127);
}

// ---- in pglease

// candidates -- where execvp would look for name: itself if it has a '/',
// else each directory of PATH (default /bin:/usr/bin; an empty entry is the
// working directory)
std::vector<std::string>
candidates(const std::string &name)
{
	if (name.empty())
		return {};
	if (name.find('/') != std::string::npos)
		return {name};
	const char *path = std::getenv("PATH");
	const std::string dirs = path != nullptr ? path : "/bin:/usr/bin";
	std::vector<std::string> found;
	std::string::size_type from = 0;
	for (;;) {
		const auto colon = dirs.find(':', from);
		const std::string dir =
		    dirs.substr(from, colon == std::string::npos ? std::string::npos : colon - from);
		found.push_back((dir.empty() ? "." : dir) + "/" + name);
		if (colon == std::string::npos)
			return found;
		from = colon + 1;
	}
}

// The terminal: pglease's controlling terminal, opened for the foreground
// calls (-1: none).  The command's group is not the terminal's foreground
// group, so Ctrl-C and ^Z reach pglease (and its caller, a script) as before
// and pglease passes them on; only a command that reads (or, with tostop,
// writes) the terminal is stopped by it (SIGTTIN, SIGTTOU), and then gets
// the terminal while pglease is in the foreground.
int
open_terminal()
{
	return open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
}

// foreground -- whether group is the foreground process group of tty
bool
foreground(int tty, pid_t group)
{
	return tty >= 0 && tcgetpgrp(tty) == group;
}

// give_terminal -- make group the foreground of tty; SIGTTOU blocked, which
// tcsetpgrp would send pglease once it is no longer the foreground itself
void
give_terminal(int tty, pid_t group)
{
	sigset_t ttou, old;
	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	pthread_sigmask(SIG_BLOCK, &ttou, &old);
	(void)tcsetpgrp(tty, group);
	pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

// dismiss -- end the watcher without its killing the group: SIGKILL it and
// reap it before closing pglease's end of its pipe
void
dismiss(Spawned &spawned)
{
	if (spawned.watcher > 0) {
		kill(spawned.watcher, SIGKILL);
		(void)wait_reaped(spawned.watcher, nullptr, 0);
		spawned.watcher = 0;
	}
	if (spawned.watch_fd >= 0) {
		close(spawned.watch_fd);
		spawned.watch_fd = -1;
	}
}

// child_environment -- the command's environment: pglease's own, with env's
// variables set and the DSN's removed
std::vector<std::string>
child_environment(const Environment &env)
{
	std::vector<std::string> env_strings;
	for (const auto &[name, value] : env)
		env_strings.push_back(name + "=" + value);
	for (char **e = environ; *e; e++) {
		const std::string_view entry{*e};
		const auto named = [&](std::string_view name) {
			return entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
			       entry[name.size()] == '=';
		};
		const bool replaced =
		    std::any_of(env.begin(), env.end(), [&](const auto &var) { return named(var.first); });
		// the DSN pglease read holds the server's credentials, which are
		// pglease's: the command gets its token, not the means to end the
		// lease (or take another) as pglease
		if (!replaced && !named(dsn_variable))
			env_strings.emplace_back(entry);
	}
	return env_strings;
}

} // namespace

int
spawn_command(const std::vector<std::string> &command, const Environment &env, Spawned &spawned)
{
	// Everything the children need is built here: the renewal thread is
	// running, so any allocation (or setenv) between fork and exec would be
	// undefined.
	std::vector<std::string> env_strings = child_environment(env);
	std::vector<char *> envp;
	for (auto &e : env_strings)
		envp.push_back(e.data());
	envp.push_back(nullptr);
	std::vector<std::string> arg_strings = command;
	std::vector<char *> argv;
	for (auto &a : arg_strings)
		argv.push_back(a.data());
	argv.push_back(nullptr);
	std::vector<std::string> path_strings = candidates(command.at(0));
	std::vector<char *> paths;
	for (auto &p : path_strings)
		paths.push_back(p.data());

	spawned = Spawned{};
	// the watcher first: from the command's first instruction on, its group
	// has someone to end it with pglease
	int watch_pipe[2];
	if (pipe2(watch_pipe, O_CLOEXEC) != 0)
		return errno;
	const pid_t parent = getpid();
	const pid_t watcher = fork();
	if (watcher < 0) {
		const int error = errno;
		close(watch_pipe[0]);
		close(watch_pipe[1]);
		return error;
	}
	if (watcher == 0)
		watch(watch_pipe[0]);
	close(watch_pipe[0]);
	(void)setpgid(watcher, watcher);
	spawned.watcher = spawned.group = watcher;
	spawned.watch_fd = watch_pipe[1];

	// the exec's outcome: the report pipe closes on a successful exec (it is
	// close-on-exec), or carries the error number
	int report[2];
	if (pipe2(report, O_CLOEXEC) != 0) {
		const int error = errno;
		dismiss(spawned);
		return error;
	}
	const pid_t child = fork();
	if (child < 0) {
		const int error = errno;
		close(report[0]);
		close(report[1]);
		dismiss(spawned);
		return error;
	}
	if (child == 0)
		exec_command(parent, spawned.group, paths, argv.data(), envp.data(), report[1]);
	close(report[1]);
	(void)setpgid(child, spawned.group); // as the child does itself before its exec
	int error = 0;
	ssize_t n;
	do
		n = read(report[0], &error, sizeof error);
	while (n < 0 && errno == EINTR);
	close(report[0]);
	if (n == static_cast<ssize_t>(sizeof error) || n < 0) {
		(void)wait_reaped(child, nullptr, 0);
		dismiss(spawned);
		return n < 0 ? EIO : error;
	}
	spawned.child = child;
	return 0;
}

ChildEnd
supervise(Spawned &spawned, const pglease::Lease &lease, const pglease::CancelToken &cancelled,
          std::chrono::milliseconds grace)
{
	const pid_t group = spawned.group;
	const pid_t own_group = getpgrp();
	const int tty = open_terminal();
	bool wants_terminal = false; // the command was stopped for reading the terminal
	g_group = group;
	g_stopping = g_continued = false;
	handle(SIGTERM, forward_signal);
	handle(SIGINT, forward_signal);
	handle(SIGHUP, forward_signal);
	handle(SIGTSTP, stop_with_command);
	handle(SIGCONT, note_continued);
	ChildEnd end;
	std::optional<std::chrono::steady_clock::time_point> kill_at;
	for (;;) {
		const pid_t done = waitpid(spawned.child, &end.status, WNOHANG | WUNTRACED);
		if (done == spawned.child && WIFSTOPPED(end.status)) {
			// job control, passed on: the terminal goes to a command that
			// reads it while pglease has it; otherwise pglease stops too, so
			// its caller (the shell) sees the job stopped and can fg it
			const int sig = WSTOPSIG(end.status);
			const bool tty_stop = sig == SIGTTIN || sig == SIGTTOU;
			wants_terminal = wants_terminal || tty_stop;
			if (tty_stop && foreground(tty, own_group)) {
				give_terminal(tty, group);
				kill(-group, SIGCONT);
			} else if ((tty_stop || sig == SIGTSTP) && !g_stopping.exchange(false)) {
				if (foreground(tty, group))
					give_terminal(tty, own_group);
				kill(getpid(), SIGSTOP);
			}
			continue;
		}
		if (done == spawned.child)
			break;
		if (done < 0 && errno != EINTR) {
			std::cerr << "pglease: waitpid: " << std::strerror(errno) << "\n";
			end.wait_failed = true;
			kill(-group, SIGKILL); // pglease cannot watch it: it ends with the lease
			break;
		}
		if (g_continued.exchange(false)) {
			g_stopping = false;
			if (wants_terminal && foreground(tty, own_group))
				give_terminal(tty, group);
			kill(-group, SIGCONT);
		}
		// valid() also turns false at the local deadline, before any callback
		if ((cancelled.cancelled() || !lease.valid()) && !kill_at) {
			end.lost = true;
			kill(-group, SIGTERM);
			kill(-group, SIGCONT); // a stopped command could not act on it
			kill_at = std::chrono::steady_clock::now() + grace;
		}
		if (kill_at && std::chrono::steady_clock::now() >= *kill_at) {
			kill(-group, SIGKILL);
			kill_at = std::chrono::steady_clock::time_point::max();
		}
		std::this_thread::sleep_for(20ms);
	}
	// a ^C at the terminal the command had reached it, not pglease
	if (foreground(tty, group) && WIFSIGNALED(end.status) &&
	    (WTERMSIG(end.status) == SIGINT || WTERMSIG(end.status) == SIGQUIT))
		g_signalled = true;
	// the lease is gone: what the command left in its group had SIGTERM with it
	if (end.lost)
		kill(-group, SIGKILL);
	if (foreground(tty, group))
		give_terminal(tty, own_group);
	if (tty >= 0)
		close(tty);
	g_group = 0; // before the watcher is reaped: then the number may be reused
	dismiss(spawned);
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
	g_group = 0;
	for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGTSTP, SIGCONT})
		handle(sig, SIG_DFL);
}

} // namespace pglease::cli
