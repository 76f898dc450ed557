// main.cpp -- the pglease command: a distributed flock and lease tools.
//
//   pglease [--dsn DSN | --dsn-file PATH] run|elect|leader|acquire|renew|release|status|advise [OPTIONS]
//
// The commands, their flags and the URL schemes of --dsn are the table of
// commands.hpp, from which the help texts are made too.  This file parses
// the command line with it and runs acquire, renew, release and status
// itself; run's command is spawned and watched by child_process.cpp, elect
// and leader are election_commands.cpp's, and advise is advise.hpp's
// advise_main.
//
// The DSN is any URL of pglease::connect, from --dsn, else the first line of
// --dsn-file, else PGLEASE_DSN, else libpq's environment (PGHOST, PGPORT,
// ...), i.e. PostgreSQL (dsn.hpp).  A PostgreSQL-only
// command (status) refuses another provider's URL with 64, before any I/O.
// Exit codes (docs/cli.md "Exit codes"): 0 success (run: the command's own status, or
// 128+N if a signal N ended it), 64 usage, 69 server unavailable or
// extension missing, 70 internal error, 75 not acquired within --wait,
// 76 lease lost (run) or not held with that token by that holder
// (renew/release), 77 permission.
//
// Holders: renew and release name a grant by its token AND the holder label
// it was acquired with (a token alone may be guessed, or read from the
// provider's counter).  The library stores every label with 64 random bits
// unless --reclaim (LeaseOptions::reclaim), so two processes never share a
// grant; acquire prints the stored label on stderr, stdout staying the
// token alone.
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "advise.hpp"
#include "child_process.hpp"
#include "cli_support.hpp"
#include "election_commands.hpp"
#include "commands.hpp"
#include "dsn.hpp"
#include "duration.hpp"
#include "pglease/pglease.hpp"

namespace {

using namespace std::chrono_literals;
using namespace pglease::cli; // the shared pieces of cli_support.hpp

std::optional<std::int64_t>
token_arg(const Args &args, std::string &error)
{
	std::string t = required(args, "token", error);
	if (t.empty())
		return std::nullopt;
	char *end = nullptr;
	errno = 0;
	long long v = std::strtoll(t.c_str(), &end, 10);
	if (errno != 0 || end == t.c_str() || *end != '\0' || v <= 0) {
		error = "--token: '" + t + "' is not a positive integer";
		return std::nullopt;
	}
	return v;
}

bool
wants_help(int argc, char **argv, int first)
{
	for (int i = first; i < argc; i++) {
		if (std::strcmp(argv[i], "--") == 0)
			return false;
		if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0)
			return true;
	}
	return false;
}

// ---- run ---------------------------------------------------------------------

// What `pglease run` was asked to do.
struct RunOptions {
	std::string resource;
	pglease::LeaseOptions lease;
	std::chrono::milliseconds grace{};
	std::vector<std::string> command; // after --
};

// parse_run -- run's options, or nullopt with the usage error in error.
std::optional<RunOptions>
parse_run(const Args &args, std::string &error)
{
	RunOptions run;
	run.resource = required(args, "resource", error);
	auto ttl = duration_arg(args, "ttl", std::nullopt, error);
	auto wait = duration_arg(args, "wait", 0ms, error);
	auto grace = duration_arg(args, "grace", 5000ms, error);
	if (!error.empty())
		return std::nullopt;
	if (args.rest.empty()) {
		error = "run needs a command after --";
		return std::nullopt;
	}
	run.lease.ttl = *ttl;
	run.lease.wait = *wait;
	holder_args(args, run.lease, error);
	sharing_args(args, run.lease, error);
	if (!error.empty())
		return std::nullopt;
	run.grace = *grace;
	run.command = args.rest;
	return run;
}

// run_exit_code -- run's status once its command has ended: lost, the
// command's own, or 128+N for a signal N.
int
run_exit_code(const pglease::cli::ChildEnd &end, pglease::Lease &lease)
{
	if (end.wait_failed)
		return exit_internal;
	if (end.lost)
		return exit_lost;
	if (auto r = lease.release(); !r && r.error().code == pglease::Errc::lost)
		return fail(r.error());
	if (WIFEXITED(end.status))
		return WEXITSTATUS(end.status);
	if (WIFSIGNALED(end.status))
		return 128 + WTERMSIG(end.status);
	return exit_internal;
}

int
cmd_run(const std::string &dsn, const Args &args)
{
	std::string error;
	const std::optional<RunOptions> run = parse_run(args, error);
	if (!run)
		return usage_error(error, "run");

	int exit_code = 0;
	auto locker = locker_for(dsn, exit_code);
	if (!locker)
		return exit_code;
	auto lease = locker->acquire(run->resource, run->lease);
	if (!lease)
		return fail(lease.error());

	// The loss flag is the lease's own cancel token (shared state), and the
	// callback captures nothing: the renewal thread may call it until the
	// lease is gone, after this function's other locals.
	const pglease::CancelToken cancelled = lease->cancel_token();
	lease->on_lost([](const pglease::Error &e) { say("lease lost: " + text_of(e)); });

	pglease::cli::Spawned command;
	if (int rc = pglease::cli::spawn_command(
	        run->command,
	        {{"PGLEASE_TOKEN", std::to_string(lease->token())}, {"PGLEASE_RESOURCE", run->resource}},
	        command);
	    rc != 0) {
		std::cerr << "pglease: cannot run " << run->command[0] << ": " << std::strerror(rc) << "\n";
		(void)lease->release();
		return 127;
	}
	const pglease::cli::ChildEnd end = pglease::cli::supervise(command, *lease, cancelled, run->grace);
	return run_exit_code(end, *lease);
}

// ---- acquire / renew / release / status -----------------------------------------

int
cmd_acquire(const std::string &dsn, const Args &args)
{
	std::string error;
	std::string resource = required(args, "resource", error);
	auto ttl = duration_arg(args, "ttl", std::nullopt, error);
	auto wait = duration_arg(args, "wait", 0ms, error);
	pglease::LeaseOptions options;
	holder_args(args, options, error);
	sharing_args(args, options, error);
	if (!error.empty())
		return usage_error(error, "acquire");
	int exit_code = 0;
	auto locker = locker_for(dsn, exit_code);
	if (!locker)
		return exit_code;
	// the token is all a later renew/release gets: it must name the grant, and
	// the grant must outlive this process.  A provider that cannot release by
	// token (Redlock, memory, ZooKeeper: its grant is its session's) answers
	// the probe with invalid_argument; one that can answers false.
	auto caps = locker->capabilities();
	auto probe = locker->release(resource, std::numeric_limits<std::int64_t>::max(), "pglease-probe");
	if (!caps.distributed || !caps.fencing_token ||
	    (!probe && probe.error().code == pglease::Errc::invalid_argument))
		return usage_error("acquire needs a provider whose grants outlive this process and can be renewed "
		                   "and released by token (" +
		                       std::string{locker->provider()} + " cannot): use pglease run",
		                   "acquire");
	options.ttl = *ttl;
	options.wait = *wait;
	options.auto_renew = false;
	auto lease = locker->acquire(resource, options);
	if (!lease)
		return fail(lease.error());
	const std::string holder = lease->holder(); // detach() empties the lease
	// the lease outlives this process until its TTL: do not release it
	std::cout << lease->detach() << "\n";
	if (!options.reclaim) // stdout stays the token alone: T=$(pglease acquire ...)
		say("holder " + holder + " (renew and release need it as --holder)");
	return 0;
}

int
cmd_renew_release(const std::string &dsn, const Args &args, bool renew)
{
	std::string error;
	std::string resource = required(args, "resource", error);
	auto token = token_arg(args, error);
	std::string holder = required(args, "holder", error);
	if (holder.empty() && args.values.count("holder") == 0)
		error = "--holder is required: the label acquire took the lease as (its --holder, or the one it "
		        "printed); a token alone may be guessed";
	std::optional<std::chrono::milliseconds> ttl;
	if (renew)
		ttl = duration_arg(args, "ttl", std::nullopt, error);
	if (!error.empty())
		return usage_error(error, renew ? "renew" : "release");
	int exit_code = 0;
	auto locker = locker_for(dsn, exit_code);
	if (!locker)
		return exit_code;
	auto done =
	    renew ? locker->renew(resource, *token, holder, *ttl) : locker->release(resource, *token, holder);
	if (!done)
		return fail(done.error());
	if (!*done) {
		say("lease \"" + resource + "\" is not held with token " + std::to_string(*token) + " by holder \"" +
		    holder + "\": nothing changed");
		return exit_lost;
	}
	return 0;
}

int
cmd_status(const std::string &dsn)
{
	auto locker = pglease::connect(dsn);
	if (!locker)
		return fail(locker.error());
	auto rows = pglease::status(**locker);
	if (!rows)
		return fail(rows.error());
	// columns a space apart even where a value is wider than its column;
	// MODE: exclusive (a lock, or a permit: LIMIT its semaphore's) or shared (a reader)
	auto row = [](const std::string &resource, const std::string &holder, const std::string &token,
	              const std::string &owner, const std::string &remaining, const std::string &session,
	              const std::string &waiters, const std::string &mode, const std::string &limit) {
		std::cout << std::left << std::setw(23) << resource << ' ' << std::setw(27) << holder << ' ' << std::right
		          << std::setw(10) << token << "  " << std::left << std::setw(12) << owner << ' ' << std::right
		          << std::setw(9) << remaining << ' ' << std::setw(8) << session << ' ' << std::setw(8) << waiters
		          << "  " << std::left << std::setw(9) << mode << ' ' << std::right << std::setw(5) << limit
		          << "\n";
	};
	row("RESOURCE", "HOLDER", "TOKEN", "OWNER", "REMAINING", "SESSION", "WAITERS", "MODE", "LIMIT");
	for (const auto &r : *rows) {
		std::ostringstream remaining;
		remaining << std::fixed << std::setprecision(1) << r.remaining.count() / 1000.0 << "s";
		row(r.resource, r.holder, std::to_string(r.token), r.owner, remaining.str(), r.session_bound ? "yes" : "no",
		    r.waiters ? std::to_string(*r.waiters) : std::string{"-"}, std::string{pglease::to_string(r.mode)},
		    r.limit > 0 ? std::to_string(r.limit) : std::string{"-"});
	}
	return 0;
}

// dsn_refusal -- why command cannot take dsn, or "" when it can: a
// PostgreSQL-only command refuses another provider's URL before any I/O
std::string
dsn_refusal(const pglease::cli::Command &command, const std::string &dsn)
{
	if (command.dsn != pglease::cli::DsnUse::postgres || pglease::cli::is_postgres_dsn(dsn))
		return {};
	const auto colon = dsn.find(':');
	const bool url = colon != std::string::npos && dsn.compare(colon, 3, "://") == 0;
	return std::string{command.name} +
	       " is PostgreSQL only: --dsn must be a postgresql:// or postgres:// URL or a libpq conninfo "
	       "(key=value ...), " +
	       (colon == std::string::npos || colon == 0
	            ? std::string{"and this one is neither"}
	            : "not a " + dsn.substr(0, colon) + (url ? "://" : ":") + " URL");
}

// take_tls_flags -- --cacert, --cert, --key into g_options; a refusal for a
// DSN whose TLS is not pglease's to set (PostgreSQL: libpq's sslrootcert=,
// sslcert=, sslkey=; memory: no server)
std::string
take_tls_flags(const Args &args, const std::string &dsn)
{
	const std::pair<const char *, std::string *> flags[] = {{"cacert", &g_options.tls_ca_file},
	                                                        {"cert", &g_options.tls_cert_file},
	                                                        {"key", &g_options.tls_key_file}};
	bool given = false;
	for (const auto &[name, field] : flags)
		if (auto it = args.values.find(name); it != args.values.end()) {
			if (it->second.empty())
				return std::string{"--"} + name + " needs a file";
			*field = it->second;
			given = true;
		}
	if (given && pglease::cli::is_postgres_dsn(dsn))
		return "--cacert, --cert and --key are for rediss://, redlocks:// and etcds://; for PostgreSQL put "
		       "sslrootcert=, sslcert= and sslkey= (with sslmode=verify-full) in the DSN";
	if (given && dsn.rfind("memory:", 0) == 0)
		return "--cacert, --cert and --key are for rediss://, redlocks:// and etcds://; memory: has no "
		       "server";
	return {};
}

// run_command -- parse the options of one command (argv[first] on) and run
// it; its --dsn and --dsn-file replace the global ones
int
run_command(const pglease::cli::Command &command, pglease::cli::DsnSources sources, int argc, char **argv,
            int first)
{
	std::string error;
	auto args = parse_args(argc, argv, first, command, error);
	if (!args)
		return usage_error(error, command.name);
	if (auto d = args->values.find("dsn"); d != args->values.end())
		sources.dsn = g_dsn = d->second; // masked in the messages below, even before it is chosen
	if (auto f = args->values.find("dsn-file"); f != args->values.end())
		sources.file = f->second;
	std::optional<std::string> resolved = pglease::cli::resolve_dsn(sources, error);
	if (!resolved)
		return usage_error(error, command.name);
	const std::string dsn = g_dsn = *resolved;
	if (std::string refusal = dsn_refusal(command, dsn); !refusal.empty())
		return usage_error(refusal, command.name);
	if (std::string refusal = take_tls_flags(*args, dsn); !refusal.empty())
		return usage_error(refusal, command.name);
	if (command.name == "run")
		return cmd_run(dsn, *args);
	if (command.name == "elect")
		return cmd_elect(dsn, *args);
	if (command.name == "leader")
		return cmd_leader(dsn, *args, std::cout);
	if (command.name == "acquire")
		return cmd_acquire(dsn, *args);
	if (command.name == "renew")
		return cmd_renew_release(dsn, *args, true);
	if (command.name == "release")
		return cmd_renew_release(dsn, *args, false);
	if (command.name == "status")
		return cmd_status(dsn);
	return exit_internal; // a command of the table that main does not run
}

// help -- `pglease help [COMMAND]`
int
help(int argc, char **argv, int i)
{
	if (i + 1 >= argc) {
		std::cout << pglease::cli::main_help();
		return 0;
	}
	const pglease::cli::Command *command = pglease::cli::find_command(argv[i + 1]);
	if (command == nullptr)
		return usage_error("no command '" + std::string{argv[i + 1]} + "' to help with");
	std::cout << pglease::cli::command_help(*command);
	return 0;
}

} // namespace

int
main(int argc, char **argv)
{
	try {
		pglease::cli::DsnSources sources;
		int i = 1;
		while (i < argc && std::strncmp(argv[i], "--", 2) == 0) {
			std::string a = argv[i];
			if (a == "--help") {
				std::cout << pglease::cli::main_help();
				return 0;
			}
			if (a == "--version") {
				std::cout << "pglease " << pglease::client_version << " (built for pg_lease "
				          << pglease::extension_version << ")\n";
				return 0;
			}
			const std::string name = a.substr(0, a.find('='));
			if (name != "--dsn" && name != "--dsn-file")
				return usage_error("unknown option " + name);
			std::string value;
			if (name.size() < a.size()) {
				value = a.substr(name.size() + 1);
				i++;
			} else if (i + 1 < argc) {
				value = argv[i + 1];
				i += 2;
			} else {
				return usage_error("option " + name + " needs a value");
			}
			if (name == "--dsn")
				sources.dsn = g_dsn = value;
			else
				sources.file = value;
		}
		if (i < argc && std::strcmp(argv[i], "-h") == 0) {
			std::cout << pglease::cli::main_help();
			return 0;
		}
		if (i >= argc)
			return usage_error("no command");
		const std::string cmd = argv[i];
		if (cmd == "help")
			return help(argc, argv, i);
		const pglease::cli::Command *command = pglease::cli::find_command(cmd);
		if (command == nullptr)
			return usage_error("unknown command '" + cmd + "'");
		if (command->name == "advise")
			return pglease::cli::advise_main(argc - i, argv + i, std::cout, std::cerr);
		if (wants_help(argc, argv, i + 1)) {
			std::cout << pglease::cli::command_help(*command);
			return 0;
		}
		return run_command(*command, sources, argc, argv, i + 1);
	} catch (const std::exception &e) {
		say(e.what());
		return exit_internal;
	}
}
