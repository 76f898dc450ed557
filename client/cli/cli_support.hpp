// cli_support.hpp -- what every command of the pglease CLI shares: its exit
// codes, its messages (passwords of the DSN masked), the parsed options of a
// command line, and the Locker of the DSN.  main.cpp runs the commands;
// election_commands.cpp (elect, leader) uses the same pieces.
#ifndef PGLEASE_CLI_CLI_SUPPORT_HPP
#define PGLEASE_CLI_CLI_SUPPORT_HPP

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "pglease/pglease.hpp"

namespace pglease::cli {

// exit codes (docs/cli.md "Exit codes")
inline constexpr int exit_usage = 64;
inline constexpr int exit_unavailable = 69;
inline constexpr int exit_internal = 70;
inline constexpr int exit_not_acquired = 75;
inline constexpr int exit_lost = 76;
inline constexpr int exit_permission = 77;

// The DSN of this run (whichever source gave it): every message printed goes
// through shown() with it, so its password is never shown.
extern std::string g_dsn;
// the command's --cacert, --cert and --key (ClientOptions::tls_*)
extern pglease::ClientOptions g_options;

// say -- "pglease: message" on stderr, the DSN's passwords masked
void say(const std::string &message);
[[nodiscard]] std::string text_of(const pglease::Error &error);
// usage_error -- the message, and where the usage is (the command's --help,
// or pglease --help when there is no command); exit_usage
int usage_error(const std::string &message, std::string_view command = {});
[[nodiscard]] int exit_code_for(const pglease::Error &error);
// fail -- say the error; its exit code
int fail(const pglease::Error &error);

// locker_for -- the Locker of a DSN (any URL pglease::connect takes), or
// nullptr with the error said and its code in exit_code
[[nodiscard]] std::unique_ptr<pglease::Locker> locker_for(const std::string &dsn, int &exit_code);

// Options of one subcommand: --name value pairs (a switch's value "");
// `--` ends them.
struct Args {
	std::map<std::string, std::string> values;
	std::vector<std::string> rest;
	[[nodiscard]] bool has(const std::string &name) const { return values.count(name) != 0; }
};

// parse_args -- argv[first..] by the command's flags; nullopt with error
[[nodiscard]] std::optional<Args> parse_args(int argc, char **argv, int first, const Command &command,
                                             std::string &error);
// duration_arg -- --name as a duration, fallback when absent (error when
// there is none, or the text is not a duration)
[[nodiscard]] std::optional<std::chrono::milliseconds>
duration_arg(const Args &args, const std::string &name, std::optional<std::chrono::milliseconds> fallback,
             std::string &error);
// required -- --name's value; "" with error when absent or empty
[[nodiscard]] std::string required(const Args &args, const std::string &name, std::string &error);
// holder_args -- --holder and --reclaim into options.holder and .reclaim;
// error when --reclaim comes without --holder (nothing to take back)
void holder_args(const Args &args, pglease::LeaseOptions &options, std::string &error);
// sharing_args -- --shared and --limit N into options.mode and .limit (the
// provider checks that it has them); error when --limit is not 1..max_limit
// or comes with --shared
void sharing_args(const Args &args, pglease::LeaseOptions &options, std::string &error);

} // namespace pglease::cli

#endif // PGLEASE_CLI_CLI_SUPPORT_HPP
