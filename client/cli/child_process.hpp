// child_process.hpp -- the command `pglease run` runs under its lease (and
// `pglease elect` under its leadership): spawned with the lease in its
// environment, in a process group of its own that does not outlive pglease,
// sent the signals pglease receives, and stopped when the lease is lost.
//
// The group and its watcher: the command runs in a new process group, led by
// a watcher process forked from pglease that execs nothing and only waits on
// a pipe whose write end pglease alone holds.  However pglease ends (SIGKILL
// included) the kernel closes that end; the watcher's read then returns and
// it sends SIGKILL to the whole group, itself included.  The command's own
// process also has PR_SET_PDEATHSIG(SIGKILL), set before its exec and checked
// against a parent that was gone already, so it dies with pglease even if
// the watcher was killed first.  What escapes: a process that leaves the
// group (setsid, setpgid) -- the fencing token is the defence there
// (docs/cli.md "When pglease dies").
#ifndef PGLEASE_CLI_CHILD_PROCESS_HPP
#define PGLEASE_CLI_CHILD_PROCESS_HPP

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pglease/lease.hpp"

namespace pglease::cli {

// The variables a command gets (PGLEASE_TOKEN=..., ...), in place of any of
// the same names it inherits.
using Environment = std::vector<std::pair<std::string, std::string>>;

// A command spawn_command started.
struct Spawned {
	pid_t child = 0;   // the command's own process: supervise waits for it
	pid_t group = 0;   // the command's process group, the watcher's pid
	pid_t watcher = 0; // kills the group once pglease is gone
	int watch_fd = -1; // the watcher's pipe: pglease's end, its only one
};

// spawn_command -- start command (command[0] looked up in PATH, as execvp
// does) with env added to pglease's environment less PGLEASE_DSN (the
// server's credentials are pglease's), in a new process group
// with its watcher.  0 with spawned set, or the error number of the fork,
// pipe or exec that failed (nothing is left running then).
[[nodiscard]] int spawn_command(const std::vector<std::string> &command, const Environment &env,
                                Spawned &spawned);

// How a supervised child ended.
struct ChildEnd {
	int status = 0;           // waitpid's status of the child
	bool lost = false;        // the lease was lost, so the child was stopped
	bool wait_failed = false; // waitpid failed (said on stderr): status is unknown
};

// supervise -- pass SIGTERM, SIGINT and SIGHUP on to the command's group and
// wait for the command to end; once the lease is lost (cancelled, or past
// its local deadline) send the group SIGTERM, and SIGKILL if the command is
// still running after grace; what is left of the group when a command whose
// lease was lost ends gets SIGKILL.  Job control is passed on: ^Z (SIGTSTP)
// stops the group and pglease, SIGCONT continues both, and a command stopped
// for reading the terminal (SIGTTIN, SIGTTOU) is given it while pglease is
// the terminal's foreground (else pglease stops too, for its shell to fg).
// The watcher is gone when it returns: what the command left in its group
// otherwise keeps running.
[[nodiscard]] ChildEnd supervise(Spawned &spawned, const pglease::Lease &lease,
                                 const pglease::CancelToken &cancelled, std::chrono::milliseconds grace);

// signalled -- whether SIGTERM, SIGINT or SIGHUP reached pglease while it
// supervised a command (`elect --requeue` stops campaigning then)
[[nodiscard]] bool signalled() noexcept;

// default_signals -- SIGTERM, SIGINT, SIGHUP, SIGTSTP and SIGCONT back to
// their default action while no command runs: a campaign that waits is
// ended by the first three
void default_signals() noexcept;

} // namespace pglease::cli

#endif // PGLEASE_CLI_CHILD_PROCESS_HPP
