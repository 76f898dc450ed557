// advise.hpp -- `pglease advise`: which lock configuration fits a job.
//
// Pure decision logic (no database, no libpqxx): from the length of the
// critical section, the number of instances, the infrastructure at hand and
// what must be protected, it picks a provider, a strategy, a TTL and the
// safety it gives, printed in the four-line format. The tree is written for
// users in docs/decision-tree.md, and as applied at the top of
// advise_tree.cpp.
//
// This header is the command's whole interface; its definitions are split by
// job: advise_tree.cpp (decide), advise_render.cpp (render),
// advise_emit.cpp (the code --emit adds) and advise_args.cpp (advise_main).
#ifndef PGLEASE_CLI_ADVISE_HPP
#define PGLEASE_CLI_ADVISE_HPP

#include <array>
#include <chrono>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace pglease::cli {

// Exit codes of advise_main, from sysexits.h so scripts can tell them apart.
inline constexpr int advise_exit_ok = 0;
inline constexpr int advise_exit_usage = 64;   // EX_USAGE: bad or missing arguments
inline constexpr int advise_exit_refused = 65; // EX_DATAERR: no configuration fits

// The placeholder URLs in the code `--emit cpp` prints (each named there in a
// comment, for the user to replace); the test that compiles and runs the
// emitted code substitutes its own servers' URLs for them.
inline constexpr std::string_view emit_postgres_url = "postgresql://localhost/app";
inline constexpr std::string_view emit_redis_url = "redis://127.0.0.1:6379";
inline constexpr std::string_view emit_redlock_url = "redlock://redis-a:6379,redis-b:6379,redis-c:6379";
inline constexpr std::string_view emit_etcd_url = "etcd://etcd-a:2379,etcd-b:2379,etcd-c:2379";
inline constexpr std::string_view emit_zookeeper_url = "zookeeper://zk-a:2181,zk-b:2181,zk-c:2181/pglease";
// Every program `--emit cpp` prints has exactly one line, starting with this
// after its indentation, where the critical section goes.
inline constexpr std::string_view emit_section_marker = "// the section";

// The names --infra knows, in the order the explanation lists them.
inline constexpr std::array<std::string_view, 5> known_infra{"postgres", "redis", "zookeeper", "etcd",
                                                             "memory"};

// A lease is renewed every TTL / renewals_per_ttl (the client's default
// heartbeat), so a holder can miss two renewals before it loses the lock;
// the explanation and the emitted code both say so.
inline constexpr int renewals_per_ttl = 3;

struct AdviseInput {
	std::string resource;
	std::chrono::milliseconds section{0}; // how long the lock is held, typically
	int instances = 0;                    // processes that compete for the lock
	std::set<std::string> infra;          // postgres, redis, zookeeper, etcd, memory
	bool write = false;                   // the section writes a shared resource
	bool strong = false;                  // strong consistency required
	bool failover = false;                // a crashed holder must hand over fast
	bool one_active = false;              // exactly one instance active: a leader election
	bool explain = false;                 // print one "# " line per decision
	std::string emit;                     // "", "sql" or "cpp"
};

struct Advice {
	std::string provider; // Redis, PostgreSQL, ZooKeeper or etcd
	std::string strategy; // Redlock, Advisory, Ephemeral, Lease or Election
	std::chrono::milliseconds ttl{0};
	std::string safety;                   // fencing or none
	std::vector<std::string> explanation; // one sentence per decision, no "# " prefix
};

// advice is std::nullopt when no configuration is possible (or the input is
// invalid); refusal then says why and what to add.
struct AdviseResult {
	std::optional<Advice> advice;
	std::string refusal;
};

// decide -- run the decision tree.
[[nodiscard]] AdviseResult decide(const AdviseInput &input);

// render -- the four lines, then the explanation when input.explain, then the
// code for input.emit ("sql" or "cpp"); every line ends with '\n'.  With
// emit "sql" (PostgreSQL) the four lines and the explanation are SQL comments
// ("-- Provider: PostgreSQL"), so the output is a psql script as it is; SQL
// asked of another provider is one "# " comment line pointing to --emit cpp.
// With emit "cpp" (every provider: PostgreSQL, Redis, ZooKeeper, etcd) the
// code is at most 20 lines: the body of a function returning int (1 when the
// lock is not taken), for a translation unit that includes
// <pglease/pglease.hpp> and <atomic>.  An Election's code campaigns (as a
// follower it observes the leader until it may campaign again) and names its
// guard `leadership`.
[[nodiscard]] std::string render(const Advice &advice, const AdviseInput &input);

// advise_main -- parse argv (argv[0] is "advise"), print the advice on out and
// return advise_exit_ok; a usage error or a refusal is printed on err and
// returns advise_exit_usage or advise_exit_refused. `--help` prints the usage
// on out and returns advise_exit_ok.
[[nodiscard]] int advise_main(int argc, const char *const *argv, std::ostream &out, std::ostream &err);

} // namespace pglease::cli

#endif // PGLEASE_CLI_ADVISE_HPP
