// advise_test.cpp -- `pglease advise`: every branch of the decision tree, the
// four-line format, the emitted code, the exit codes, and the durations the
// CLI reads and prints. Pure logic, except that the emitted SQL is run in
// psql against the test database (scripts/test.sh exports PGDATABASE); the
// emitted C++ is compiled and run in advise_emit_test.cpp (same executable).
#include "advise.hpp"
#include "duration.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using pglease::cli::Advice;
using pglease::cli::AdviseInput;
using pglease::cli::AdviseResult;
using pglease::cli::decide;
using pglease::cli::format_duration;
using pglease::cli::parse_duration;
using pglease::cli::render;
using std::chrono::milliseconds;

static_assert(pglease::cli::advise_exit_ok == 0);
static_assert(pglease::cli::advise_exit_usage == 64, "EX_USAGE");
static_assert(pglease::cli::advise_exit_refused == 65, "EX_DATAERR");

constexpr std::size_t max_emitted_lines = 20;

::testing::AssertionResult
Contains(const std::string &text, const std::string &part)
{
	if (text.find(part) != std::string::npos)
		return ::testing::AssertionSuccess();
	return ::testing::AssertionFailure() << "expected \"" << part << "\" in:\n" << text;
}

std::vector<std::string>
lines_of(const std::string &text)
{
	std::vector<std::string> lines;
	std::istringstream stream{text};
	for (std::string line; std::getline(stream, line);)
		lines.push_back(line);
	return lines;
}

std::string
joined(const std::vector<std::string> &lines)
{
	std::string text;
	for (const std::string &line : lines)
		text += line + "\n";
	return text;
}

AdviseInput
job(milliseconds section, std::set<std::string> infra, int instances = 8)
{
	AdviseInput input;
	input.resource = "orders";
	input.section = section;
	input.instances = instances;
	input.infra = std::move(infra);
	return input;
}

AdviseInput
with_flags(AdviseInput input, bool write, bool strong, bool failover)
{
	input.write = write;
	input.strong = strong;
	input.failover = failover;
	return input;
}

// The four fields as one string, so a failure shows the whole configuration.
std::string
summary(const AdviseResult &result)
{
	if (!result.advice)
		return "refused: " + result.refusal;
	const Advice &a = *result.advice;
	return a.provider + "/" + a.strategy + "/" + format_duration(a.ttl) + "/" + a.safety;
}

std::string
explanation(const AdviseResult &result)
{
	return result.advice ? joined(result.advice->explanation) : "refused: " + result.refusal;
}

struct CliRun {
	int code;
	std::string out;
	std::string err;
};

CliRun
run(std::vector<std::string> args)
{
	args.insert(args.begin(), "advise");
	std::vector<const char *> argv;
	for (const std::string &arg : args)
		argv.push_back(arg.c_str());
	argv.push_back(nullptr);
	std::ostringstream out, err;
	const int code = pglease::cli::advise_main(static_cast<int>(args.size()), argv.data(), out, err);
	return {code, out.str(), err.str()};
}

const std::vector<std::string> base_args{"--resource",  "orders", "--section", "200ms",
                                         "--instances", "8",      "--infra",   "postgres"};

std::vector<std::string>
base_plus(std::vector<std::string> extra)
{
	std::vector<std::string> args = base_args;
	args.insert(args.end(), extra.begin(), extra.end());
	return args;
}

// The emitted code: what render adds after the four lines and the explanation.
std::vector<std::string>
emitted_lines(const AdviseInput &input)
{
	const AdviseResult result = decide(input);
	if (!result.advice)
		return {"refused: " + result.refusal};
	std::vector<std::string> lines = lines_of(render(*result.advice, input));
	const std::size_t skip = 4 + (input.explain ? result.advice->explanation.size() : 0);
	return {lines.begin() + static_cast<std::ptrdiff_t>(std::min(skip, lines.size())), lines.end()};
}

AdviseInput
emitting(AdviseInput input, std::string language)
{
	input.emit = std::move(language);
	return input;
}

// ---------------------------------------------------------------- durations

TEST(Duration, parse_reads_each_unit)
{
	EXPECT_EQ(parse_duration("250ms"), milliseconds{250});
	EXPECT_EQ(parse_duration("30s"), milliseconds{30'000});
	EXPECT_EQ(parse_duration("5m"), milliseconds{300'000});
	EXPECT_EQ(parse_duration("2h"), milliseconds{7'200'000});
}

TEST(Duration, parse_reads_decimals_exactly)
{
	EXPECT_EQ(parse_duration("1.5s"), milliseconds{1'500});
	EXPECT_EQ(parse_duration("0.25m"), milliseconds{15'000});
	EXPECT_EQ(parse_duration("1.5h"), milliseconds{5'400'000});
	EXPECT_EQ(parse_duration("0.001s"), milliseconds{1});
	EXPECT_EQ(parse_duration("2.50s"), milliseconds{2'500});
	EXPECT_EQ(parse_duration("1.000000000000000000000s"), milliseconds{1'000});
	EXPECT_EQ(parse_duration("3.0ms"), milliseconds{3});
}

TEST(Duration, parse_reads_plain_numbers_as_seconds)
{
	EXPECT_EQ(parse_duration("30"), milliseconds{30'000});
	EXPECT_EQ(parse_duration("1.5"), milliseconds{1'500});
	EXPECT_EQ(parse_duration("007"), milliseconds{7'000});
	EXPECT_EQ(parse_duration("0"), milliseconds{0});
}

TEST(Duration, parse_rejects_empty_signs_and_junk)
{
	for (const char *text :
	     {"",    "-1s", "+1s",   "-5",     "abc",  "10x",  "s",  "ms",   "1 s",  " 1s",  "1s ",
	      "1.s", ".5s", "1..5s", "1.5.5s", "1e3s", "1sms", "1S", "5min", "0x10", "1,5s", "1.-5s"})
		EXPECT_EQ(parse_duration(text), std::nullopt) << "'" << text << "' was accepted";
}

TEST(Duration, parse_rejects_fractions_of_a_millisecond)
{
	for (const char *text : {"0.5ms", "1.0005s", "0.0000001h", "0.00000001h", "1.00000000001s"})
		EXPECT_EQ(parse_duration(text), std::nullopt) << "'" << text << "' was rounded instead of rejected";
}

TEST(Duration, parse_accepts_the_largest_value_and_rejects_overflow)
{
	constexpr auto max = milliseconds::max();
	EXPECT_EQ(parse_duration("9223372036854775807ms"), max);
	EXPECT_EQ(parse_duration("9223372036854775.807s"), max);
	EXPECT_EQ(parse_duration("2562047788015h"), milliseconds{2'562'047'788'015LL * 3'600'000LL});
	for (const char *text : {"9223372036854775808ms", "9223372036854775.808s", "9223372036854775807s",
	                         "2562047788016h", "99999999999999999999999999"})
		EXPECT_EQ(parse_duration(text), std::nullopt) << "'" << text << "' overflowed into a value";
}

TEST(Duration, format_picks_the_largest_exact_unit)
{
	EXPECT_EQ(format_duration(milliseconds{30'000}), "30s");
	EXPECT_EQ(format_duration(milliseconds{300'000}), "5m");
	EXPECT_EQ(format_duration(milliseconds{7'200'000}), "2h");
	EXPECT_EQ(format_duration(milliseconds{1'500}), "1500ms");
	EXPECT_EQ(format_duration(milliseconds{250}), "250ms");
	EXPECT_EQ(format_duration(milliseconds{90'000}), "90s");
	EXPECT_EQ(format_duration(milliseconds{5'400'000}), "90m");
	EXPECT_EQ(format_duration(milliseconds{86'400'000}), "24h");
	EXPECT_EQ(format_duration(milliseconds{1}), "1ms");
}

TEST(Duration, format_of_zero_is_0s)
{
	EXPECT_EQ(format_duration(milliseconds{0}), "0s");
}

TEST(Duration, format_keeps_the_sign_of_a_negative_value)
{
	EXPECT_EQ(format_duration(milliseconds{-1'500}), "-1500ms");
	EXPECT_EQ(format_duration(milliseconds{-30'000}), "-30s");
}

TEST(Duration, format_then_parse_gives_back_the_same_value)
{
	for (const milliseconds value : {0ms, 1ms, 999ms, 1'000ms, 1'500ms, 59'000ms, 60'000ms, 61'000ms,
	                                 3'600'000ms, 3'601'000ms, 86'400'000ms, milliseconds::max()})
		EXPECT_EQ(parse_duration(format_duration(value)), value) << format_duration(value);
}

// --------------------------------------------------- step 1: infrastructure

TEST(AdviseTree, memory_only_with_many_instances_is_refused)
{
	const AdviseResult result = decide(job(2s, {"memory"}, 8));
	EXPECT_FALSE(result.advice) << summary(result);
	EXPECT_TRUE(Contains(result.refusal, "8 instances"));
	EXPECT_TRUE(Contains(result.refusal, "postgres, redis, zookeeper or etcd"));
}

TEST(AdviseTree, memory_only_with_one_instance_is_refused_as_needing_no_distributed_lock)
{
	const AdviseResult result = decide(job(2s, {"memory"}, 1));
	EXPECT_FALSE(result.advice) << summary(result);
	EXPECT_TRUE(Contains(result.refusal, "std::mutex"));
}

TEST(AdviseTree, memory_beside_postgres_is_not_used_for_many_instances)
{
	const AdviseResult result = decide(job(2s, {"memory", "postgres"}, 8));
	EXPECT_EQ(summary(result), "PostgreSQL/Lease/6s/fencing");
	EXPECT_TRUE(Contains(explanation(result), "memory not used"));
}

TEST(AdviseTree, one_instance_still_gets_a_distributed_lock)
{
	const AdviseResult result = decide(job(2s, {"postgres"}, 1));
	EXPECT_EQ(summary(result), "PostgreSQL/Lease/6s/fencing");
	EXPECT_TRUE(Contains(explanation(result), "1 instance"));
}

// ------------------------------------------------ step 2: section under 1s

TEST(AdviseTree, short_section_with_postgres_is_advisory_without_fencing)
{
	const AdviseResult result = decide(job(200ms, {"postgres"}));
	EXPECT_EQ(summary(result), "PostgreSQL/Advisory/600ms/none");
	EXPECT_TRUE(Contains(explanation(result), "statement_timeout"));
}

TEST(AdviseTree, short_section_prefers_postgres_over_redis)
{
	EXPECT_EQ(summary(decide(job(200ms, {"redis", "postgres", "zookeeper"}))),
	          "PostgreSQL/Advisory/600ms/none");
}

TEST(AdviseTree, short_section_with_redis_is_a_simple_redis_lock_of_at_least_1s)
{
	const AdviseResult result = decide(job(200ms, {"redis", "zookeeper"}));
	EXPECT_EQ(summary(result), "Redis/Lease/1s/none");
	EXPECT_TRUE(Contains(explanation(result), "SET NX PX"));
}

TEST(AdviseTree, short_section_without_postgres_or_redis_uses_zookeeper_or_etcd)
{
	EXPECT_EQ(summary(decide(job(200ms, {"zookeeper"}))), "ZooKeeper/Ephemeral/1s/fencing");
	EXPECT_EQ(summary(decide(job(200ms, {"etcd"}))), "etcd/Lease/1s/fencing");
}

TEST(AdviseTree, short_section_is_decided_by_length_whatever_the_flags)
{
	const AdviseResult result = decide(with_flags(job(200ms, {"postgres"}), true, true, true));
	EXPECT_EQ(summary(result), "PostgreSQL/Advisory/600ms/none");
	EXPECT_TRUE(Contains(explanation(result), "not consulted"));
	EXPECT_TRUE(Contains(explanation(result), "a write outside PostgreSQL needs a Lease"));
}

TEST(AdviseTree, section_of_exactly_1s_is_not_short)
{
	EXPECT_EQ(summary(decide(job(999ms, {"postgres"}))), "PostgreSQL/Advisory/2997ms/none");
	EXPECT_EQ(summary(decide(job(1s, {"postgres"}))), "PostgreSQL/Lease/3s/fencing");
}

// ---------------------------------------------------------- step 3: --write

TEST(AdviseTree, write_with_postgres_is_a_fenced_lease)
{
	const AdviseResult result =
	    decide(with_flags(job(2s, {"postgres", "redis", "etcd"}), true, false, false));
	EXPECT_EQ(summary(result), "PostgreSQL/Lease/6s/fencing");
	EXPECT_TRUE(Contains(explanation(result), "lease.fence"));
}

TEST(AdviseTree, write_comes_before_strong_and_failover)
{
	EXPECT_EQ(summary(decide(with_flags(job(2s, {"postgres"}), true, true, true))),
	          "PostgreSQL/Lease/6s/fencing");
	EXPECT_EQ(summary(decide(with_flags(job(2s, {"redis", "etcd"}), true, false, true))),
	          "etcd/Lease/6s/fencing");
}

TEST(AdviseTree, write_without_postgres_uses_zookeeper_then_etcd)
{
	EXPECT_EQ(summary(decide(with_flags(job(2s, {"redis", "zookeeper", "etcd"}), true, false, false))),
	          "ZooKeeper/Ephemeral/6s/fencing");
	EXPECT_EQ(summary(decide(with_flags(job(2s, {"redis", "etcd"}), true, false, false))),
	          "etcd/Lease/6s/fencing");
}

TEST(AdviseTree, write_with_redis_only_is_redlock_and_warns_that_redis_cannot_fence)
{
	const AdviseResult result = decide(with_flags(job(2s, {"redis"}), true, false, false));
	EXPECT_EQ(summary(result), "Redis/Redlock/6s/none");
	EXPECT_TRUE(Contains(explanation(result), "Redis cannot fence"));
	EXPECT_TRUE(Contains(explanation(result), "3+ independent Redis nodes"));
}

// --------------------------------------------------------- step 4: --strong

TEST(AdviseTree, strong_with_postgres_is_a_fenced_lease)
{
	const AdviseResult result = decide(with_flags(job(2s, {"postgres", "zookeeper"}), false, true, false));
	EXPECT_EQ(summary(result), "PostgreSQL/Lease/6s/fencing");
	EXPECT_TRUE(Contains(explanation(result), "synchronous standby"));
}

TEST(AdviseTree, strong_without_postgres_uses_zookeeper_or_etcd)
{
	EXPECT_EQ(summary(decide(with_flags(job(2s, {"redis", "zookeeper"}), false, true, false))),
	          "ZooKeeper/Ephemeral/6s/fencing");
	EXPECT_EQ(summary(decide(with_flags(job(2s, {"redis", "etcd"}), false, true, false))),
	          "etcd/Lease/6s/fencing");
}

TEST(AdviseTree, strong_with_redis_only_is_refused)
{
	const AdviseResult result = decide(with_flags(job(2s, {"redis", "memory"}), false, true, false));
	EXPECT_FALSE(result.advice) << summary(result);
	EXPECT_TRUE(Contains(result.refusal, "--strong"));
	EXPECT_TRUE(Contains(result.refusal, "Redlock"));
}

TEST(AdviseTree, strong_comes_before_failover)
{
	EXPECT_EQ(summary(decide(with_flags(job(2s, {"postgres"}), false, true, true))),
	          "PostgreSQL/Lease/6s/fencing");
	EXPECT_EQ(summary(decide(with_flags(job(2s, {"redis", "etcd"}), false, true, true))),
	          "etcd/Lease/6s/fencing");
}

// ------------------------------------------------------- step 5: --failover

TEST(AdviseTree, failover_with_postgres_is_a_session_bound_ephemeral_lease)
{
	const AdviseResult result = decide(with_flags(job(10s, {"postgres", "redis"}), false, false, true));
	EXPECT_EQ(summary(result), "PostgreSQL/Ephemeral/30s/fencing");
	EXPECT_TRUE(Contains(explanation(result), "dedicated connection"));
}

TEST(AdviseTree, failover_without_postgres_is_redlock_on_3_or_more_nodes)
{
	const AdviseResult result = decide(with_flags(job(10s, {"redis", "zookeeper"}), false, false, true));
	EXPECT_EQ(summary(result), "Redis/Redlock/30s/none");
	EXPECT_TRUE(Contains(explanation(result), "3+ independent Redis nodes"));
}

TEST(AdviseTree, failover_without_postgres_or_redis_uses_zookeeper)
{
	EXPECT_EQ(summary(decide(with_flags(job(10s, {"zookeeper"}), false, false, true))),
	          "ZooKeeper/Ephemeral/30s/fencing");
}

// ---------------------------------------------- step 1b: --one-active

AdviseInput
one_active(AdviseInput input)
{
	input.one_active = true;
	return input;
}

TEST(AdviseTree, one_active_with_postgres_is_a_fenced_election_whatever_the_section)
{
	EXPECT_EQ(summary(decide(one_active(job(2s, {"postgres", "redis", "etcd"})))),
	          "PostgreSQL/Election/6s/fencing");
	// a short section is not an advisory lock here: leadership outlives sections
	EXPECT_EQ(summary(decide(one_active(job(200ms, {"postgres"})))), "PostgreSQL/Election/1s/fencing");
	EXPECT_TRUE(
	    Contains(explanation(decide(one_active(job(2s, {"postgres"})))), "lease.fence(election, term)"));
}

TEST(AdviseTree, one_active_without_postgres_uses_zookeeper_then_etcd_elections)
{
	EXPECT_EQ(summary(decide(one_active(job(2s, {"redis", "etcd", "zookeeper"})))),
	          "ZooKeeper/Election/6s/fencing");
	EXPECT_EQ(summary(decide(one_active(job(2s, {"redis", "etcd"})))), "etcd/Election/6s/fencing");
}

TEST(AdviseTree, one_active_with_redis_only_is_an_unfenced_election_and_refused_with_strong)
{
	const AdviseResult result = decide(one_active(job(2s, {"redis"})));
	EXPECT_EQ(summary(result), "Redis/Election/6s/none");
	EXPECT_TRUE(Contains(explanation(result), "Redlock has no election"));
	const AdviseResult strong = decide(one_active(with_flags(job(2s, {"redis"}), false, true, false)));
	EXPECT_FALSE(strong.advice) << summary(strong);
	EXPECT_TRUE(Contains(strong.refusal, "--strong"));
}

TEST(AdviseRender, cpp_election_campaigns_observes_and_names_the_term)
{
	for (const char *infra : {"postgres", "redis", "etcd", "zookeeper"}) {
		AdviseInput input = one_active(job(2s, {infra}));
		input.explain = true;
		const std::vector<std::string> lines = emitted_lines(emitting(input, "cpp"));
		const std::string code = joined(lines);
		EXPECT_LE(lines.size(), max_emitted_lines) << code;
		EXPECT_TRUE(Contains(code, "(*locker)->campaign(\"orders\", ")) << code;
		EXPECT_TRUE(Contains(code, "(*locker)->observe(\"orders\", seen, opts.wait)")) << code;
		EXPECT_TRUE(Contains(code, "leadership->term()")) << code;
		const auto sections = std::count_if(lines.begin(), lines.end(), [](const std::string &line) {
			return line.find(pglease::cli::emit_section_marker) == line.find_first_not_of(' ');
		});
		EXPECT_EQ(sections, 1) << code;
	}
}

TEST(AdviseRender, emit_sql_for_an_election_is_one_comment_line_pointing_to_cpp)
{
	const std::vector<std::string> lines = emitted_lines(emitting(one_active(job(2s, {"postgres"})), "sql"));
	ASSERT_EQ(lines.size(), 1u) << joined(lines);
	EXPECT_TRUE(Contains(lines[0], "--emit cpp")) << lines[0];
}

TEST(AdviseCli, one_active_is_a_switch)
{
	const CliRun result = run(base_plus({"--one-active"}));
	EXPECT_EQ(result.code, 0) << result.err;
	EXPECT_TRUE(Contains(result.out, "Strategy: Election\n")) << result.out;
	EXPECT_EQ(run(base_plus({"--one-active=yes"})).code, pglease::cli::advise_exit_usage);
}

// ------------------------------------------------- step 6: no flag at all

TEST(AdviseTree, plain_long_section_with_postgres_is_a_lease)
{
	EXPECT_EQ(summary(decide(job(5s, {"redis", "postgres", "etcd"}))), "PostgreSQL/Lease/15s/fencing");
}

TEST(AdviseTree, plain_long_section_without_postgres_is_a_single_redis_lock)
{
	const AdviseResult result = decide(job(5s, {"redis", "zookeeper"}));
	EXPECT_EQ(summary(result), "Redis/Lease/15s/none");
	EXPECT_FALSE(Contains(explanation(result), "Redlock")) << "a single lock needs no Redlock";
}

TEST(AdviseTree, plain_long_section_with_etcd_only_is_an_etcd_lease)
{
	EXPECT_EQ(summary(decide(job(5s, {"etcd"}))), "etcd/Lease/15s/fencing");
}

TEST(AdviseTree, zookeeper_is_taken_when_etcd_is_also_listed)
{
	EXPECT_EQ(summary(decide(job(5s, {"etcd", "zookeeper"}))), "ZooKeeper/Ephemeral/15s/fencing");
}

// -------------------------------------------------------------- TTL rule

TEST(AdviseTtl, lease_ttl_is_three_sections_and_renewal_a_third_of_it)
{
	const AdviseResult result = decide(job(20s, {"postgres"}));
	EXPECT_EQ(summary(result), "PostgreSQL/Lease/1m/fencing");
	EXPECT_TRUE(Contains(explanation(result), "renew every 20s (TTL/3)"));
}

TEST(AdviseTtl, lease_ttl_is_at_least_1s)
{
	EXPECT_EQ(decide(job(1ms, {"redis"})).advice->ttl, 1s);
	EXPECT_EQ(decide(job(334ms, {"etcd"})).advice->ttl, 1002ms);
	EXPECT_TRUE(Contains(explanation(decide(job(100ms, {"zookeeper"}))), "raised to the 1s minimum"));
}

TEST(AdviseTtl, advisory_ttl_has_no_minimum_and_no_renewal)
{
	const AdviseResult result = decide(job(100ms, {"postgres"}));
	EXPECT_EQ(summary(result), "PostgreSQL/Advisory/300ms/none");
	EXPECT_TRUE(Contains(explanation(result), "no renewal"));
	EXPECT_FALSE(Contains(explanation(result), "renew every"));
}

TEST(AdviseTtl, postgres_ttl_is_capped_at_max_ttl_but_others_are_not)
{
	const AdviseResult postgres = decide(job(10h, {"postgres"}));
	EXPECT_EQ(summary(postgres), "PostgreSQL/Lease/24h/fencing");
	EXPECT_TRUE(Contains(explanation(postgres), "lease.max_ttl"));
	EXPECT_EQ(summary(decide(job(8h, {"postgres"}))), "PostgreSQL/Lease/24h/fencing") << "exactly max_ttl";
	EXPECT_EQ(summary(decide(job(10h, {"redis"}))), "Redis/Lease/30h/none");
}

TEST(AdviseTtl, decide_refuses_invalid_input_instead_of_guessing)
{
	AdviseInput empty_resource = job(2s, {"postgres"});
	empty_resource.resource.clear();
	AdviseInput bad_emit = job(2s, {"postgres"});
	bad_emit.emit = "xml";
	for (const AdviseInput &input :
	     {job(0ms, {"postgres"}), job(-1s, {"postgres"}), job(milliseconds::max(), {"postgres"}),
	      job(2s, {"postgres"}, 0), job(2s, {"mysql"}), job(2s, {}), empty_resource, bad_emit}) {
		const AdviseResult result = decide(input);
		EXPECT_FALSE(result.advice) << summary(result);
		EXPECT_FALSE(result.refusal.empty());
	}
}

// ------------------------------------------------------------- rendering

TEST(AdviseRender, output_is_exactly_the_four_lines)
{
	const AdviseInput input = job(10s, {"postgres"});
	EXPECT_EQ(render(*decide(input).advice, input),
	          "Provider: PostgreSQL\nStrategy: Lease\nTTL: 30s\nSafety: fencing\n");
	const AdviseInput redis = job(200ms, {"redis"});
	EXPECT_EQ(render(*decide(redis).advice, redis),
	          "Provider: Redis\nStrategy: Lease\nTTL: 1s\nSafety: none\n");
}

TEST(AdviseRender, explain_adds_one_hash_line_per_decision_after_the_four_lines)
{
	AdviseInput input = with_flags(job(2s, {"redis"}), true, false, false);
	input.explain = true;
	const Advice advice = *decide(input).advice;
	const std::vector<std::string> lines = lines_of(render(advice, input));
	ASSERT_EQ(lines.size(), 4 + advice.explanation.size());
	EXPECT_EQ(lines[0], "Provider: Redis");
	EXPECT_EQ(lines[3], "Safety: none");
	for (std::size_t i = 0; i < advice.explanation.size(); ++i)
		EXPECT_EQ(lines[4 + i], "# " + advice.explanation[i]);
}

TEST(AdviseRender, every_postgres_strategy_emits_at_most_20_lines_in_either_language)
{
	const std::vector<AdviseInput> inputs{job(200ms, {"postgres"}), job(2s, {"postgres"}),
	                                      with_flags(job(2s, {"postgres"}), false, false, true)};
	for (const AdviseInput &input : inputs)
		for (const char *language : {"sql", "cpp"}) {
			const std::vector<std::string> lines = emitted_lines(emitting(input, language));
			EXPECT_GE(lines.size(), 5u) << language << " for " << summary(decide(input));
			EXPECT_LE(lines.size(), max_emitted_lines) << joined(lines);
		}
}

TEST(AdviseRender, sql_lease_acquires_fences_inside_a_transaction_and_releases)
{
	const std::string sql = joined(emitted_lines(emitting(job(2s, {"postgres"}), "sql")));
	const std::size_t acquire = sql.find("SELECT lease.acquire('orders', '6s', wait => '6s') AS token");
	const std::size_t begin = sql.find("\nBEGIN;\n");
	const std::size_t fence = sql.find("SELECT lease.fence('orders', :token);");
	const std::size_t commit = sql.find("\nCOMMIT;\n");
	const std::size_t release = sql.find("SELECT lease.release('orders', :token);");
	ASSERT_NE(acquire, std::string::npos) << sql;
	EXPECT_TRUE(acquire < begin && begin < fence && fence < commit && commit < release) << sql;
	EXPECT_TRUE(Contains(sql, "SELECT lease.renew('orders', :token, '6s');"));
	EXPECT_FALSE(Contains(sql, "session_bound")) << "a plain Lease must survive a pooler";
}

// Every PostgreSQL strategy, with --explain: the output of `advise --emit sql`
// as it is.
std::vector<AdviseInput>
postgres_sql_jobs(const std::string &resource)
{
	std::vector<AdviseInput> jobs = {job(2s, {"postgres"}),
	                                 with_flags(job(2s, {"postgres"}), false, false, true),
	                                 job(200ms, {"postgres"})};
	for (AdviseInput &input : jobs) {
		input.resource = resource + "/" + std::to_string(&input - jobs.data());
		input.explain = true;
		input.emit = "sql";
	}
	return jobs;
}

TEST(AdviseRender, sql_output_is_comments_or_sql_from_its_first_line)
{
	for (const AdviseInput &input : postgres_sql_jobs("orders")) {
		const std::string out = render(*decide(input).advice, input);
		const std::vector<std::string> lines = lines_of(out);
		ASSERT_GE(lines.size(), 4u);
		EXPECT_EQ(lines[0], "-- Provider: PostgreSQL") << out;
		for (const std::string &line : lines)
			EXPECT_FALSE(line.rfind("Provider:", 0) == 0 || line.rfind("Strategy:", 0) == 0 ||
			             line.rfind("TTL:", 0) == 0 || line.rfind("Safety:", 0) == 0 ||
			             line.rfind("#", 0) == 0)
			    << "not SQL and not a comment: " << line;
	}
}

TEST(AdviseRender, sql_output_runs_in_psql_as_it_is)
{
	ASSERT_NE(std::getenv("PGDATABASE"), nullptr)
	    << "no test database: scripts/test.sh exports PGDATABASE (a database with pg_lease)";
	const std::string file = "/tmp/pglease_advise_" + std::to_string(getpid()) + ".sql";
	for (const AdviseInput &input : postgres_sql_jobs("advise/psql/" + std::to_string(getpid()))) {
		const std::string out = render(*decide(input).advice, input);
		{
			std::ofstream script{file};
			script << out;
		}
		const int status = std::system(("psql -X -q -v ON_ERROR_STOP=1 -f " + file + " >/dev/null").c_str());
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "psql failed on:\n" << out;
	}
	std::remove(file.c_str());
}

TEST(AdviseRender, sql_ephemeral_binds_the_lease_to_the_session)
{
	const std::string sql =
	    joined(emitted_lines(emitting(with_flags(job(2s, {"postgres"}), false, false, true), "sql")));
	EXPECT_TRUE(Contains(sql, "session_bound => true"));
	EXPECT_TRUE(Contains(sql, "lease.fence("));
}

TEST(AdviseRender, sql_advisory_takes_a_transaction_lock_bounded_by_the_ttl)
{
	const std::string sql = joined(emitted_lines(emitting(job(200ms, {"postgres"}), "sql")));
	const std::size_t timeout = sql.find("SET LOCAL statement_timeout = '600ms';");
	const std::size_t lock = sql.find("SELECT pg_advisory_xact_lock(");
	ASSERT_NE(timeout, std::string::npos) << sql;
	EXPECT_LT(sql.find("BEGIN;"), timeout);
	EXPECT_LT(timeout, lock) << "the timeout must bound the wait for the lock";
	EXPECT_LT(lock, sql.find("COMMIT;"));
	// The key the C++ client's with_advisory locks too: SQL and C++ holders must exclude each other.
	EXPECT_TRUE(Contains(sql, "pg_advisory_xact_lock(hashtextextended('pglease:' || 'orders', 0));"));
	EXPECT_FALSE(Contains(sql, "lease.acquire")) << "an advisory lock writes no lease";
}

TEST(AdviseRender, cpp_lease_uses_the_client_api)
{
	const std::string cpp = joined(emitted_lines(emitting(job(2s, {"postgres"}), "cpp")));
	EXPECT_TRUE(Contains(cpp, "auto locker = pglease::connect(\"postgresql://localhost/app\");  // your database"));
	EXPECT_TRUE(Contains(cpp, "opts.ttl = std::chrono::seconds{6};"));
	EXPECT_TRUE(Contains(cpp, "opts.strategy = pglease::Strategy::lease;"));
	EXPECT_TRUE(Contains(cpp, "auto lease = (*locker)->acquire(\"orders\", opts);"));
	EXPECT_TRUE(Contains(cpp, "if (!lease) {"));
	EXPECT_TRUE(Contains(cpp, "pglease::fenced(**locker, *lease, [&](pqxx::work& tx) {"));
}

TEST(AdviseRender, cpp_ephemeral_and_advisory_use_their_strategies)
{
	const std::string ephemeral =
	    joined(emitted_lines(emitting(with_flags(job(2s, {"postgres"}), false, false, true), "cpp")));
	EXPECT_TRUE(Contains(ephemeral, "opts.strategy = pglease::Strategy::ephemeral;"));
	const std::string advisory = joined(emitted_lines(emitting(job(1500ms / 10, {"postgres"}), "cpp")));
	EXPECT_TRUE(Contains(
	    advisory, "pglease::with_advisory(**locker, \"orders\", std::chrono::milliseconds{450}, [&](pqxx::work& tx) {"));
	EXPECT_FALSE(Contains(advisory, "->acquire"));
}

TEST(AdviseRender, cpp_durations_use_the_unit_the_four_lines_print)
{
	EXPECT_TRUE(Contains(joined(emitted_lines(emitting(job(20s, {"postgres"}), "cpp"))),
	                     "opts.ttl = std::chrono::minutes{1};"));
	EXPECT_TRUE(Contains(joined(emitted_lines(emitting(job(1h, {"postgres"}), "cpp"))),
	                     "opts.ttl = std::chrono::hours{3};"));
	EXPECT_TRUE(Contains(joined(emitted_lines(emitting(job(1500ms, {"postgres"}), "cpp"))),
	                     "opts.ttl = std::chrono::milliseconds{4500};"));
}

TEST(AdviseRender, an_emit_language_decide_would_refuse_adds_nothing)
{
	AdviseInput input = job(2s, {"postgres"});
	const Advice advice = *decide(input).advice;
	input.emit = "xml";
	EXPECT_EQ(lines_of(render(advice, input)).size(), 4u);
}

TEST(AdviseRender, emit_sql_for_zookeeper_and_etcd_is_one_comment_line_pointing_to_cpp)
{
	for (const AdviseInput &input : {job(2s, {"zookeeper"}), job(2s, {"etcd"})}) {
		const std::string provider = decide(input).advice->provider;
		const std::vector<std::string> lines = emitted_lines(emitting(input, "sql"));
		ASSERT_EQ(lines.size(), 1u) << joined(lines);
		EXPECT_EQ(lines[0], "# " + provider + " takes no SQL: --emit cpp prints the pglease code for it");
	}
}

TEST(AdviseRender, cpp_for_etcd_and_zookeeper_connects_by_url_and_names_the_fencing_token)
{
	const std::string etcd = joined(emitted_lines(emitting(job(2s, {"etcd"}), "cpp")));
	EXPECT_TRUE(Contains(etcd, "pglease::connect(\"" + std::string{pglease::cli::emit_etcd_url} + "\")"))
	    << etcd;
	EXPECT_TRUE(Contains(etcd, "create revision")) << etcd;
	const std::string zookeeper = joined(emitted_lines(emitting(job(2s, {"zookeeper"}), "cpp")));
	EXPECT_TRUE(
	    Contains(zookeeper, "pglease::connect(\"" + std::string{pglease::cli::emit_zookeeper_url} + "\")"))
	    << zookeeper;
	EXPECT_TRUE(Contains(zookeeper, "czxid")) << zookeeper;
	for (const std::string &cpp : {etcd, zookeeper}) {
		EXPECT_TRUE(Contains(cpp, "lease->on_lost")) << cpp;
		EXPECT_TRUE(Contains(cpp, "lease->token()")) << cpp;
	}
}

TEST(AdviseRender, emit_sql_for_redis_is_one_comment_line_pointing_to_cpp)
{
	for (const AdviseInput &input :
	     {job(200ms, {"redis"}), with_flags(job(2s, {"redis"}), false, false, true)}) {
		const std::vector<std::string> lines = emitted_lines(emitting(input, "sql"));
		ASSERT_EQ(lines.size(), 1u) << joined(lines);
		EXPECT_EQ(lines[0], "# Redis takes no SQL: --emit cpp prints the pglease code for it");
	}
}

TEST(AdviseRender, cpp_redis_lock_connects_by_url_and_uses_the_lease_api)
{
	const std::string cpp = joined(emitted_lines(emitting(job(2s, {"redis"}), "cpp")));
	EXPECT_TRUE(
	    Contains(cpp, "auto locker = pglease::connect(\"redis://127.0.0.1:6379\");  // your Redis server"));
	EXPECT_TRUE(Contains(cpp, "if (!locker) {"));
	EXPECT_TRUE(Contains(cpp, "opts.ttl = std::chrono::seconds{6};"));
	EXPECT_TRUE(Contains(cpp, "opts.wait = std::chrono::seconds{6};"));
	EXPECT_TRUE(Contains(cpp, "auto lease = (*locker)->acquire(\"orders\", opts);"));
	EXPECT_TRUE(Contains(cpp, "if (!lease) {"));
	EXPECT_TRUE(Contains(cpp, "lease->on_lost([&](const pglease::Error&) { lost = true; });"));
	EXPECT_TRUE(Contains(cpp, "stop as soon as `lost` is true"));
	EXPECT_TRUE(Contains(cpp, "the token is Redis's INCR counter: only as durable as Redis's AOF"));
	EXPECT_FALSE(Contains(cpp, "does not implement"));
}

TEST(AdviseRender, cpp_redlock_connects_to_three_nodes_and_says_writes_cannot_be_fenced)
{
	const std::string cpp =
	    joined(emitted_lines(emitting(with_flags(job(2s, {"redis"}), false, false, true), "cpp")));
	EXPECT_TRUE(Contains(cpp, "pglease::connect(\"redlock://redis-a:6379,redis-b:6379,redis-c:6379\");"));
	EXPECT_TRUE(Contains(cpp, "no token (lease->token() is 0): writes cannot be fenced"));
	EXPECT_TRUE(Contains(cpp, "use PostgreSQL (a Lease and lease.fence) or ZooKeeper/etcd instead"));
	EXPECT_TRUE(Contains(cpp, "lease->on_lost("));
	EXPECT_FALSE(Contains(cpp, "token() with each write")) << "there is no token to send";
}

TEST(AdviseRender, explain_says_what_to_use_instead_where_redis_cannot_fence)
{
	for (const AdviseInput &input : {job(2s, {"redis"}), with_flags(job(2s, {"redis"}), false, false, true),
	                                 with_flags(job(2s, {"redis"}), true, false, false)}) {
		const AdviseResult result = decide(input);
		ASSERT_EQ(result.advice->safety, "none") << summary(result);
		EXPECT_TRUE(Contains(explanation(result), "PostgreSQL (Lease and lease.fence) or ZooKeeper/etcd"));
	}
	EXPECT_TRUE(Contains(explanation(decide(with_flags(job(2s, {"redis"}), false, false, true))),
	                     "Redlock has no fencing token (token() is 0)"));
	EXPECT_TRUE(Contains(explanation(decide(job(2s, {"redis"}))), "Redis's INCR counter"));
}

// Every branch of the tree that leads to code: at most 20 lines, one line
// where the section goes, and the emitted C++ is compiled and run for each
// provider in advise_emit_test.cpp.
TEST(AdviseRender, every_cpp_emission_has_at_most_20_lines_and_one_section_line)
{
	const std::vector<AdviseInput> inputs{job(200ms, {"postgres"}),
	                                      job(2s, {"postgres"}),
	                                      with_flags(job(2s, {"postgres"}), false, false, true),
	                                      job(200ms, {"redis"}),
	                                      job(2s, {"redis"}),
	                                      with_flags(job(2s, {"redis"}), true, false, false),
	                                      with_flags(job(2s, {"redis"}), false, false, true)};
	for (AdviseInput input : inputs) {
		input.explain = true;
		const std::vector<std::string> lines = emitted_lines(emitting(input, "cpp"));
		EXPECT_LE(lines.size(), max_emitted_lines) << joined(lines);
		const auto sections = std::count_if(lines.begin(), lines.end(), [](const std::string &line) {
			return line.find(pglease::cli::emit_section_marker) == line.find_first_not_of(' ');
		});
		EXPECT_EQ(sections, 1) << joined(lines);
	}
}

TEST(AdviseRender, emitted_code_quotes_the_resource_name)
{
	AdviseInput input = job(2s, {"postgres"});
	input.resource = R"(O'Brien "a\b")";
	EXPECT_TRUE(
	    Contains(joined(emitted_lines(emitting(input, "sql"))), R"(lease.acquire('O''Brien "a\b"', )"));
	EXPECT_TRUE(Contains(joined(emitted_lines(emitting(input, "cpp"))),
	                     R"((*locker)->acquire("O'Brien \"a\\b\"", opts))"));
}

// ------------------------------------------------------------ the command

TEST(AdviseCli, prints_the_four_lines_and_exits_0)
{
	const CliRun result = run({"--resource", "orders", "--section", "30s", "--instances", "8", "--infra",
	                           "postgres,redis,zookeeper,etcd,memory"});
	EXPECT_EQ(result.code, 0) << result.err;
	EXPECT_EQ(result.out, "Provider: PostgreSQL\nStrategy: Lease\nTTL: 90s\nSafety: fencing\n");
	EXPECT_EQ(result.err, "");
}

TEST(AdviseCli, without_explain_or_emit_prints_at_most_four_lines)
{
	for (const char *flag : {"--write", "--strong", "--failover"}) {
		const CliRun result =
		    run({"--resource", "r", "--section", "2s", "--instances", "2", "--infra", "redis,etcd", flag});
		EXPECT_EQ(result.code, 0) << result.err;
		EXPECT_EQ(lines_of(result.out).size(), 4u) << flag << ":\n" << result.out;
	}
}

TEST(AdviseCli, accepts_option_equals_value)
{
	const CliRun result =
	    run({"--resource=orders", "--section=200ms", "--instances=8", "--infra=redis", "--emit=sql"});
	EXPECT_EQ(result.code, 0) << result.err;
	EXPECT_EQ(lines_of(result.out).size(), 5u) << result.out;
	EXPECT_TRUE(Contains(result.out, "Provider: Redis\n"));
}

TEST(AdviseCli, explain_and_emit_come_after_the_four_lines)
{
	const CliRun result = run(base_plus({"--explain", "--emit", "cpp"}));
	ASSERT_EQ(result.code, 0) << result.err;
	const std::vector<std::string> lines = lines_of(result.out);
	ASSERT_GT(lines.size(), 5u);
	EXPECT_EQ(lines[0], "Provider: PostgreSQL");
	EXPECT_EQ(lines[4].rfind("# ", 0), 0u) << lines[4];
	EXPECT_EQ(lines.back(), "}");
}

TEST(AdviseCli, infra_names_are_trimmed_case_insensitive_and_accept_postgresql)
{
	const CliRun result =
	    run({"--resource", "r", "--section", "2s", "--instances", "2", "--infra", " PostgreSQL , Redis,"});
	EXPECT_EQ(result.code, 0) << result.err;
	EXPECT_TRUE(Contains(result.out, "Provider: PostgreSQL\n"));
	EXPECT_EQ(result.err, "");
}

TEST(AdviseCli, unknown_infra_name_beside_a_known_one_is_reported_and_ignored)
{
	const CliRun result =
	    run({"--resource", "r", "--section", "2s", "--instances", "2", "--infra", "postgress,redis"});
	EXPECT_EQ(result.code, 0);
	EXPECT_TRUE(Contains(result.err, "ignoring unknown infrastructure 'postgress'"));
	EXPECT_TRUE(Contains(result.out, "Provider: Redis\n"));
}

TEST(AdviseCli, help_prints_usage_on_out_and_exits_0)
{
	for (const char *flag : {"--help", "-h"}) {
		const CliRun result = run({flag});
		EXPECT_EQ(result.code, 0);
		EXPECT_TRUE(Contains(result.out, "usage: pglease advise --resource NAME"));
		EXPECT_TRUE(Contains(result.out, "64 usage error, 65 no configuration fits"));
		EXPECT_EQ(result.err, "");
	}
	EXPECT_EQ(run(base_plus({"--help"})).code, 0) << "--help wins over a complete command";
}

TEST(AdviseCli, memory_only_with_many_instances_exits_65_with_the_reason_on_err)
{
	const CliRun result =
	    run({"--resource", "r", "--section", "2s", "--instances", "8", "--infra", "memory"});
	EXPECT_EQ(result.code, 65);
	EXPECT_EQ(result.out, "");
	EXPECT_TRUE(Contains(result.err, "refused: in-memory locks cannot coordinate 8 instances"));
}

TEST(AdviseCli, strong_with_redis_only_exits_65)
{
	const CliRun result =
	    run({"--resource", "r", "--section", "2s", "--instances", "3", "--infra", "redis", "--strong"});
	EXPECT_EQ(result.code, 65);
	EXPECT_EQ(result.out, "");
	EXPECT_TRUE(Contains(result.err, "refused: --strong needs"));
}

TEST(AdviseCli, each_missing_required_option_is_a_usage_error)
{
	for (std::size_t drop = 0; drop < base_args.size(); drop += 2) {
		std::vector<std::string> args = base_args;
		const std::string option = args[drop];
		args.erase(args.begin() + static_cast<std::ptrdiff_t>(drop),
		           args.begin() + static_cast<std::ptrdiff_t>(drop) + 2);
		const CliRun result = run(args);
		EXPECT_EQ(result.code, 64) << "without " << option;
		EXPECT_TRUE(Contains(result.err, "missing " + option));
		EXPECT_EQ(result.out, "");
	}
	EXPECT_EQ(run({}).code, 64);
}

TEST(AdviseCli, bad_arguments_are_usage_errors_that_name_the_problem)
{
	const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
	    {base_plus({"--bogus"}), "unknown option --bogus"},
	    {base_plus({"extra"}), "unexpected argument extra"},
	    {base_plus({"--write=yes"}), "--write takes no value"},
	    {base_plus({"--emit", "xml"}), "--emit must be sql or cpp"},
	    {base_plus({"--emit"}), "--emit needs a value"},
	    {base_plus({"--emit", "--explain"}), "--emit needs a value"},
	    {base_plus({"--instances", "3"}), "--instances given twice"},
	    {{"--resource", "r", "--section", "soon", "--instances", "8", "--infra", "postgres"},
	     "--section: 'soon'"},
	    {{"--resource", "r", "--section", "-1s", "--instances", "8", "--infra", "postgres"},
	     "--section: '-1s'"},
	    {{"--resource", "r", "--section", "0", "--instances", "8", "--infra", "postgres"},
	     "--section must be longer than 0"},
	    {{"--resource", "r", "--section", "9223372036854775807ms", "--instances", "8", "--infra", "postgres"},
	     "--section is too long"},
	    {{"--resource", "r", "--section", "2s", "--instances", "0", "--infra", "postgres"},
	     "--instances must be at least 1"},
	    {{"--resource", "r", "--section", "2s", "--instances", "-1", "--infra", "postgres"},
	     "--instances must be at least 1"},
	    {{"--resource", "r", "--section", "2s", "--instances", "eight", "--infra", "postgres"},
	     "--instances: 'eight'"},
	    {{"--resource", "r", "--section", "2s", "--instances", "3x", "--infra", "postgres"},
	     "--instances: '3x'"},
	    {{"--resource", "r", "--section", "2s", "--instances", "99999999999", "--infra", "postgres"},
	     "--instances: "},
	    {{"--resource", "r", "--section", "2s", "--instances", "8", "--infra", "mysql,oracle"},
	     "--infra lists none"},
	    {{"--resource", "r", "--section", "2s", "--instances", "8", "--infra", ""}, "--infra lists none"},
	    {{"--resource", "", "--section", "2s", "--instances", "8", "--infra", "postgres"},
	     "--resource is empty"},
	    {{"--resource", std::string(257, 'x'), "--section", "2s", "--instances", "8", "--infra", "postgres"},
	     "--resource is longer than 256 bytes"},
	    {{"--resource", "a\nb", "--section", "2s", "--instances", "8", "--infra", "postgres"},
	     "control character"},
	};
	for (const auto &[args, message] : cases) {
		const CliRun result = run(args);
		EXPECT_EQ(result.code, 64) << "expected a usage error for: " << message;
		EXPECT_TRUE(Contains(result.err, message));
		EXPECT_TRUE(Contains(result.err, "pglease advise --help"));
		EXPECT_EQ(result.out, "") << "nothing on out after a usage error";
	}
}

TEST(AdviseCli, resource_of_256_bytes_is_accepted)
{
	const CliRun result = run(
	    {"--resource", std::string(256, 'x'), "--section", "2s", "--instances", "8", "--infra", "postgres"});
	EXPECT_EQ(result.code, 0) << result.err;
}

} // namespace
