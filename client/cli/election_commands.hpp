// election_commands.hpp -- `pglease elect` (campaign, run a command while
// leader) and `pglease leader` (who leads; with --watch, each change), on
// the election API of pglease/election.hpp.
#ifndef PGLEASE_CLI_ELECTION_COMMANDS_HPP
#define PGLEASE_CLI_ELECTION_COMMANDS_HPP

#include <ostream>
#include <string>

#include "cli_support.hpp"
#include "pglease/election.hpp"

namespace pglease::cli {

// cmd_elect -- campaign for --name with --value, run the command after `--`
// while leader, resign when it exits (--requeue: campaign again); the exit
// status of `pglease run`'s table (commands.cpp)
int cmd_elect(const std::string &dsn, const Args &args);

// cmd_leader -- print the leader of --name, and with --watch every change
// until SIGINT or SIGTERM, on out (flushed per line)
int cmd_leader(const std::string &dsn, const Args &args, std::ostream &out);

// leader_line -- a view as `pglease leader` prints it: "VALUE term T since
// ISO8601" (control characters of VALUE as \xHH; " since ..." only when the
// provider records it) or "no leader"
[[nodiscard]] std::string leader_line(const pglease::LeaderView &view);
// leader_json -- the same as one JSON object:
// {"leader":true,"value":"...","term":T,"since":"ISO8601"|null} or
// {"leader":false,"term":T}
[[nodiscard]] std::string leader_json(const pglease::LeaderView &view);

} // namespace pglease::cli

#endif // PGLEASE_CLI_ELECTION_COMMANDS_HPP
