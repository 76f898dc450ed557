// child_process.hpp -- the command `pglease run` runs under its lease (and
// `pglease elect` under its leadership): spawned with the lease in its
// environment, sent the signals pglease receives, and stopped when the lease
// is lost.
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

// spawn_command -- start command (command[0] looked up in PATH) with env
// added to pglease's environment. 0 with child set, or posix_spawnp's error
// number.
[[nodiscard]] int spawn_command(const std::vector<std::string> &command, const Environment &env,
                                pid_t &child);

// How a supervised child ended.
struct ChildEnd {
	int status = 0;           // waitpid's status of the child
	bool lost = false;        // the lease was lost, so the child was stopped
	bool wait_failed = false; // waitpid failed (said on stderr): status is unknown
};

// supervise -- pass SIGTERM, SIGINT and SIGHUP on to child and wait for it to
// end; once the lease is lost (cancelled, or past its local deadline) send it
// SIGTERM, and SIGKILL if it is still running after grace.
[[nodiscard]] ChildEnd supervise(pid_t child, const pglease::Lease &lease,
                                 const pglease::CancelToken &cancelled, std::chrono::milliseconds grace);

// signalled -- whether SIGTERM, SIGINT or SIGHUP reached pglease while it
// supervised a command (`elect --requeue` stops campaigning then)
[[nodiscard]] bool signalled() noexcept;

// default_signals -- SIGTERM, SIGINT and SIGHUP back to their default action
// (end pglease) while no command runs: a campaign that waits is ended by them
void default_signals() noexcept;

} // namespace pglease::cli

#endif // PGLEASE_CLI_CHILD_PROCESS_HPP
