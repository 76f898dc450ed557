// advise_args.cpp -- the command line of `pglease advise`: advise_main parses
// it with the flags of the command table (commands.hpp, which also makes the
// usage text), asks the tree and prints.
#include "advise.hpp"

#include "advise_tree.hpp"
#include "commands.hpp"
#include "duration.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <set>
#include <string_view>

namespace pglease::cli {

namespace {

// advise's entry of the command table (commands.hpp): its flags and help
[[nodiscard]] const Command &
advise_command()
{
	static const Command &command = *find_command("advise");
	return command;
}

struct ParsedArgs {
	AdviseInput input;
	bool help = false;
	std::string error;                 // a usage error, or ""
	std::vector<std::string> warnings; // printed on err, the advice still given
};

[[nodiscard]] std::string
lowercase_trimmed(std::string_view text)
{
	const auto first = text.find_first_not_of(" \t");
	if (first == std::string_view::npos)
		return {};
	text = text.substr(first, text.find_last_not_of(" \t") - first + 1);
	std::string lower{text};
	std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) {
		return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
	});
	return lower;
}

void
parse_infra(std::string_view list, ParsedArgs &parsed)
{
	while (true) {
		const std::size_t comma = list.find(',');
		std::string name = lowercase_trimmed(list.substr(0, comma));
		if (name == "postgresql")
			name = "postgres";
		if (std::find(known_infra.begin(), known_infra.end(), name) != known_infra.end())
			parsed.input.infra.insert(name);
		else if (!name.empty())
			// Kept going: the known names still decide; a typo is shown, not fatal.
			parsed.warnings.push_back("ignoring unknown infrastructure '" + name +
			                          "' (known: postgres, redis, zookeeper, etcd, memory)");
		if (comma == std::string_view::npos)
			break;
		list.remove_prefix(comma + 1);
	}
}

// apply_value -- store the value of one option; "" or a usage error.
[[nodiscard]] std::string
apply_value(std::string_view name, std::string_view value, ParsedArgs &parsed)
{
	AdviseInput &input = parsed.input;
	if (name == "--resource") {
		input.resource = std::string{value};
	} else if (name == "--section") {
		const auto section = parse_duration(value);
		if (!section)
			return "--section: '" + std::string{value} +
			       "' is not a duration (examples: 250ms, 30s, 5m, 2h, 1.5s)";
		input.section = *section;
	} else if (name == "--instances") {
		int instances = 0;
		const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), instances);
		if (ec != std::errc{} || end != value.data() + value.size())
			return "--instances: '" + std::string{value} + "' is not a whole number";
		input.instances = instances;
	} else if (name == "--infra") {
		parse_infra(value, parsed);
	} else { // --emit
		input.emit = std::string{value};
	}
	return {};
}

[[nodiscard]] ParsedArgs
parse_args(int argc, const char *const *argv)
{
	const Command &command = advise_command();
	ParsedArgs parsed;
	std::set<std::string_view> seen;
	for (int i = 1; i < argc && argv[i] != nullptr; ++i) {
		const std::string_view arg = argv[i];
		if (arg == "--help" || arg == "-h") {
			parsed.help = true;
			return parsed;
		}
		std::string_view name = arg;
		std::optional<std::string_view> inline_value;
		if (const std::size_t equals = arg.find('=');
		    arg.substr(0, 2) == "--" && equals != std::string_view::npos) {
			name = arg.substr(0, equals);
			inline_value = arg.substr(equals + 1);
		}

		bool *flag = nullptr;
		if (name == "--write")
			flag = &parsed.input.write;
		else if (name == "--strong")
			flag = &parsed.input.strong;
		else if (name == "--failover")
			flag = &parsed.input.failover;
		else if (name == "--explain")
			flag = &parsed.input.explain;
		else if (name == "--one-active")
			flag = &parsed.input.one_active;
		if (flag != nullptr) {
			if (inline_value) {
				parsed.error = std::string{name} + " takes no value";
				return parsed;
			}
			*flag = true;
			continue;
		}

		const Flag *option = name.substr(0, 2) == "--" ? find_flag(command, name.substr(2)) : nullptr;
		if (option == nullptr || option->value.empty()) {
			parsed.error =
			    (arg.substr(0, 1) == "-" ? "unknown option " : "unexpected argument ") + std::string{arg};
			return parsed;
		}
		// Two values for one option is a typo in a script, not a choice to guess.
		if (!seen.insert(name).second) {
			parsed.error = std::string{name} + " given twice";
			return parsed;
		}
		std::string_view value;
		if (inline_value) {
			value = *inline_value;
		} else if (i + 1 < argc && argv[i + 1] != nullptr &&
		           std::string_view{argv[i + 1]}.substr(0, 2) != "--") {
			value = argv[++i];
		} else {
			parsed.error = std::string{name} + " needs a value";
			return parsed;
		}
		parsed.error = apply_value(name, value, parsed);
		if (!parsed.error.empty())
			return parsed;
	}

	std::string missing;
	for (const Flag &flag : command.flags)
		if (flag.need == Need::required && seen.count("--" + std::string{flag.name}) == 0)
			missing += (missing.empty() ? "--" : ", --") + std::string{flag.name};
	if (!missing.empty())
		parsed.error = "missing " + missing;
	else
		parsed.error = validate(parsed.input);
	return parsed;
}

} // namespace

int
advise_main(int argc, const char *const *argv, std::ostream &out, std::ostream &err)
{
	const ParsedArgs parsed = parse_args(argc, argv);
	if (parsed.help) {
		out << command_help(advise_command());
		return advise_exit_ok;
	}
	if (!parsed.error.empty()) {
		err << "pglease advise: " << parsed.error << "\nTry 'pglease advise --help'.\n";
		return advise_exit_usage;
	}
	for (const std::string &warning : parsed.warnings)
		err << "pglease advise: " << warning << "\n";

	const AdviseResult result = decide(parsed.input);
	if (!result.advice) {
		err << "pglease advise: refused: " << result.refusal << "\n";
		return advise_exit_refused;
	}
	out << render(*result.advice, parsed.input);
	return advise_exit_ok;
}

} // namespace pglease::cli
