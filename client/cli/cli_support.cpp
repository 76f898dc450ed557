// cli_support.cpp -- the pieces the pglease commands share (cli_support.hpp).
#include "cli_support.hpp"

#include <unistd.h>

#include <charconv>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "dsn.hpp"
#include "duration.hpp"

namespace pglease::cli {

std::string g_dsn;
pglease::ClientOptions g_options;

void
say(const std::string &message)
{
	std::cerr << "pglease: " << shown(message, g_dsn) << "\n";
}

std::string
text_of(const pglease::Error &error)
{
	std::ostringstream out;
	out << error;
	return out.str();
}

int
usage_error(const std::string &message, std::string_view command)
{
	say(message);
	std::cerr << "Try 'pglease " << (command.empty() ? "" : std::string{command} + " ") << "--help'.\n";
	return exit_usage;
}

int
exit_code_for(const pglease::Error &error)
{
	switch (error.code) {
	case pglease::Errc::timeout:
		return exit_not_acquired;
	case pglease::Errc::lost:
		return exit_lost;
	case pglease::Errc::permission:
		return exit_permission;
	case pglease::Errc::invalid_argument:
		return exit_usage;
	case pglease::Errc::unavailable:
	case pglease::Errc::not_installed:
		return exit_unavailable;
	case pglease::Errc::nested:
	case pglease::Errc::internal:
		return exit_internal;
	}
	return exit_internal;
}

int
fail(const pglease::Error &error)
{
	say(text_of(error));
	return exit_code_for(error);
}

std::unique_ptr<pglease::Locker>
locker_for(const std::string &dsn, int &exit_code)
{
	auto locker = pglease::connect(dsn, g_options);
	if (!locker) {
		exit_code = fail(locker.error());
		return nullptr;
	}
	return std::move(*locker);
}

std::optional<Args>
parse_args(int argc, char **argv, int first, const Command &command, std::string &error)
{
	Args args;
	for (int i = first; i < argc; i++) {
		std::string a = argv[i];
		if (a == "--") {
			for (int j = i + 1; j < argc; j++)
				args.rest.push_back(argv[j]);
			break;
		}
		if (a.rfind("--", 0) != 0) {
			error = "unexpected argument '" + a + "'";
			return std::nullopt;
		}
		std::string name = a.substr(2), value;
		const auto eq = name.find('=');
		if (eq != std::string::npos)
			name = name.substr(0, eq);
		const Flag *flag = find_flag(command, name);
		if (flag == nullptr) {
			error = "unknown option --" + name + " for " + std::string{command.name};
			return std::nullopt;
		}
		if (flag->value.empty()) { // a switch: --requeue, --watch
			if (eq != std::string::npos) {
				error = "option --" + name + " takes no value";
				return std::nullopt;
			}
		} else if (eq != std::string::npos) {
			value = a.substr(2 + eq + 1);
		} else if (i + 1 < argc) {
			value = argv[++i];
		} else {
			error = "option --" + name + " needs a value";
			return std::nullopt;
		}
		args.values[name] = value;
	}
	return args;
}

std::optional<std::chrono::milliseconds>
duration_arg(const Args &args, const std::string &name, std::optional<std::chrono::milliseconds> fallback,
             std::string &error)
{
	auto it = args.values.find(name);
	if (it == args.values.end()) {
		if (!fallback)
			error = "--" + name + " is required";
		return fallback;
	}
	auto d = parse_duration(it->second);
	if (!d)
		error = "--" + name + ": '" + it->second + "' is not a duration (250ms, 30s, 5m, 2h)";
	return d;
}

std::string
required(const Args &args, const std::string &name, std::string &error)
{
	auto it = args.values.find(name);
	if (it == args.values.end() || it->second.empty()) {
		error = "--" + name + " is required";
		return {};
	}
	return it->second;
}

void
holder_args(const Args &args, pglease::LeaseOptions &options, std::string &error)
{
	const auto it = args.values.find("holder");
	if (it != args.values.end())
		options.holder = it->second;
	options.reclaim = args.has("reclaim");
	if (options.reclaim && options.holder.empty())
		error = "--reclaim needs --holder: the label whose grant it takes back";
}

void
sharing_args(const Args &args, pglease::LeaseOptions &options, std::string &error)
{
	if (args.has("shared"))
		options.mode = pglease::Mode::shared;
	auto it = args.values.find("limit");
	if (it == args.values.end())
		return;
	const std::string &text = it->second;
	unsigned long limit = 0;
	const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), limit);
	if (ec != std::errc{} || end != text.data() + text.size() || limit < 1 || limit > pglease::max_limit) {
		error =
		    "--limit: '" + text + "' is not a whole number from 1 to " + std::to_string(pglease::max_limit);
		return;
	}
	if (options.mode == pglease::Mode::shared) {
		error = "--shared and --limit do not go together: a semaphore's permits are exclusive";
		return;
	}
	options.limit = static_cast<std::uint32_t>(limit);
}

} // namespace pglease::cli
