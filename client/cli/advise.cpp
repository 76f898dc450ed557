// advise.cpp -- `pglease advise`: the decision tree of docs/decision-tree.md as a command.
//
// The decision tree, in the order it is applied (each step that decides adds
// one line to Advice::explanation, printed with --explain):
//
// 1. Infrastructure. postgres: the lock lives in the same database as the
//    data, with fencing, and survives failover to a synchronous standby; it is
//    preferred wherever the tree allows it. redis: high throughput, short
//    locks, no fencing; Redlock (3+ independent nodes) for failover.
//    zookeeper/etcd: strong consistency, leader election, fencing by zxid or
//    revision (ZooKeeper is taken when both are listed). memory: one process
//    only, never distributed. With memory alone the advice is refused: more
//    than one instance cannot be coordinated, and one instance needs no
//    distributed lock (a std::mutex does).
// 2. Section < 1s: PostgreSQL Advisory (pg_advisory_xact_lock, safety none);
//    else a simple Redis lock (Lease, none); else ZooKeeper/etcd. --write,
//    --strong and --failover are not consulted: the length decides.
// 3. Else --write: a lease with a fencing token. PostgreSQL Lease; else
//    ZooKeeper/etcd; else Redis Redlock with safety none and a warning that
//    Redis cannot fence.
// 4. Else --strong: PostgreSQL Lease; else ZooKeeper/etcd; else (Redis only)
//    refused: not even Redlock is strongly consistent.
// 5. Else --failover: PostgreSQL Ephemeral (session-bound: a crashed holder
//    frees the lease at once); else Redis Redlock; else ZooKeeper/etcd.
// 6. Else: PostgreSQL Lease; else a single Redis lock (Lease, none); else
//    ZooKeeper/etcd.
//
// Strategies per provider: ZooKeeper is Ephemeral (an ephemeral znode), etcd
// is Lease (an etcd lease). Safety: fencing for PostgreSQL Lease/Ephemeral and
// ZooKeeper/etcd, none for Advisory and Redis.
//
// TTL rule: TTL = 3 x section, so a holder can miss two renewals (renewed at
// TTL/3) before it loses the lock. Lease, Ephemeral and Redlock TTLs are at
// least 1s, so one slow round trip does not lose the lock; PostgreSQL TTLs are
// at most lease.max_ttl's default (1 day, beyond which lease.acquire fails
// with 22023), and renewal covers a longer section. Advisory has no minimum
// and no renewal: the transaction bounds it, enforced with statement_timeout
// and idle_in_transaction_session_timeout set to the TTL.
//
// Code (--emit, at most 20 lines): PostgreSQL as a psql script, or C++ with
// pglease::Client (the PostgreSQL Locker, for fenced() and with_advisory());
// Redis as C++ with pglease::connect("redis://...") or "redlock://..." and
// the Locker/Lease API, on_lost stopping the work.  ZooKeeper and etcd are
// not yet in pglease: one comment line instead.
#include "advise.hpp"

#include "duration.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <string_view>

namespace pglease::cli {

namespace {

using std::chrono::milliseconds;

constexpr milliseconds short_section_limit{std::chrono::seconds{1}};
constexpr milliseconds min_lease_ttl{std::chrono::seconds{1}};
// Default of lease.max_ttl (lease_max_ttl_seconds in extension/lease_args.c).
constexpr milliseconds pg_max_ttl{std::chrono::hours{24}};
constexpr int ttl_sections = 3;
constexpr int renewals_per_ttl = 3;
// The extension's limit on a resource name (22023 beyond it).
constexpr std::size_t max_resource_bytes = 256;

constexpr std::array<std::string_view, 5> known_infra{"postgres", "redis", "zookeeper", "etcd", "memory"};

constexpr std::string_view usage_text =
    "usage: pglease advise --resource NAME --section DURATION --instances N --infra LIST\n"
    "                      [--write] [--strong] [--failover] [--explain] [--emit sql|cpp]\n"
    "\n"
    "Print the lock configuration that fits a job: provider, strategy, TTL, safety.\n"
    "\n"
    "  --resource NAME     the resource to lock (1 to 256 bytes)\n"
    "  --section DURATION  how long the lock is held: 250ms, 30s, 5m, 2h, 1.5s\n"
    "                      (a plain number is seconds)\n"
    "  --instances N       how many processes compete for the lock (1 or more)\n"
    "  --infra LIST        what you already run, comma-separated:\n"
    "                      postgres, redis, zookeeper, etcd, memory\n"
    "  --write             the section writes a shared resource\n"
    "  --strong            strong consistency is required\n"
    "  --failover          a crashed holder must hand the lock over fast\n"
    "  --explain           add one \"# \" line per decision taken\n"
    "  --emit sql|cpp      add an implementation of at most 20 lines: SQL for\n"
    "                      PostgreSQL, C++ for PostgreSQL and Redis (ZooKeeper and etcd:\n"
    "                      not yet in pglease)\n"
    "  --help              print this text\n"
    "\n"
    "Exit status: 0 advice printed, 64 usage error, 65 no configuration fits.\n";

struct Infra {
	bool postgres = false;
	bool redis = false;
	bool zookeeper = false;
	bool etcd = false;
	bool memory = false;

	explicit Infra(const std::set<std::string> &names)
	    : postgres(names.count("postgres") > 0), redis(names.count("redis") > 0),
	      zookeeper(names.count("zookeeper") > 0), etcd(names.count("etcd") > 0),
	      memory(names.count("memory") > 0)
	{
	}

	[[nodiscard]] bool consensus() const noexcept { return zookeeper || etcd; }
	[[nodiscard]] bool distributed() const noexcept { return postgres || redis || consensus(); }
};

enum class Choice { pg_advisory, pg_lease, pg_ephemeral, redis_lock, redlock, consensus };

[[nodiscard]] std::string
join(const std::vector<std::string> &items, std::string_view separator)
{
	std::string joined;
	for (const std::string &item : items) {
		if (!joined.empty())
			joined += separator;
		joined += item;
	}
	return joined;
}

[[nodiscard]] bool
has_control_character(std::string_view text) noexcept
{
	return std::any_of(text.begin(), text.end(), [](char c) {
		const auto byte = static_cast<unsigned char>(c);
		return byte < 0x20 || byte == 0x7f;
	});
}

// validate -- why the input cannot be advised on, or "" when it can.
[[nodiscard]] std::string
validate(const AdviseInput &input)
{
	if (input.resource.empty())
		return "--resource is empty";
	if (input.resource.size() > max_resource_bytes)
		return "--resource is longer than " + std::to_string(max_resource_bytes) + " bytes";
	// The emitted code is line-based; a newline in a name would split it.
	if (has_control_character(input.resource))
		return "--resource contains a control character";
	if (input.section <= milliseconds::zero())
		return "--section must be longer than 0";
	if (input.section.count() > std::numeric_limits<milliseconds::rep>::max() / ttl_sections)
		return "--section is too long";
	if (input.instances < 1)
		return "--instances must be at least 1";
	const bool any_known = std::any_of(known_infra.begin(), known_infra.end(), [&](std::string_view name) {
		return input.infra.count(std::string{name}) > 0;
	});
	if (!any_known)
		return "--infra lists none of postgres, redis, zookeeper, etcd, memory";
	if (!input.emit.empty() && input.emit != "sql" && input.emit != "cpp")
		return "--emit must be sql or cpp, not '" + input.emit + "'";
	return {};
}

// lease_ttl -- 3 x section, at least 1s, and for pg_lease at most max_ttl.
[[nodiscard]] milliseconds
lease_ttl(milliseconds section, bool postgres, std::vector<std::string> &why)
{
	const milliseconds sections = section * ttl_sections;
	const std::string rule = "3 x section " + format_duration(section);
	if (sections < min_lease_ttl) {
		why.push_back("TTL " + format_duration(min_lease_ttl) + ": " + rule + " = " +
		              format_duration(sections) +
		              ", raised to the 1s minimum so one slow renewal does not lose the lock");
		return min_lease_ttl;
	}
	if (postgres && sections > pg_max_ttl) {
		why.push_back("TTL " + format_duration(pg_max_ttl) + ": " + rule + " = " + format_duration(sections) +
		              ", capped at lease.max_ttl (default 1d); renewal covers the longer section");
		return pg_max_ttl;
	}
	why.push_back("TTL " + format_duration(sections) + " = " + rule + ": a holder may miss two renewals");
	return sections;
}

[[nodiscard]] std::string
consensus_name(const Infra &infra)
{
	return infra.zookeeper ? "ZooKeeper" : "etcd";
}

// choose -- steps 2 to 6 of the tree; nullopt (with refusal set) when none fits.
[[nodiscard]] std::optional<Choice>
choose(const AdviseInput &input, const Infra &infra, std::vector<std::string> &why, std::string &refusal)
{
	const std::string section = format_duration(input.section);
	const std::string consensus = consensus_name(infra);

	if (input.section < short_section_limit) {
		why.push_back("section " + section + " < 1s: a short lock, no lease needed");
		if (input.write || input.strong || input.failover)
			why.push_back("--write, --strong and --failover not consulted: a section under 1s is decided by "
			              "its length");
		if (infra.postgres) {
			why.push_back(std::string{"PostgreSQL advisory lock"} +
			              (infra.redis ? " preferred over Redis" : "") +
			              ": same database as the data, no durable write per grant");
			if (input.write)
				why.push_back("--write: an advisory lock covers only writes in its own transaction; "
				              "a write outside PostgreSQL needs a Lease and its fencing token");
			return Choice::pg_advisory;
		}
		if (infra.redis) {
			why.push_back("Redis simple lock (SET NX PX): high throughput for short locks");
			return Choice::redis_lock;
		}
		why.push_back("neither PostgreSQL nor Redis: " + consensus + " lock, a quorum write per grant");
		return Choice::consensus;
	}

	if (input.write) {
		why.push_back("section " + section +
		              " >= 1s with --write: a lease with a fencing token, "
		              "so a holder stalled past its TTL cannot write late");
		if (infra.postgres) {
			why.push_back(
			    "PostgreSQL Lease preferred: lease.fence checks the token in the write's own transaction");
			return Choice::pg_lease;
		}
		if (infra.consensus()) {
			why.push_back(consensus +
			              ": pass its fencing token with every write, the storage rejects older ones");
			return Choice::consensus;
		}
		why.push_back("WARNING: Redis cannot fence: Redlock has no token, and no Redis lock is checked by "
		              "the storage, so a holder paused past its TTL can still write; add postgres (Lease and "
		              "lease.fence), zookeeper or etcd to --infra for fenced writes");
		return Choice::redlock;
	}

	if (input.strong) {
		why.push_back("section " + section + " >= 1s with --strong: a strongly consistent lock service");
		if (infra.postgres) {
			why.push_back("PostgreSQL Lease preferred: fencing, and failover through a synchronous standby");
			return Choice::pg_lease;
		}
		if (infra.consensus()) {
			why.push_back(consensus + ": quorum-replicated, strongly consistent");
			return Choice::consensus;
		}
		refusal = "--strong needs postgres (with a synchronous standby), zookeeper or etcd in --infra: "
		          "Redis, even Redlock, is not strongly consistent";
		return std::nullopt;
	}

	if (input.failover) {
		why.push_back("section " + section + " >= 1s with --failover: a crashed holder must hand over fast");
		if (infra.postgres) {
			why.push_back(
			    "PostgreSQL Ephemeral: the lease is bound to the holder's session and ends at once "
			    "when it dies; hold it on a dedicated connection, not through a transaction-mode pooler");
			return Choice::pg_ephemeral;
		}
		if (infra.redis) {
			why.push_back(
			    "Redis Redlock: a majority of independent nodes keeps the lock available when one fails");
			return Choice::redlock;
		}
		why.push_back(infra.zookeeper ? "ZooKeeper: the lock's ephemeral znode ends with the holder's session"
		                              : "etcd: the lock ends with the holder's etcd lease");
		return Choice::consensus;
	}

	why.push_back("section " + section + " >= 1s, no --write, --strong or --failover: a plain lease");
	if (infra.postgres) {
		why.push_back("PostgreSQL Lease: no extra service, and a fencing token at no extra cost");
		return Choice::pg_lease;
	}
	if (infra.redis) {
		why.push_back("single Redis lock (SET NX PX): nothing here needs more");
		return Choice::redis_lock;
	}
	why.push_back(consensus + ": the only lock service listed");
	return Choice::consensus;
}

// sql_literal -- a standard-conforming SQL string literal.
[[nodiscard]] std::string
sql_literal(std::string_view text)
{
	std::string quoted = "'";
	for (char c : text) {
		if (c == '\'')
			quoted += '\'';
		quoted += c;
	}
	return quoted + "'";
}

// cpp_literal -- a C++ string literal (validate has excluded control characters).
[[nodiscard]] std::string
cpp_literal(std::string_view text)
{
	std::string quoted = "\"";
	for (char c : text) {
		if (c == '"' || c == '\\')
			quoted += '\\';
		quoted += c;
	}
	return quoted + "\"";
}

// chrono_expression -- the duration in the unit format_duration would print it in.
[[nodiscard]] std::string
chrono_expression(milliseconds duration)
{
	using namespace std::chrono;
	const auto count = duration.count();
	if (count != 0 && count % milliseconds{hours{1}}.count() == 0)
		return "std::chrono::hours{" + std::to_string(duration_cast<hours>(duration).count()) + "}";
	if (count != 0 && count % milliseconds{minutes{1}}.count() == 0)
		return "std::chrono::minutes{" + std::to_string(duration_cast<minutes>(duration).count()) + "}";
	if (count % milliseconds{seconds{1}}.count() == 0)
		return "std::chrono::seconds{" + std::to_string(duration_cast<seconds>(duration).count()) + "}";
	return "std::chrono::milliseconds{" + std::to_string(count) + "}";
}

// The advisory key: namespaced so that it cannot meet another application's
// advisory locks, and the same expression as the client's Strategy::advisory
// (client/src/postgres/connection.cpp), so SQL and C++ holders exclude each other.
[[nodiscard]] std::string
advisory_key_sql(const std::string &resource)
{
	return "hashtextextended(" + sql_literal(std::string{advisory_key_prefix}) + " || " +
	       sql_literal(resource) + ", 0)";
}

[[nodiscard]] std::string
emit_sql(const Advice &advice, const AdviseInput &input)
{
	const std::string resource = sql_literal(input.resource);
	const std::string ttl = sql_literal(format_duration(advice.ttl));
	if (advice.strategy == "Advisory")
		return "-- advisory lock on " + resource +
		       ": one transaction, released at COMMIT or ROLLBACK\n"
		       "BEGIN;\n"
		       "-- TTL " +
		       format_duration(advice.ttl) +
		       ": a wait, a statement or an idle pause past it ends the transaction\n"
		       "SET LOCAL statement_timeout = " +
		       ttl +
		       ";\n"
		       "SET LOCAL idle_in_transaction_session_timeout = " +
		       ttl +
		       ";\n"
		       "SELECT pg_advisory_xact_lock(" +
		       advisory_key_sql(input.resource) +
		       ");\n"
		       "-- ... the critical section (" +
		       format_duration(input.section) +
		       "), in this transaction ...\n"
		       "COMMIT;\n";

	const bool ephemeral = advice.strategy == "Ephemeral";
	std::string sql = "-- pg_lease " + advice.strategy + " on " + resource + ": TTL " +
	                  format_duration(advice.ttl) + ", renew every " +
	                  format_duration(advice.ttl / renewals_per_ttl) + ", fence every write\n";
	if (ephemeral)
		sql +=
		    "-- on a dedicated connection (no transaction-mode pooler): the lease ends with this session\n";
	// Waiting one TTL covers a holder that died without releasing.
	sql += "SELECT lease.acquire(" + resource + ", " + ttl + ", wait => " + ttl +
	       (ephemeral ? ", session_bound => true" : "") +
	       ") AS token \\gset\n"
	       "-- token unset (NULL): not granted within the wait; do not enter the section\n"
	       "-- while the section runs, renew; false means the lease is lost: stop\n"
	       "SELECT lease.renew(" +
	       resource + ", :token, " + ttl +
	       ");\n"
	       "-- every write in a transaction that fences first (LS001 if the token is stale)\n"
	       "BEGIN;\n"
	       "SELECT lease.fence(" +
	       resource +
	       ", :token);\n"
	       "-- ... the section's writes ...\n"
	       "COMMIT;\n"
	       "SELECT lease.release(" +
	       resource + ", :token);\n";
	return sql;
}

// lease_options_cpp -- the LeaseOptions of every emitted Lease: TTL, and a
// wait of one TTL, which covers a holder that died without releasing.
[[nodiscard]] std::string
lease_options_cpp(const Advice &advice)
{
	return "pglease::LeaseOptions opts;\n"
	       "opts.ttl = " +
	       chrono_expression(advice.ttl) +
	       ";\n"
	       "opts.wait = " +
	       chrono_expression(advice.ttl) + ";  // covers a holder that died without releasing\n";
}

// acquire_cpp -- take the lease, or return 1 (the function's "not taken").
[[nodiscard]] std::string
acquire_cpp(const std::string &locker, const std::string &resource)
{
	return "auto lease = " + locker + "acquire(" + resource +
	       ", opts);\n"
	       "if (!lease) {\n"
	       "    return 1;  // lease.error().code: timeout = held elsewhere, unavailable = retry later\n"
	       "}\n";
}

[[nodiscard]] std::string
emit_postgres_cpp(const Advice &advice, const AdviseInput &input)
{
	const std::string resource = cpp_literal(input.resource);
	const std::string client = "pglease::Client client{" + cpp_literal(std::string{emit_postgres_url}) +
	                           "};  // your database (URL or key=value)\n";
	if (advice.strategy == "Advisory")
		return "// advisory lock on " + resource + ": one transaction, released at commit or rollback\n" +
		       client + "// waits at most the TTL, " + format_duration(advice.ttl) +
		       " (3 x the section)\n"
		       "auto done = client.with_advisory(" +
		       resource + ", " + chrono_expression(advice.ttl) +
		       ", [&](pqxx::work& tx) {\n"
		       "    // the section, in this transaction: tx.exec(...)\n"
		       "});\n"
		       "if (!done) {\n"
		       "    return 1;  // done.error().code: timeout = the lock stayed busy\n"
		       "}\n";

	const bool ephemeral = advice.strategy == "Ephemeral";
	return "// pg_lease " + advice.strategy + " on " + resource + ": TTL " + format_duration(advice.ttl) +
	       ", renewed every " + format_duration(advice.ttl / renewals_per_ttl) + " by the client\n" + client +
	       lease_options_cpp(advice) +
	       "opts.strategy = pglease::Strategy::" + (ephemeral ? "ephemeral" : "lease") + ";\n" +
	       acquire_cpp("client.", resource) +
	       "auto written = client.fenced(*lease, [&](pqxx::work& tx) {\n"
	       "    // the section's writes: tx.exec(...), committed only if the lease is still held\n"
	       "});\n"
	       "if (!written) {\n"
	       "    return 1;  // written.error(): lost (LS001), another holder has the lease; stop\n"
	       "}\n"
	       "// the lease is released when `lease` goes out of scope\n";
}

// emit_redis_cpp -- the same Locker API over redis:// (one node, a token from
// INCR) or redlock:// (3+ nodes, no token); on_lost is what stops the work,
// since nothing in Redis can reject a late holder's write.
[[nodiscard]] std::string
emit_redis_cpp(const Advice &advice, const AdviseInput &input)
{
	const std::string resource = cpp_literal(input.resource);
	const bool redlock = advice.strategy == "Redlock";
	const std::string renewal = ": TTL " + format_duration(advice.ttl) + ", renewed every " +
	                            format_duration(advice.ttl / renewals_per_ttl) + " by the client\n";
	std::string cpp;
	if (redlock)
		cpp = "// Redlock on " + resource + " over 3+ independent Redis nodes" + renewal +
		      "// no token (lease->token() is 0): writes cannot be fenced; where they must be,\n"
		      "// use PostgreSQL (a Lease and lease.fence) or ZooKeeper/etcd instead\n"
		      "auto locker = pglease::connect(" +
		      cpp_literal(std::string{emit_redlock_url}) + ");  // your 3+ nodes\n";
	else
		cpp = "// Redis lock on " + resource + renewal +
		      "// the token is Redis's INCR counter: only as durable as Redis's AOF (appendfsync always)\n"
		      "auto locker = pglease::connect(" +
		      cpp_literal(std::string{emit_redis_url}) + ");  // your Redis server\n";
	return cpp +
	       "if (!locker) {\n"
	       "    return 1;  // locker.error(): a malformed URL, or pglease::redis not linked in\n"
	       "}\n" +
	       lease_options_cpp(advice) + acquire_cpp("(*locker)->", resource) +
	       "std::atomic<bool> lost{false};\n"
	       "lease->on_lost([&](const pglease::Error&) { lost = true; });\n" +
	       (redlock ? "// the section: work in steps and stop as soon as `lost` is true\n"
	                : "// the section: work in steps and stop as soon as `lost` is true;"
	                  " send lease->token() with each write\n") +
	       "// the lease is released when `lease` goes out of scope\n";
}

// emit_consensus_cpp -- the same Locker API over zookeeper:// (an ephemeral
// sequential znode, token = its czxid) or etcd:// (a key under an etcd lease,
// token = its create revision): fencing tokens the storage can check.
[[nodiscard]] std::string
emit_consensus_cpp(const Advice &advice, const AdviseInput &input)
{
	const std::string resource = cpp_literal(input.resource);
	const bool zookeeper = advice.provider == "ZooKeeper";
	std::string cpp = "// " + advice.provider + " lock on " + resource + ": TTL " +
	                  format_duration(advice.ttl) +
	                  (zookeeper ? " (the session timeout), kept by the session's heartbeat\n"
	                             : " (an etcd lease), kept alive every " +
	                                   format_duration(advice.ttl / renewals_per_ttl) + "\n") +
	                  "// the token is the lock " + (zookeeper ? "znode's czxid" : "key's create revision") +
	                  ": strictly increasing; the storage must\n"
	                  "// reject a write whose token is lower than the highest it has seen\n"
	                  "auto locker = pglease::connect(" +
	                  cpp_literal(std::string{zookeeper ? emit_zookeeper_url : emit_etcd_url}) +
	                  (zookeeper ? ");  // your ensemble\n" : ");  // your cluster\n");
	return cpp +
	       "if (!locker) {\n"
	       "    return 1;  // locker.error(): a malformed URL, or pglease::" +
	       (zookeeper ? "zookeeper" : "etcd") +
	       " not linked in\n"
	       "}\n" +
	       lease_options_cpp(advice) + acquire_cpp("(*locker)->", resource) +
	       "std::atomic<bool> lost{false};\n"
	       "lease->on_lost([&](const pglease::Error&) { lost = true; });\n"
	       "// the section: stop as soon as `lost` is true; send lease->token() with each write\n"
	       "// the lease is released when `lease` goes out of scope\n";
}

// not_in_pglease_line -- the comment line for SQL asked of a provider that is
// not PostgreSQL.
[[nodiscard]] std::string
not_in_pglease_line(const Advice &advice, std::string_view)
{
	return "# " + advice.provider + " takes no SQL: --emit cpp prints the pglease code for it\n";
}

[[nodiscard]] std::string
emit_cpp(const Advice &advice, const AdviseInput &input)
{
	if (advice.provider == "PostgreSQL")
		return emit_postgres_cpp(advice, input);
	if (advice.provider == "Redis")
		return emit_redis_cpp(advice, input);
	return emit_consensus_cpp(advice, input);
}

// Command-line parsing.

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
	constexpr std::array<std::string_view, 5> value_options{"--resource", "--section", "--instances",
	                                                        "--infra", "--emit"};
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
		if (flag != nullptr) {
			if (inline_value) {
				parsed.error = std::string{name} + " takes no value";
				return parsed;
			}
			*flag = true;
			continue;
		}

		if (std::find(value_options.begin(), value_options.end(), name) == value_options.end()) {
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

	std::vector<std::string> missing;
	for (std::string_view required : {"--resource", "--section", "--instances", "--infra"})
		if (seen.count(required) == 0)
			missing.emplace_back(required);
	if (!missing.empty())
		parsed.error = "missing " + join(missing, ", ");
	else
		parsed.error = validate(parsed.input);
	return parsed;
}

} // namespace

AdviseResult
decide(const AdviseInput &input)
{
	AdviseResult result;
	result.refusal = validate(input);
	if (!result.refusal.empty())
		return result;

	const Infra infra{input.infra};
	const std::string instances =
	    std::to_string(input.instances) + (input.instances == 1 ? " instance" : " instances");
	if (!infra.distributed()) {
		if (input.instances > 1)
			result.refusal = "in-memory locks cannot coordinate " + instances +
			                 ": add postgres, redis, zookeeper or etcd to --infra";
		else
			result.refusal = "one instance with in-memory locks only needs no distributed lock: "
			                 "guard the section with a std::mutex in the process";
		return result;
	}

	Advice advice;
	std::vector<std::string> &why = advice.explanation;
	std::vector<std::string> listed;
	for (std::string_view name : known_infra)
		if (input.infra.count(std::string{name}) > 0)
			listed.emplace_back(name);
	why.push_back("infrastructure: " + join(listed, ", ") + "; " + instances);
	if (infra.memory && input.instances > 1)
		why.push_back("memory not used: an in-memory lock cannot span " + instances);
	if (input.instances == 1)
		why.push_back(
		    "1 instance: a distributed lock still covers a second copy started by a restart or deploy");

	const std::optional<Choice> choice = choose(input, infra, why, result.refusal);
	if (!choice)
		return result;

	switch (*choice) {
	case Choice::pg_advisory:
		advice.provider = "PostgreSQL";
		advice.strategy = "Advisory";
		advice.safety = "none";
		advice.ttl = input.section * ttl_sections;
		why.push_back("TTL " + format_duration(advice.ttl) + " = 3 x section " +
		              format_duration(input.section) +
		              ", bounded by the transaction: statement_timeout and "
		              "idle_in_transaction_session_timeout set to it");
		why.push_back("no renewal: the advisory lock ends at COMMIT or ROLLBACK");
		why.push_back("safety none: no token; the lock protects writes in its own transaction only "
		              "(for writes elsewhere, a PostgreSQL Lease and its fencing token)");
		break;
	case Choice::pg_lease:
	case Choice::pg_ephemeral:
		advice.provider = "PostgreSQL";
		advice.strategy = *choice == Choice::pg_lease ? "Lease" : "Ephemeral";
		advice.safety = "fencing";
		advice.ttl = lease_ttl(input.section, true, why);
		why.push_back("renew every " + format_duration(advice.ttl / renewals_per_ttl) + " (TTL/3)");
		why.push_back("safety fencing: every grant's token is larger than all earlier ones, "
		              "and lease.fence rejects a stale one (LS001)");
		break;
	case Choice::redis_lock:
	case Choice::redlock:
		advice.provider = "Redis";
		advice.strategy = *choice == Choice::redis_lock ? "Lease" : "Redlock";
		advice.safety = "none";
		if (*choice == Choice::redlock)
			why.push_back("Redlock needs 3+ independent Redis nodes (5 to survive 2 failures): "
			              "a majority must grant the lock within its TTL");
		advice.ttl = lease_ttl(input.section, false, why);
		why.push_back("renew every " + format_duration(advice.ttl / renewals_per_ttl) +
		              " (TTL/3), extending PX only while the value is still this holder's");
		if (*choice == Choice::redlock)
			why.push_back("safety none: Redlock has no fencing token (token() is 0), so writes cannot be "
			              "fenced; where they must be, use PostgreSQL (Lease and lease.fence) or "
			              "ZooKeeper/etcd instead");
		else
			why.push_back("safety none: the token is Redis's INCR counter, only as durable as Redis's AOF "
			              "(appendfsync always), and Redis checks no write with it; for fenced writes use "
			              "PostgreSQL (Lease and lease.fence) or ZooKeeper/etcd instead");
		break;
	case Choice::consensus:
		advice.provider = consensus_name(infra);
		advice.strategy = infra.zookeeper ? "Ephemeral" : "Lease";
		advice.safety = "fencing";
		advice.ttl = lease_ttl(input.section, false, why);
		why.push_back("renew every " + format_duration(advice.ttl / renewals_per_ttl) +
		              (infra.zookeeper ? " (TTL/3): the session heartbeat; the TTL is the session timeout"
		                               : " (TTL/3): etcd lease keep-alive"));
		why.push_back(infra.zookeeper ? "safety fencing: the lock znode's zxid, checked by the storage"
		                              : "safety fencing: the lock key's revision, checked by the storage");
		break;
	}
	result.advice = std::move(advice);
	return result;
}

std::string
render(const Advice &advice, const AdviseInput &input)
{
	// with --emit sql the whole output is one psql script: what is not SQL is
	// a comment, so it can be piped into psql as it is
	const bool sql = input.emit == "sql" && advice.provider == "PostgreSQL";
	const std::string config = sql ? "-- " : "";
	const std::string note = sql ? "-- " : "# ";
	std::string text =
	    config + "Provider: " + advice.provider + "\n" + config + "Strategy: " + advice.strategy + "\n" +
	    config + "TTL: " + format_duration(advice.ttl) + "\n" + config + "Safety: " + advice.safety + "\n";
	if (input.explain)
		for (const std::string &line : advice.explanation)
			text += note + line + "\n";
	if (input.emit.empty())
		return text;
	if (input.emit == "sql")
		return text + (sql ? emit_sql(advice, input) : not_in_pglease_line(advice, "sql"));
	if (input.emit == "cpp")
		return text + emit_cpp(advice, input);
	return text;
}

int
advise_main(int argc, const char *const *argv, std::ostream &out, std::ostream &err)
{
	const ParsedArgs parsed = parse_args(argc, argv);
	if (parsed.help) {
		out << usage_text;
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
