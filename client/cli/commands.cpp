// commands.cpp -- the table of commands.hpp, and the help texts made from it.
//
// tests/cli/help.sh reads the command table from this file (each Command
// and Flag starts a line, kept so by clang-format off) and checks each flag
// is in its command's --help.
#include "commands.hpp"

#include <algorithm>

namespace pglease::cli {

namespace {

constexpr std::size_t help_width = 100; // the usage line wraps before this column

const Flag dsn_flag{"dsn", "DSN", Need::optional, ""}; // its help depends on the command: dsn_help
const Flag dsn_file_flag{"dsn-file", "PATH", Need::optional,
                         "the DSN is this file's first line (so no password shows in ps)"};
const Flag help_flag{"help", "", Need::optional, "print this text (also -h)"};
// TLS material as files, for the providers that speak TLS through pglease
// (rediss://, redlocks://, etcds://): ClientOptions::tls_*, the URL's
// cacert=, cert=, key= winning; PostgreSQL's are libpq's (sslrootcert=, ...)
const std::vector<Flag> tls_flags{
    {"cacert", "FILE", Need::optional,
     "TLS: a CA file to verify the server with (the URL's cacert= wins; default: the system's)"},
    {"cert", "FILE", Need::optional, "TLS: a client certificate file (the URL's cert= wins)"},
    {"key", "FILE", Need::optional, "TLS: the client certificate's key file (the URL's key= wins)"},
};

// where the DSN comes from (main.cpp and dsn.cpp do it): in every command's
// --help, and in short in main_help
constexpr std::string_view dsn_precedence =
    "--dsn, else the first line of --dsn-file, else $PGLEASE_DSN, else libpq's environment\n"
    "  (PGHOST, PGDATABASE, PGPASSWORD, ~/.pgpass, PGSERVICE, ...)";

constexpr std::string_view exit_codes =
    "exit codes: 0 ok, 64 usage, 69 server unavailable or pg_lease not installed, 70 internal,\n"
    "  75 not acquired within --wait, 76 lease lost or token not current, 77 permission\n";

} // namespace

const std::vector<Command> &
commands()
{
	// one Command or Flag per line, as tests/cli/help.sh reads them
	// clang-format off
	static const std::vector<Command> table{
	    {"run", DsnUse::any, "run a command while holding a lease, renewed every TTL/3",
	     {
	         {"resource", "NAME", Need::required, "the resource to lock (1 to 256 bytes)"},
	         {"ttl", "DURATION", Need::required, "the lease's time to live: 250ms, 30s, 5m, 2h"},
	         {"wait", "DURATION", Need::optional, "how long to wait for the lease (default 0s: try once)"},
	         {"holder", "LABEL", Need::optional, "the holder's label, stored as LABEL~RANDOM (default: pglease@HOST:PID:RANDOM:N)"},
	         {"reclaim", "", Need::optional, "store --holder as given: take back the grant held under it (risk: docs/cli.md)"},
	         {"grace", "DURATION", Need::optional, "after a lost lease, SIGTERM to SIGKILL (default 5s)"},
	         {"shared", "", Need::optional, "a shared (reader's) lease: many shared holders, no exclusive one"},
	         {"limit", "N", Need::optional, "a semaphore's permit: at most N holders at once (1 to 10000)"},
	     },
	     "-- CMD [ARGS...]",
	     "CMD runs with PGLEASE_TOKEN and PGLEASE_RESOURCE set while the lease is renewed every TTL/3,\n"
	     "in a process group of its own that gets SIGKILL if pglease dies; if the lease is lost, the\n"
	     "group gets SIGTERM, then SIGKILL after --grace.  Every shared holder and every permit is a\n"
	     "lease of its own, with its own token (docs/shared-leases.md).  CMD does not get PGLEASE_DSN.\n"
	     "exit status: CMD's own (128+N if signal N ended it), or 64 usage, 69 unavailable,\n"
	     "  75 not acquired within --wait, 76 lease lost, 127 CMD cannot run\n"},
	    {"elect", DsnUse::any, "campaign for leadership, then run a command while leader",
	     {
	         {"name", "ELECTION", Need::required, "the election (1 to 256 bytes)"},
	         {"value", "VALUE", Need::required, "what the leader publishes, e.g. its address (at most 1024 bytes)"},
	         {"ttl", "DURATION", Need::optional, "the leadership's time to live, renewed every TTL/3 (default 30s)"},
	         {"wait", "DURATION", Need::optional, "how long to campaign (default: until elected)"},
	         {"grace", "DURATION", Need::optional, "after a lost leadership, SIGTERM to SIGKILL (default 5s)"},
	         {"requeue", "", Need::optional, "campaign again after losing, after CMD exits, through outages, until signalled"},
	     },
	     "-- CMD [ARGS...]",
	     "CMD runs with PGLEASE_TERM (the term: a fencing token), PGLEASE_VALUE and PGLEASE_ELECTION set\n"
	     "(PGLEASE_DSN unset) while leader, in a process group of its own that gets SIGKILL if pglease\n"
	     "dies; the leadership is renewed every TTL/3 and resigned when CMD exits.  If it is lost, CMD's\n"
	     "group gets SIGTERM, then SIGKILL after --grace.  stderr says each step (\"elected term T\", \"lost\n"
	     "term T\", \"resigned term T\").  With --requeue a CMD that ran under 1s is followed by a 1s pause\n"
	     "before the next campaign, a campaign that failed for a server away (or timed out) by another\n"
	     "after up to 2s, and only SIGINT, SIGTERM, SIGHUP or a failure that will not pass (usage,\n"
	     "permission, not installed) end pglease.\n"
	     "exit status: CMD's own (128+N if signal N ended it), or 64 usage, 69 unavailable,\n"
	     "  75 not elected within --wait, 76 leadership lost, 127 CMD cannot run\n"},
	    {"leader", DsnUse::any, "print an election's leader; with --watch, each change",
	     {
	         {"name", "ELECTION", Need::required, "the election (1 to 256 bytes)"},
	         {"watch", "", Need::optional, "print one more line per change, until SIGINT or SIGTERM"},
	         {"json", "", Need::optional, "one JSON object per line instead of text"},
	     },
	     "",
	     "Prints \"VALUE term T since 2026-01-31T12:00:00.000Z\" (UTC; \"since\" left out where the\n"
	     "provider does not record it) or \"no leader\", and exits 0 either way; control characters\n"
	     "of VALUE are printed as \\xHH.  --json: {\"leader\":true,\"value\":...,\"term\":T,\"since\":...}\n"
	     "or {\"leader\":false,\"term\":T} (T: the last term that ended where the provider or this\n"
	     "watch knows it, else null).  --watch prints\n"
	     "the current leader, then one line per change (a new term, a proclaimed value, \"no leader\")\n"
	     "as it happens; a server error is said on stderr and the watch goes on.\n"},
	    {"acquire", DsnUse::tokens, "take a lease and print its token; it lasts its TTL",
	     {
	         {"resource", "NAME", Need::required, "the resource to lock (1 to 256 bytes)"},
	         {"ttl", "DURATION", Need::required, "the lease's time to live: 250ms, 30s, 5m, 2h"},
	         {"wait", "DURATION", Need::optional, "how long to wait for the lease (default 0s: try once)"},
	         {"holder", "LABEL", Need::optional, "the holder's label, stored as LABEL~RANDOM (default: a new one)"},
	         {"reclaim", "", Need::optional, "store --holder as given: take back the grant held under it (risk: docs/cli.md)"},
	         {"shared", "", Need::optional, "a shared (reader's) lease: many shared holders, no exclusive one"},
	         {"limit", "N", Need::optional, "a semaphore's permit: at most N holders at once (1 to 10000)"},
	     },
	     "",
	     "The lease outlives this command until its TTL ends: renew and release it by its token and\n"
	     "holder.  stdout is the token alone; unless --reclaim, stderr gets the label it is stored under:\n"
	     "  pglease: holder LABEL~RANDOM (renew and release need it as --holder)\n"},
	    {"renew", DsnUse::tokens, "extend a lease by its token",
	     {
	         {"resource", "NAME", Need::required, "the leased resource"},
	         {"token", "TOKEN", Need::required, "the token acquire printed"},
	         {"holder", "LABEL", Need::required, "the holder acquire took it as (its --holder or printed label)"},
	         {"ttl", "DURATION", Need::required, "the new time to live, from now"},
	     },
	     "",
	     "Only the holder's grant is renewed: the token and the holder label must both match.\n"
	     "exit status 76: the lease is not held with that token by that holder; nothing changed.\n"},
	    {"release", DsnUse::tokens, "release a lease by its token",
	     {
	         {"resource", "NAME", Need::required, "the leased resource"},
	         {"token", "TOKEN", Need::required, "the token acquire printed"},
	         {"holder", "LABEL", Need::required, "the holder acquire took it as (its --holder or printed label)"},
	     },
	     "",
	     "Only the holder's grant is released: the token and the holder label must both match.\n"
	     "exit status 76: the lease is not held with that token by that holder; nothing changed.\n"},
	    {"status", DsnUse::postgres, "list the current leases (PostgreSQL only)", {}, "",
	     "One line per lease: resource, holder, token, owner, remaining, session-bound, waiters.\n"},
	    {"advise", DsnUse::none, "print the lock configuration that fits a job (no server)",
	     {
	         {"resource", "NAME", Need::required, "the resource to lock (1 to 256 bytes)"},
	         {"section", "DURATION", Need::required, "how long the lock is held: 250ms, 1.5s, 30s, 5m, 2h"},
	         {"instances", "N", Need::required, "how many processes compete for the lock (1 or more)"},
	         {"infra", "LIST", Need::required, "what you run: postgres,redis,zookeeper,etcd,memory"},
	         {"write", "", Need::optional, "the section writes a shared resource"},
	         {"strong", "", Need::optional, "strong consistency is required"},
	         {"failover", "", Need::optional, "a crashed holder must hand the lock over fast"},
	         {"one-active", "", Need::optional, "exactly one instance active, the others following: an election"},
	         {"explain", "", Need::optional, "add one \"# \" line per decision taken"},
	         {"emit", "sql|cpp", Need::optional, "add code, 20 lines at most: sql (PostgreSQL), cpp (all)"},
	     },
	     "",
	     "Prints four lines: Provider, Strategy, TTL, Safety (docs/decision-tree.md).\n"
	     "A DURATION is 250ms, 1.5s, 30s, 5m or 2h; a bare number is seconds.\n"
	     "Exit status: 0 advice printed, 64 usage error, 65 no configuration fits.\n"},
	};
	// clang-format on
	return table;
}

const Command *
find_command(std::string_view name)
{
	for (const Command &command : commands())
		if (command.name == name)
			return &command;
	return nullptr;
}

std::vector<Flag>
flags_of(const Command &command)
{
	std::vector<Flag> flags = command.flags;
	if (command.dsn != DsnUse::none) {
		flags.push_back(dsn_flag);
		flags.push_back(dsn_file_flag);
	}
	if (command.dsn == DsnUse::any || command.dsn == DsnUse::tokens)
		flags.insert(flags.end(), tls_flags.begin(), tls_flags.end());
	flags.push_back(help_flag);
	return flags;
}

const Flag *
find_flag(const Command &command, std::string_view name)
{
	if (name == dsn_flag.name)
		return command.dsn == DsnUse::none ? nullptr : &dsn_flag;
	if (name == dsn_file_flag.name)
		return command.dsn == DsnUse::none ? nullptr : &dsn_file_flag;
	if (name == help_flag.name)
		return &help_flag;
	if (command.dsn == DsnUse::any || command.dsn == DsnUse::tokens)
		for (const Flag &flag : tls_flags)
			if (flag.name == name)
				return &flag;
	auto it = std::find_if(command.flags.begin(), command.flags.end(),
	                       [&](const Flag &flag) { return flag.name == name; });
	return it == command.flags.end() ? nullptr : &*it;
}

const std::vector<Scheme> &
schemes()
{
	static const std::vector<Scheme> table{
	    {"postgresql://", "postgresql://[USER[:PW]@]HOST[:PORT]/DB", true, true, false},
	    {"postgres://", " (or postgres://), a libpq conninfo", true, true, true},
	    {"redis://", "redis://[[USER]:PW@]HOST:PORT[/DB]", false, true, false},
	    {"rediss://", " (TLS: rediss://...?cacert=F&cert=F&key=F)", false, true, true},
	    {"redis+sentinel://", "redis+sentinel://[[USER]:PW@]S1:P1[,...]/MASTER[/DB]", false, true, false},
	    {"etcd://", "etcd://[USER:PW@]H1:P1[,...]", false, true, false},
	    {"etcds://", " (TLS: etcds://...?cacert=F&cert=F&key=F)", false, true, true},
	    {"redlock://", "redlock://[[USER]:PW@]H1:P1,H2:P2,H3:P3", false, false, false},
	    {"redlocks://", " (TLS: redlocks://...)", false, false, true},
	    {"zookeeper://", "zookeeper://[USER:PW@]H1:P1[,...][/CHROOT]", false, false, false},
	    {"memory:", "memory:NAME (one process)", false, false, false},
	};
	return table;
}

bool
is_postgres_dsn(std::string_view dsn) noexcept
{
	// the rule of pglease::connect (client/src/connect.cpp)
	const bool url = dsn.find("://") != std::string_view::npos;
	return dsn.empty() || (!url && dsn.find('=') != std::string_view::npos) ||
	       dsn.rfind("postgresql://", 0) == 0 || dsn.rfind("postgres://", 0) == 0;
}

bool
accepts(DsnUse use, const Scheme &scheme) noexcept
{
	switch (use) {
	case DsnUse::none:
		return false;
	case DsnUse::any:
		return true;
	case DsnUse::tokens:
		return scheme.tokens;
	case DsnUse::postgres:
		return scheme.postgres;
	}
	return false;
}

namespace {

// users_of -- the commands that take the scheme, space-separated
std::string
users_of(const Scheme &scheme)
{
	std::string names;
	for (const Command &command : commands())
		if (accepts(command.dsn, scheme))
			names += (names.empty() ? "" : " ") + std::string{command.name};
	return names;
}

// scheme_lines -- the schemes, one line for those the same commands take
std::string
scheme_lines()
{
	std::vector<std::pair<std::string, std::string>> groups; // commands, forms
	for (const Scheme &scheme : schemes()) {
		std::string users = users_of(scheme);
		if (scheme.alias) { // its form is what it adds to the line of the scheme before it
			groups.back().second += std::string{scheme.form};
			continue;
		}
		if (!groups.empty() && groups.back().first == users)
			groups.back().second += ", " + std::string{scheme.form};
		else
			groups.emplace_back(users, scheme.form);
	}
	std::string every;
	for (const Command &command : commands())
		if (command.dsn != DsnUse::none)
			every += (every.empty() ? "" : " ") + std::string{command.name};
	std::string text;
	for (auto &[users, forms] : groups) {
		if (users == every)
			users = "all commands";
		else if (users.find(' ') == std::string::npos)
			users += " only";
		text += "  " + users + ": " + forms + "\n";
	}
	return text;
}

} // namespace

std::string
main_help()
{
	std::string text =
	    "usage: pglease [--dsn DSN | --dsn-file PATH] COMMAND [OPTIONS]  (pglease COMMAND --help)\n"
	    "       pglease --help | --version | help [COMMAND]\n"
	    "commands:\n";
	for (const Command &command : commands()) {
		std::string name{command.name};
		name.resize(9, ' ');
		text += "  " + name + std::string{command.summary} + "\n";
	}
	text += "DSN (--dsn, else --dsn-file's first line, else $PGLEASE_DSN, else libpq's PG* environment):\n" +
	        scheme_lines();
	text += exit_codes;
	text += "more: pglease COMMAND --help, docs/cli.md\n";
	return text;
}

namespace {

// flag_usage -- "--ttl DURATION", "[--wait DURATION]", "[--write]"
std::string
flag_usage(const Flag &flag)
{
	std::string text = "--" + std::string{flag.name};
	if (!flag.value.empty())
		text += " " + std::string{flag.value};
	return flag.need == Need::required ? text : "[" + text + "]";
}

// usage_line -- "usage: pglease NAME" and the flags but --help, wrapped
std::string
usage_line(const Command &command)
{
	const std::string head = "usage: pglease " + std::string{command.name};
	std::vector<std::string> words;
	for (const Flag &flag : flags_of(command))
		if (flag.name != help_flag.name)
			words.push_back(flag_usage(flag));
	if (!command.trailer.empty())
		words.emplace_back(command.trailer);
	std::string text = head, line = head;
	for (const std::string &word : words) {
		if (line.size() + 1 + word.size() > help_width) {
			text += "\n" + std::string(head.size(), ' ');
			line = std::string(head.size(), ' ');
		}
		text += " " + word;
		line += " " + word;
	}
	return text + "\n";
}

// dsn_help -- the --dsn line of a command: the schemes it takes
std::string
dsn_help(const Command &command)
{
	std::string text;
	for (const Scheme &scheme : schemes()) {
		if (!accepts(command.dsn, scheme))
			continue;
		if (scheme.alias)
			text += " or " + std::string{scheme.prefix};
		else
			text += (text.empty() ? "" : ", ") + std::string{scheme.prefix};
		if (scheme.postgres && scheme.alias)
			text += ", a conninfo";
	}
	return text;
}

} // namespace

std::string
command_help(const Command &command)
{
	std::string text = usage_line(command) + "\n" + std::string{command.summary} + ".\n\noptions:\n";
	for (const Flag &flag : flags_of(command)) {
		std::string left = "--" + std::string{flag.name};
		if (!flag.value.empty())
			left += " " + std::string{flag.value};
		left.resize(std::max<std::size_t>(left.size() + 2, 20), ' ');
		text +=
		    "  " + left + (flag.name == dsn_flag.name ? dsn_help(command) : std::string{flag.help}) + "\n";
	}
	if (command.dsn != DsnUse::none)
		text += "\nDSN: " + std::string{dsn_precedence} + ".\n";
	if (!command.details.empty())
		text += "\n" + std::string{command.details};
	if (command.name != "run" && command.name != "elect" && command.name != "advise")
		text += exit_codes;
	return text;
}

} // namespace pglease::cli
