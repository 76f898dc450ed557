// cli_election_test.cpp -- `pglease elect` and `pglease leader` run in this
// process against the memory provider (memory:NAME is shared by every
// Locker of one process, so the test and the command meet in one election):
// elect runs its command with the term, value and election in its
// environment and resigns after it; a held election makes elect wait and
// exit 75 after --wait; usage errors exit 64; leader prints the leader and "no leader" as text and JSON,
// with JSON's escaping and \xHH for control characters in the text.
// (tests/cli/elect.sh runs the binary against real servers, several
// processes on one election.)
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "election_commands.hpp"

namespace {

using namespace std::chrono_literals;
using pglease::cli::Args;

std::string
read_file(const std::string &path)
{
	std::ifstream in{path};
	std::stringstream text;
	text << in.rdbuf();
	return text.str();
}

// scratch -- a file name of this test's own
std::string
scratch(const std::string &name)
{
	return "/tmp/cli_election_test." + std::to_string(getpid()) + "." + name;
}

Args
elect_args(const std::string &election, const std::string &value, const std::string &script)
{
	Args args;
	args.values = {{"name", election}, {"value", value}, {"ttl", "5s"}};
	args.rest = {"sh", "-c", script};
	return args;
}

TEST(CliElect, runs_the_command_with_term_value_and_election_then_resigns)
{
	const std::string out = scratch("env");
	Args args = elect_args("e/env", "host-1:80",
	                       "echo \"$PGLEASE_TERM|$PGLEASE_VALUE|$PGLEASE_ELECTION\" >" + out + "; exit 7");
	EXPECT_EQ(pglease::cli::cmd_elect("memory:cli", args), 7); // the command's own status
	const std::string seen = read_file(out);
	std::remove(out.c_str());
	EXPECT_NE(seen.find("|host-1:80|e/env\n"), std::string::npos) << seen;
	EXPECT_GT(std::stoll(seen), 0) << seen;
	auto locker = pglease::connect("memory:cli");
	ASSERT_TRUE(locker);
	auto view = (*locker)->leader("e/env");
	ASSERT_TRUE(view);
	EXPECT_FALSE(view->has_leader) << "resigned when the command exited";
}

TEST(CliElect, waits_for_a_held_election_and_exits_75_after_wait)
{
	auto locker = pglease::connect("memory:cli");
	ASSERT_TRUE(locker);
	auto held = (*locker)->campaign("e/held", "other");
	ASSERT_TRUE(held) << held.error();
	Args args = elect_args("e/held", "me", "exit 0");
	args.values["wait"] = "300ms";
	const auto start = std::chrono::steady_clock::now();
	int code = -1;
	std::thread elect([&] { code = pglease::cli::cmd_elect("memory:cli", args); }); // a thread of its own:
	elect.join(); // this thread holds a lease (no nested campaign)
	EXPECT_EQ(code, pglease::cli::exit_not_acquired);
	EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
}

TEST(CliElect, usage_errors_exit_64)
{
	Args no_command = elect_args("e/x", "v", "true");
	no_command.rest.clear();
	EXPECT_EQ(pglease::cli::cmd_elect("memory:cli", no_command), pglease::cli::exit_usage);
	Args no_value = elect_args("e/x", "v", "true");
	no_value.values.erase("value");
	EXPECT_EQ(pglease::cli::cmd_elect("memory:cli", no_value), pglease::cli::exit_usage);
	Args bad_ttl = elect_args("e/x", "v", "true");
	bad_ttl.values["ttl"] = "soon";
	EXPECT_EQ(pglease::cli::cmd_elect("memory:cli", bad_ttl), pglease::cli::exit_usage);
	Args long_value = elect_args("e/x", std::string(pglease::max_value_bytes + 1, 'v'), "true");
	EXPECT_EQ(pglease::cli::cmd_elect("memory:cli", long_value), pglease::cli::exit_usage);
}

TEST(CliLeader, prints_the_leader_and_no_leader_as_text_and_json)
{
	Args args;
	args.values = {{"name", "e/shown"}};
	std::ostringstream none;
	EXPECT_EQ(pglease::cli::cmd_leader("memory:cli", args, none), 0);
	EXPECT_EQ(none.str(), "no leader\n");

	auto locker = pglease::connect("memory:cli");
	ASSERT_TRUE(locker);
	auto held = (*locker)->campaign("e/shown", "a \"quoted\"\tvalue");
	ASSERT_TRUE(held) << held.error();
	const std::string term = std::to_string(held->term());
	std::ostringstream text;
	EXPECT_EQ(pglease::cli::cmd_leader("memory:cli", args, text), 0);
	EXPECT_EQ(text.str().rfind("a \"quoted\"\\x09value term " + term + " since 20", 0), 0u) << text.str();
	args.values["json"] = "";
	std::ostringstream json;
	EXPECT_EQ(pglease::cli::cmd_leader("memory:cli", args, json), 0);
	EXPECT_EQ(json.str().rfind("{\"leader\":true,\"value\":\"a \\\"quoted\\\"\\tvalue\",\"term\":" + term +
	                               ",\"since\":\"20",
	                           0),
	          0u)
	    << json.str();
}

TEST(CliLeader, json_escapes_every_control_character_and_says_no_leader_with_the_last_term)
{
	pglease::LeaderView view;
	view.has_leader = true;
	view.value = std::string{"\x01\\\n/\xc3\xa9"};
	view.term = 9;
	EXPECT_EQ(pglease::cli::leader_json(view),
	          "{\"leader\":true,\"value\":\"\\u0001\\\\\\n/\xc3\xa9\",\"term\":9,\"since\":null}");
	EXPECT_EQ(pglease::cli::leader_line(view), "\\x01\\\\x0a/\xc3\xa9 term 9");
	view.has_leader = false;
	EXPECT_EQ(pglease::cli::leader_json(view), "{\"leader\":false,\"term\":9}");
	EXPECT_EQ(pglease::cli::leader_line(view), "no leader");
	view.term = 0; // no term known: null, not a claim that none ended
	EXPECT_EQ(pglease::cli::leader_json(view), "{\"leader\":false,\"term\":null}");
}

} // namespace
