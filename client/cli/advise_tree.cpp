// advise_tree.cpp -- the decision tree of `pglease advise`: decide() and its steps.
//
// The tree of docs/decision-tree.md, in the order it is applied (each step
// that decides adds one line to Advice::explanation, printed with --explain):
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
// 1b. --one-active (exactly one instance active, the others following): a
//    leader election whatever the section, its term the fencing token.
//    PostgreSQL Election (lease.fence checks the term in the write's
//    transaction); else ZooKeeper/etcd (their own election recipes); else a
//    single Redis node (safety none: Redlock has no election), refused with
//    --strong.  The TTL is the lease rule's: how long a crashed leader
//    blocks the next.
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
// is Lease (an etcd lease), a single Redis lock is Lease (SET NX PX, expiring
// after its TTL).  The line of the explanation that states the choice names
// it as the four lines do ("Redis Lease", "PostgreSQL Advisory"), before any
// other provider and strategy it mentions. Safety: fencing for PostgreSQL Lease/Ephemeral and
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
// Step 1 is decide()'s own; steps 2 to 6 are one function each (choose_*),
// tried in this order by choose().
#include "advise_tree.hpp"

#include "duration.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

namespace pglease::cli {

namespace {

using std::chrono::milliseconds;

constexpr milliseconds short_section_limit{std::chrono::seconds{1}};
constexpr milliseconds min_lease_ttl{std::chrono::seconds{1}};
// Default of lease.max_ttl (lease_max_ttl_seconds in extension/lease_args.c).
constexpr milliseconds pg_max_ttl{std::chrono::hours{24}};
constexpr int ttl_sections = 3;
// The extension's limit on a resource name (22023 beyond it).
constexpr std::size_t max_resource_bytes = 256;

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

enum class Choice {
	pg_advisory,
	pg_lease,
	pg_ephemeral,
	redis_lock,
	redlock,
	consensus,
	pg_election,
	redis_election,
	consensus_election
};

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

} // namespace

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

namespace {

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

// consensus_choice -- the provider and strategy advise_consensus gives, as
// the explanation names them: "ZooKeeper Ephemeral" or "etcd Lease"
[[nodiscard]] std::string
consensus_choice(const Infra &infra)
{
	return infra.zookeeper ? "ZooKeeper Ephemeral (an ephemeral znode)" : "etcd Lease (an etcd lease)";
}

// choose_short -- step 2: a section under 1s is decided by its length alone.
[[nodiscard]] Choice
choose_short(const AdviseInput &input, const Infra &infra, std::vector<std::string> &why)
{
	why.push_back("section " + format_duration(input.section) + " < 1s: a short lock, decided by its length");
	if (input.write || input.strong || input.failover)
		why.push_back("--write, --strong and --failover not consulted: a section under 1s is decided by "
		              "its length");
	if (infra.postgres) {
		why.push_back(std::string{"PostgreSQL Advisory (pg_advisory_xact_lock)"} +
		              (infra.redis ? " preferred over Redis" : "") +
		              ": no lease needed, the transaction bounds the lock; same database as the data, "
		              "no durable write per grant");
		if (input.write)
			why.push_back("--write: an advisory lock covers only writes in its own transaction; "
			              "a write outside PostgreSQL needs a Lease and its fencing token");
		return Choice::pg_advisory;
	}
	if (infra.redis) {
		why.push_back("Redis Lease: a simple lock (SET NX PX) that expires after its TTL, "
		              "high throughput for short locks");
		return Choice::redis_lock;
	}
	why.push_back("neither PostgreSQL nor Redis: " + consensus_choice(infra) + ", a quorum write per grant");
	return Choice::consensus;
}

// choose_write -- step 3: --write wants a fencing token.
[[nodiscard]] Choice
choose_write(const AdviseInput &input, const Infra &infra, std::vector<std::string> &why)
{
	why.push_back("section " + format_duration(input.section) +
	              " >= 1s with --write: a lease with a fencing token, "
	              "so a holder stalled past its TTL cannot write late");
	if (infra.postgres) {
		why.push_back(
		    "PostgreSQL Lease preferred: lease.fence checks the token in the write's own transaction");
		return Choice::pg_lease;
	}
	if (infra.consensus()) {
		why.push_back(consensus_choice(infra) +
		              ": pass its fencing token with every write, the storage rejects older ones");
		return Choice::consensus;
	}
	why.push_back("WARNING: Redis cannot fence: Redis Redlock has no token, and no Redis lock is checked by "
	              "the storage, so a holder paused past its TTL can still write; add postgres (Lease and "
	              "lease.fence), zookeeper or etcd to --infra for fenced writes");
	return Choice::redlock;
}

// choose_strong -- step 4: --strong; nullopt (refusal set) with Redis alone.
[[nodiscard]] std::optional<Choice>
choose_strong(const AdviseInput &input, const Infra &infra, std::vector<std::string> &why,
              std::string &refusal)
{
	why.push_back("section " + format_duration(input.section) +
	              " >= 1s with --strong: a strongly consistent lock service");
	if (infra.postgres) {
		why.push_back("PostgreSQL Lease preferred: fencing, and failover through a synchronous standby");
		return Choice::pg_lease;
	}
	if (infra.consensus()) {
		why.push_back(consensus_choice(infra) + ": quorum-replicated, strongly consistent");
		return Choice::consensus;
	}
	refusal = "--strong needs postgres (with a synchronous standby), zookeeper or etcd in --infra: "
	          "Redis, even Redlock, is not strongly consistent";
	return std::nullopt;
}

// choose_failover -- step 5: --failover wants a crashed holder to hand over fast.
[[nodiscard]] Choice
choose_failover(const AdviseInput &input, const Infra &infra, std::vector<std::string> &why)
{
	why.push_back("section " + format_duration(input.section) +
	              " >= 1s with --failover: a crashed holder must hand over fast");
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
	why.push_back(infra.zookeeper
	                  ? "ZooKeeper Ephemeral: the lock's ephemeral znode ends with the holder's session"
	                  : "etcd Lease: the lock ends with the holder's etcd lease");
	return Choice::consensus;
}

// choose_plain -- step 6: nothing asked beyond a lock held for a while.
[[nodiscard]] Choice
choose_plain(const AdviseInput &input, const Infra &infra, std::vector<std::string> &why)
{
	why.push_back("section " + format_duration(input.section) +
	              " >= 1s, no --write, --strong or --failover: a plain lease");
	if (infra.postgres) {
		why.push_back("PostgreSQL Lease: no extra service, and a fencing token at no extra cost");
		return Choice::pg_lease;
	}
	if (infra.redis) {
		why.push_back("Redis Lease: a single lock (SET NX PX), renewed; nothing here needs more");
		return Choice::redis_lock;
	}
	why.push_back(consensus_choice(infra) + ": the only lock service listed");
	return Choice::consensus;
}

// choose_election -- step 1b: --one-active wants a leader election;
// nullopt (refusal set) for --strong with Redis alone.
[[nodiscard]] std::optional<Choice>
choose_election(const AdviseInput &input, const Infra &infra, std::vector<std::string> &why,
                std::string &refusal)
{
	why.push_back("--one-active: exactly one instance active, the others following it: a leader election "
	              "(campaign, observe), whatever the section's length");
	if (infra.postgres) {
		why.push_back("PostgreSQL Election preferred: the term is a fencing token lease.fence checks in the "
		              "write's own transaction; followers are told of each change by the server");
		return Choice::pg_election;
	}
	if (infra.consensus()) {
		why.push_back(consensus_name(infra) + " Election: " +
		              (infra.zookeeper ? "its leader recipe (sequential ephemeral znodes, watches)"
		                               : "its election recipe (keys under a lease, watches)") +
		              ", the term a fencing token the storage can check");
		return Choice::consensus_election;
	}
	if (input.strong) {
		refusal = "--strong needs postgres (with a synchronous standby), zookeeper or etcd in --infra: "
		          "Redis, even Redlock, is not strongly consistent";
		return std::nullopt;
	}
	why.push_back("Redis Election on one node (Redlock has no election): two leaders are possible "
	              "after a failover of that node, and Redis checks no write with the term; for fenced "
	              "writes add postgres, zookeeper or etcd to --infra");
	return Choice::redis_election;
}

// choose -- steps 1b to 6 of the tree; nullopt (with refusal set) when none fits.
[[nodiscard]] std::optional<Choice>
choose(const AdviseInput &input, const Infra &infra, std::vector<std::string> &why, std::string &refusal)
{
	if (input.one_active)
		return choose_election(input, infra, why, refusal);
	if (input.section < short_section_limit)
		return choose_short(input, infra, why);
	if (input.write)
		return choose_write(input, infra, why);
	if (input.strong)
		return choose_strong(input, infra, why, refusal);
	if (input.failover)
		return choose_failover(input, infra, why);
	return choose_plain(input, infra, why);
}

// explain_infrastructure -- step 1's lines, once a distributed service is listed.
void
explain_infrastructure(const AdviseInput &input, const Infra &infra, const std::string &instances,
                       std::vector<std::string> &why)
{
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
}

// The advice of each choice: provider, strategy, TTL and safety, and the
// lines that explain them.

void
advise_advisory(const AdviseInput &input, Advice &advice)
{
	advice.provider = "PostgreSQL";
	advice.strategy = "Advisory";
	advice.safety = "none";
	advice.ttl = input.section * ttl_sections;
	std::vector<std::string> &why = advice.explanation;
	why.push_back("TTL " + format_duration(advice.ttl) + " = 3 x section " + format_duration(input.section) +
	              ", bounded by the transaction: statement_timeout and "
	              "idle_in_transaction_session_timeout set to it");
	why.push_back("no renewal: the advisory lock ends at COMMIT or ROLLBACK");
	why.push_back("safety none: no token; the lock protects writes in its own transaction only "
	              "(for writes elsewhere, a PostgreSQL Lease and its fencing token)");
}

// renewed_ttl -- the TTL of a renewed lock (lease_ttl), then the line that
// says how often it is renewed, how_renewed following "renew every X".
void
renewed_ttl(const AdviseInput &input, bool postgres, std::string_view how_renewed, Advice &advice)
{
	advice.ttl = lease_ttl(input.section, postgres, advice.explanation);
	advice.explanation.push_back("renew every " + format_duration(advice.ttl / renewals_per_ttl) +
	                             std::string{how_renewed});
}

void
advise_postgres_lease(bool ephemeral, const AdviseInput &input, Advice &advice)
{
	advice.provider = "PostgreSQL";
	advice.strategy = ephemeral ? "Ephemeral" : "Lease";
	advice.safety = "fencing";
	renewed_ttl(input, true, " (TTL/3)", advice);
	advice.explanation.push_back("safety fencing: every grant's token is larger than all earlier ones, "
	                             "and lease.fence rejects a stale one (LS001)");
}

void
advise_redis(bool redlock, const AdviseInput &input, Advice &advice)
{
	advice.provider = "Redis";
	advice.strategy = redlock ? "Redlock" : "Lease";
	advice.safety = "none";
	std::vector<std::string> &why = advice.explanation;
	if (redlock)
		why.push_back("Redlock needs 3+ independent Redis nodes (5 to survive 2 failures): "
		              "a majority must grant the lock within its TTL");
	renewed_ttl(input, false, " (TTL/3), extending PX only while the value is still this holder's", advice);
	if (redlock)
		why.push_back("safety none: Redlock has no fencing token (token() is 0), so writes cannot be "
		              "fenced; where they must be, use PostgreSQL (Lease and lease.fence) or "
		              "ZooKeeper/etcd instead");
	else
		why.push_back("safety none: the token is Redis's INCR counter, only as durable as Redis's AOF "
		              "(appendfsync always), and Redis checks no write with it; for fenced writes use "
		              "PostgreSQL (Lease and lease.fence) or ZooKeeper/etcd instead");
}

void
advise_consensus(const Infra &infra, const AdviseInput &input, Advice &advice)
{
	advice.provider = consensus_name(infra);
	advice.strategy = infra.zookeeper ? "Ephemeral" : "Lease";
	advice.safety = "fencing";
	renewed_ttl(input, false,
	            infra.zookeeper ? " (TTL/3): the session heartbeat; the TTL is the session timeout"
	                            : " (TTL/3): etcd lease keep-alive",
	            advice);
	advice.explanation.push_back(infra.zookeeper
	                                 ? "safety fencing: the lock znode's zxid, checked by the storage"
	                                 : "safety fencing: the lock key's revision, checked by the storage");
}

// advise_election -- an election: a lease with a value, renewed, its TTL
// how long a crashed leader blocks the next one
void
advise_election(Choice choice, const Infra &infra, const AdviseInput &input, Advice &advice)
{
	advice.provider = choice == Choice::pg_election      ? std::string{"PostgreSQL"}
	                  : choice == Choice::redis_election ? std::string{"Redis"}
	                                                     : consensus_name(infra);
	advice.strategy = "Election";
	advice.safety = choice == Choice::redis_election ? "none" : "fencing";
	renewed_ttl(input, choice == Choice::pg_election,
	            " (TTL/3); a crashed leader is replaced within the TTL, a resigned one at once", advice);
	advice.explanation.push_back(
	    choice == Choice::redis_election
	        ? "safety none: the term is Redis's INCR counter, and Redis checks no write with it"
	        : "safety fencing: every term is larger than all earlier ones; pass it with every write "
	          "(PostgreSQL: lease.fence(election, term)) and a deposed leader's write is rejected");
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
	explain_infrastructure(input, infra, instances, advice.explanation);
	const std::optional<Choice> choice = choose(input, infra, advice.explanation, result.refusal);
	if (!choice)
		return result;
	switch (*choice) {
	case Choice::pg_advisory:
		advise_advisory(input, advice);
		break;
	case Choice::pg_lease:
	case Choice::pg_ephemeral:
		advise_postgres_lease(*choice == Choice::pg_ephemeral, input, advice);
		break;
	case Choice::redis_lock:
	case Choice::redlock:
		advise_redis(*choice == Choice::redlock, input, advice);
		break;
	case Choice::consensus:
		advise_consensus(infra, input, advice);
		break;
	case Choice::pg_election:
	case Choice::redis_election:
	case Choice::consensus_election:
		advise_election(*choice, infra, input, advice);
		break;
	}
	result.advice = std::move(advice);
	return result;
}

} // namespace pglease::cli
