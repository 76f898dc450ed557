// dsn.hpp -- where the pglease command's DSN comes from, and how a message
// that may quote it is shown.
//
// The DSN is, first found: --dsn DSN, the first line of --dsn-file PATH (a
// password then never appears in ps or a shell's history), the environment
// variable PGLEASE_DSN, or "" -- libpq's own environment (PGHOST, PGPASSWORD,
// ~/.pgpass, PGSERVICE, ...), i.e. PostgreSQL.  The precedence is said in
// every --help (commands.cpp) and in docs/cli.md.
#ifndef PGLEASE_CLI_DSN_HPP
#define PGLEASE_CLI_DSN_HPP

#include <optional>
#include <string>
#include <string_view>

namespace pglease::cli {

// The DSN options of one command line (the global ones, then the command's:
// a command's own option replaces the global one of the same name).
struct DsnSources {
	std::optional<std::string> dsn;  // --dsn
	std::optional<std::string> file; // --dsn-file
};

// The variable read when neither option is given.
inline constexpr std::string_view dsn_variable = "PGLEASE_DSN";

// resolve_dsn -- the DSN by the precedence above; nullopt with a usage
// error (the file named, never its content) when --dsn-file cannot be read
// or its first line is empty
[[nodiscard]] std::optional<std::string> resolve_dsn(const DsnSources &sources, std::string &error);

// shown -- message as it may be printed: every password of dsn masked
// (pglease::redact), and, for a DSN with an '@' that redact finds no
// password in (a malformed URL such as postgresql:/user:pw@host), the
// text between its first ':' and its last '@' masked wherever it appears
[[nodiscard]] std::string shown(std::string_view message, std::string_view dsn);

} // namespace pglease::cli

#endif // PGLEASE_CLI_DSN_HPP
