// commands.hpp -- the one table of the pglease command: its commands, their
// flags, and the URL schemes --dsn takes.  main.cpp and advise_args.cpp parse
// the command line with it, and every help text is made from it
// (commands.cpp), so a flag cannot be parsed without being documented.
#ifndef PGLEASE_CLI_COMMANDS_HPP
#define PGLEASE_CLI_COMMANDS_HPP

#include <string>
#include <string_view>
#include <vector>

namespace pglease::cli {

// Which DSNs a command takes.
enum class DsnUse {
	none,     // no server (advise)
	any,      // every scheme (run)
	tokens,   // a provider whose grants outlive the process, renewed and released by token
	postgres, // PostgreSQL only (status)
};

enum class Need { required, optional };

// One --name option of a command.
struct Flag {
	std::string_view name;  // without the leading "--"
	std::string_view value; // its placeholder in the help ("DURATION"), "" for a switch
	Need need;
	std::string_view help; // one line
};

struct Command {
	std::string_view name;
	DsnUse dsn;               // a command that takes a DSN also takes --dsn DSN
	std::string_view summary; // one line, in `pglease --help`
	std::vector<Flag> flags;  // --dsn and --help are added by flags_of
	std::string_view trailer; // the usage line's end after the flags ("-- CMD [ARGS...]"), or ""
	std::string_view details; // paragraphs after the options in COMMAND --help ('\n' ended), or ""
};

// One URL scheme of pglease::connect (client/src/connect.cpp and the
// components' register_provider calls).
struct Scheme {
	std::string_view prefix; // "redis://", "memory:"
	std::string_view form;   // what to write: "redis://HOST:PORT[/DB]"
	bool postgres;           // PostgreSQL with pg_lease
	bool tokens;             // grants outlive the process and are renewed/released by token
	bool alias;              // another prefix of the scheme before it in the table;
	                         // its form is the text it adds to that scheme's line
};

[[nodiscard]] const std::vector<Command> &commands();
// find_command -- the command called name, or nullptr
[[nodiscard]] const Command *find_command(std::string_view name);
// flags_of -- every flag the command takes: its own, then --dsn when it
// takes a DSN, then --help
[[nodiscard]] std::vector<Flag> flags_of(const Command &command);
// find_flag -- the flag of command called name, or nullptr
[[nodiscard]] const Flag *find_flag(const Command &command, std::string_view name);

[[nodiscard]] const std::vector<Scheme> &schemes();
// is_postgres_dsn -- whether pglease::connect takes dsn for PostgreSQL: empty
// (libpq's environment), a postgresql:// or postgres:// URL, or a libpq
// key=value string
[[nodiscard]] bool is_postgres_dsn(std::string_view dsn) noexcept;
// accepts -- whether a command of that DsnUse takes the scheme
[[nodiscard]] bool accepts(DsnUse use, const Scheme &scheme) noexcept;

// main_help -- `pglease --help`: the commands, the URL schemes, where to read more
[[nodiscard]] std::string main_help();
// command_help -- `pglease COMMAND --help`: its usage, then one line per flag
[[nodiscard]] std::string command_help(const Command &command);

} // namespace pglease::cli

#endif // PGLEASE_CLI_COMMANDS_HPP
