// election_commands.cpp -- `pglease elect` and `pglease leader`
// (election_commands.hpp).
//
// elect is `pglease run` with a campaign in place of an acquire: the same
// spawn and supervision (child_process.hpp), the leadership's lease watched
// as run watches its lease, the term handed to the command as its fencing
// token.  Waiting "forever" is a loop of bounded campaigns, so that no
// provider is asked for an unbounded server-side wait.  --requeue outlasts a
// server that is away: a campaign that failed for a reason that may pass is
// tried again after a growing pause (Retry), and only a failure that will
// not pass, or a signal, ends it.
//
// leader --watch is Locker::observe in a loop, each call bounded so that a
// SIGINT or SIGTERM ends it promptly; observe itself blocks on the
// provider's push mechanism, so a change is printed as it happens.  Where
// the terms started again (a new epoch: a Redis server restarted without its
// data) the next leader is printed all the same, and stderr says why its
// term may be lower.
#include "election_commands.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <optional>
#include <random>
#include <thread>

#include "child_process.hpp"

namespace pglease::cli {

namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

// one campaign call of a campaign without --wait: long, but bounded
constexpr milliseconds campaign_round = 10min;
// a command that ran shorter than this is followed by a pause of as long
// before --requeue campaigns again, so a failing command does not spin
constexpr milliseconds requeue_pause = 1s;
// the longest single observe of --watch: how soon a signal ends it
constexpr milliseconds watch_round = 500ms;
// --requeue through a server that is away: the first pause after a failed
// campaign, doubled after each failure up to the last (each drawn between
// half and all of it, so candidates that lost the server together do not
// come back in step); the longest a candidate may miss a server's return by
constexpr milliseconds retry_first = 200ms;
constexpr milliseconds retry_most = 2s;
// while the server stays away, the failure is said again this often
constexpr auto retry_said_every = 30s;

// What `pglease elect` was asked to do.
struct ElectOptions {
	std::string election;
	std::string value;
	pglease::LeaseOptions lease;
	std::optional<milliseconds> wait; // none: until elected
	milliseconds grace{};
	bool requeue = false;
	std::vector<std::string> command; // after --
};

std::optional<ElectOptions>
parse_elect(const Args &args, std::string &error)
{
	ElectOptions elect;
	elect.election = required(args, "name", error);
	if (!args.has("value"))
		error = "--value is required (what the leader publishes; --value '' for none)";
	else
		elect.value = args.values.at("value");
	auto ttl = duration_arg(args, "ttl", 30s, error);
	auto grace = duration_arg(args, "grace", 5s, error);
	if (args.has("wait"))
		elect.wait = duration_arg(args, "wait", std::nullopt, error);
	if (!error.empty())
		return std::nullopt;
	if (args.rest.empty()) {
		error = "elect needs a command after --";
		return std::nullopt;
	}
	elect.lease.ttl = *ttl;
	// no label: the library's own, with 64 random bits (unique across
	// containers of one host name and PID)
	elect.grace = *grace;
	elect.requeue = args.has("requeue");
	elect.command = args.rest;
	return elect;
}

// campaign -- one campaign by the options: bounded by --wait, or rounds of
// campaign_round until elected (a round's timeout is not an error)
pglease::Result<pglease::Leadership>
campaign(pglease::Locker &locker, const ElectOptions &elect)
{
	pglease::LeaseOptions options = elect.lease;
	if (elect.wait) {
		options.wait = *elect.wait;
		return locker.campaign(elect.election, elect.value, options);
	}
	options.wait = campaign_round;
	for (;;) {
		auto won = locker.campaign(elect.election, elect.value, options);
		if (won || won.error().code != pglease::Errc::timeout)
			return won;
	}
}

// campaigns_again -- whether --requeue campaigns again after a campaign
// failed so: a server away (unavailable, a timeout: --wait's too) or a
// leadership lost as it was won may pass; a refusal (invalid_argument,
// permission), a missing pg_lease or a bug (internal) will not
bool
campaigns_again(const pglease::Error &error)
{
	return pglease::is_retryable(error) || error.code == pglease::Errc::lost;
}

// Retry -- the pauses of --requeue between failed campaigns
class Retry {
public:
	// failed -- say error when it starts a run of failures (or retry_said_every
	// after it was last said), then pause
	void failed(const pglease::Error &error)
	{
		const auto now = std::chrono::steady_clock::now();
		if (failures_++ == 0 || now - said_ >= retry_said_every) {
			say(text_of(error) + " (--requeue: campaigning again until the server answers)");
			said_ = now;
		}
		std::uniform_int_distribution<milliseconds::rep> draw{pause_.count() / 2, pause_.count()};
		std::this_thread::sleep_for(milliseconds{draw(random_)});
		pause_ = std::min(pause_ * 2, retry_most);
	}
	// succeeded -- the campaign got an answer: the next failure starts anew
	void succeeded()
	{
		failures_ = 0;
		pause_ = retry_first;
	}
	[[nodiscard]] bool failing() const { return failures_ > 0; }

private:
	std::minstd_rand random_{std::random_device{}()};
	milliseconds pause_ = retry_first;
	unsigned failures_ = 0;
	std::chrono::steady_clock::time_point said_;
};

// command_status -- the command's own status, 128+N for a signal N
int
command_status(const ChildEnd &end)
{
	if (end.wait_failed)
		return exit_internal;
	if (WIFEXITED(end.status))
		return WEXITSTATUS(end.status);
	if (WIFSIGNALED(end.status))
		return 128 + WTERMSIG(end.status);
	return exit_internal;
}

// lead -- run the command under a won leadership until it exits or the
// leadership is lost, then resign; elect's exit status for this term
int
lead(pglease::Leadership &leadership, const ElectOptions &elect)
{
	const std::string term = std::to_string(leadership.term());
	say("elected term " + term + " of \"" + elect.election + "\"");
	// the callback captures nothing: the renewal thread may call it until the
	// leadership is gone (supervise reads the cancel token)
	leadership.on_lost([](const pglease::Error &e) { say("leadership lost: " + text_of(e)); });
	const pglease::CancelToken cancelled = leadership.cancel_token();
	Spawned command;
	const Environment env{
	    {"PGLEASE_TERM", term}, {"PGLEASE_VALUE", elect.value}, {"PGLEASE_ELECTION", elect.election}};
	if (int rc = spawn_command(elect.command, env, command); rc != 0) {
		say("cannot run " + elect.command[0] + ": " + std::strerror(rc));
		(void)leadership.resign();
		return 127;
	}
	const ChildEnd end = supervise(command, leadership.lease(), cancelled, elect.grace);
	if (end.lost) {
		say("lost term " + term + "; the command was stopped");
		return end.wait_failed ? exit_internal : exit_lost;
	}
	if (auto r = leadership.resign(); !r) {
		if (r.error().code == pglease::Errc::lost) {
			say("lost term " + term + " before the command ended: " + text_of(r.error()));
			return exit_lost;
		}
		say("resigning term " + term + ": " + text_of(r.error()) + " (it ends with its TTL)");
	} else {
		say("resigned term " + term);
	}
	return command_status(end);
}

} // namespace

int
cmd_elect(const std::string &dsn, const Args &args)
{
	std::string error;
	const std::optional<ElectOptions> elect = parse_elect(args, error);
	if (!elect)
		return usage_error(error, "elect");
	int exit_code = 0;
	auto locker = locker_for(dsn, exit_code);
	if (!locker)
		return exit_code;
	Retry retry;
	for (;;) {
		// no command runs: a signal now ends pglease (and its campaign)
		default_signals();
		if (signalled())
			return exit_code;
		if (!retry.failing())
			say("campaigning for \"" + elect->election + "\"");
		auto leadership = campaign(*locker, *elect);
		if (!leadership) {
			// --requeue outlasts a server that is away: only a failure that
			// will not pass ends it (a signal ends the pause, as the campaign)
			if (!elect->requeue || !campaigns_again(leadership.error()))
				return fail(leadership.error());
			retry.failed(leadership.error());
			continue;
		}
		retry.succeeded();
		const auto started = std::chrono::steady_clock::now();
		exit_code = lead(*leadership, *elect);
		if (!elect->requeue || exit_code == 127 || signalled())
			return exit_code;
		if (exit_code != exit_lost && std::chrono::steady_clock::now() - started < requeue_pause)
			std::this_thread::sleep_for(requeue_pause);
	}
}

// ---- leader ---------------------------------------------------------------------

namespace {

// iso8601 -- a time as 2026-01-31T12:00:00.000Z
std::string
iso8601(std::chrono::system_clock::time_point t)
{
	const auto ms = std::chrono::duration_cast<milliseconds>(t.time_since_epoch()).count();
	const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
	std::tm utc{};
	gmtime_r(&seconds, &utc);
	char text[64];
	std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
	              utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
	              static_cast<int>(ms % 1000));
	return text;
}

bool
since_known(const pglease::LeaderView &view)
{
	return view.since != std::chrono::system_clock::time_point{};
}

// hex_byte -- \xHH, or \u00HH in JSON
std::string
escaped_byte(const char *prefix, unsigned char c)
{
	char text[12];
	std::snprintf(text, sizeof text, "%s%02x", prefix, c);
	return text;
}

// json_string -- text as a JSON string (RFC 8259): quote, backslash and
// control characters escaped; a value is valid UTF-8 (the library checks),
// so every other byte is copied
std::string
json_string(const std::string &text)
{
	std::string out = "\"";
	for (const char ch : text) {
		const auto c = static_cast<unsigned char>(ch);
		if (c == '"' || c == '\\')
			out += std::string{'\\', ch};
		else if (c == '\n')
			out += "\\n";
		else if (c == '\t')
			out += "\\t";
		else if (c < 0x20)
			out += escaped_byte("\\u00", c);
		else
			out += ch;
	}
	return out + "\"";
}

// epoch_json -- ,"epoch":"..." where the provider names one (Redis), else nothing
std::string
epoch_json(const pglease::LeaderView &view)
{
	return view.epoch.empty() ? std::string{} : ",\"epoch\":" + json_string(view.epoch);
}

// say_if_epoch_changed -- a watch's word on stderr when the terms started
// again (a Redis server restarted without its data): the next term may be
// lower than the last one printed
void
say_if_epoch_changed(const pglease::LeaderView &before, const pglease::LeaderView &now)
{
	if (!before.epoch.empty() && before.epoch != now.epoch)
		say("the election's epoch changed (" + before.epoch + " -> " +
		    (now.epoch.empty() ? "none" : now.epoch) +
		    "): its term counter started again, as after a restart of a server without its data; "
		    "terms compare only within one epoch");
}

std::atomic<bool> g_stop{false};

void
stop_watching(int)
{
	g_stop = true;
}

} // namespace

std::string
leader_line(const pglease::LeaderView &view)
{
	if (!view.has_leader)
		return "no leader";
	std::string line;
	for (const char ch : view.value) {
		const auto c = static_cast<unsigned char>(ch);
		line += c < 0x20 || c == 0x7f ? escaped_byte("\\x", c) : std::string{ch};
	}
	line += " term " + std::to_string(view.term);
	if (since_known(view))
		line += " since " + iso8601(view.since);
	return line;
}

std::string
leader_json(const pglease::LeaderView &view)
{
	// with no leader, the last term that ended where the provider says it,
	// else null (none ended, or the provider keeps no record of it): a 0
	// would claim that none ended
	if (!view.has_leader)
		return "{\"leader\":false,\"term\":" + (view.term > 0 ? std::to_string(view.term) : "null") +
		       epoch_json(view) + "}";
	return "{\"leader\":true,\"value\":" + json_string(view.value) +
	       ",\"term\":" + std::to_string(view.term) +
	       ",\"since\":" + (since_known(view) ? "\"" + iso8601(view.since) + "\"" : std::string{"null"}) +
	       epoch_json(view) + "}";
}

int
cmd_leader(const std::string &dsn, const Args &args, std::ostream &out)
{
	std::string error;
	const std::string election = required(args, "name", error);
	if (!error.empty())
		return usage_error(error, "leader");
	const bool json = args.has("json");
	int exit_code = 0;
	auto locker = locker_for(dsn, exit_code);
	if (!locker)
		return exit_code;
	auto view = locker->leader(election);
	if (!view)
		return fail(view.error());
	out << (json ? leader_json(*view) : leader_line(*view)) << std::endl;
	if (!args.has("watch"))
		return 0;
	struct sigaction sa {};
	sa.sa_handler = stop_watching;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, nullptr);
	sigaction(SIGTERM, &sa, nullptr);
	pglease::LeaderView seen = *view;
	std::string last_error;
	while (!g_stop) {
		auto next = locker->observe(election, seen, watch_round);
		if (!next) {
			if (next.error().code == pglease::Errc::timeout)
				continue;
			if (next.error().code != pglease::Errc::unavailable)
				return fail(next.error());
			// the server is away: say so once, and keep watching
			if (std::string e = text_of(next.error()); e != last_error)
				say((last_error = e) + " (still watching)");
			std::this_thread::sleep_for(watch_round);
			continue;
		}
		last_error.clear();
		say_if_epoch_changed(seen, *next);
		seen = *next;
		out << (json ? leader_json(seen) : leader_line(seen)) << std::endl;
	}
	return 0;
}

} // namespace pglease::cli
