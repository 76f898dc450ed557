// advise_emit.cpp -- the code `pglease advise --emit` prints: at most 20 lines
// that implement the advice.
//
// PostgreSQL as a psql script, or C++ with pglease::connect (the PostgreSQL
// Locker, for fenced() and with_advisory()); Redis, ZooKeeper and etcd as C++
// with pglease::connect("redis://...", "redlock://...", "zookeeper://..." or
// "etcd://...") and the Locker/Lease API, on_lost stopping the work; an
// Election as C++ on any of them: campaign, and observe while following. SQL
// asked of a provider that is not PostgreSQL is one comment line pointing to
// --emit cpp. Every literal is quoted here, so a resource name cannot break
// out of the code it is written into.
#include "advise_emit.hpp"

#include "duration.hpp"
#include "pglease/options.hpp"

#include <string_view>

namespace pglease::cli {

namespace {

using std::chrono::milliseconds;

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
// (pglease/options.hpp, advisory_key_prefix), so SQL and C++ holders exclude
// each other.
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

// The emitters of C++ below take the resource already quoted by
// cpp_literal (emit_cpp quotes it once).

[[nodiscard]] std::string
emit_postgres_cpp(const Advice &advice, const std::string &resource)
{
	const std::string client = "auto locker = pglease::connect(" + cpp_literal(std::string{emit_postgres_url}) +
	                           ");  // your database (URL or key=value)\n"
	                           "if (!locker) {\n"
	                           "    return 1;  // locker.error(): a malformed URL\n"
	                           "}\n";
	if (advice.strategy == "Advisory")
		return "// advisory lock on " + resource + ": one transaction, released at commit or rollback\n" +
		       client + "// waits at most the TTL, " + format_duration(advice.ttl) +
		       " (3 x the section)\n"
		       "auto done = pglease::with_advisory(**locker, " +
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
	       acquire_cpp("(*locker)->", resource) +
	       "auto written = pglease::fenced(**locker, *lease, [&](pqxx::work& tx) {\n"
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
emit_redis_cpp(const Advice &advice, const std::string &resource)
{
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
emit_consensus_cpp(const Advice &advice, const std::string &resource)
{
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

// election_url -- the placeholder URL of the provider's emitted code
[[nodiscard]] std::string_view
election_url(const std::string &provider)
{
	if (provider == "PostgreSQL")
		return emit_postgres_url;
	if (provider == "Redis")
		return emit_redis_url;
	return provider == "ZooKeeper" ? emit_zookeeper_url : emit_etcd_url;
}

// emit_election_cpp -- campaign for the election; while another instance
// leads (the campaign's wait ran out), observe it until it changes and
// campaign again.  The same Locker calls on every provider.
[[nodiscard]] std::string
emit_election_cpp(const Advice &advice, const std::string &election)
{
	const std::string value = "\"host-1:8080\"";
	return "// " + advice.provider + " election " + election + ": one instance leads, TTL " +
	       format_duration(advice.ttl) + " renewed every " + format_duration(advice.ttl / renewals_per_ttl) +
	       "\n"
	       "auto locker = pglease::connect(" +
	       cpp_literal(std::string{election_url(advice.provider)}) +
	       ");  // your server(s)\n"
	       "if (!locker)\n"
	       "    return 1;  // locker.error(): a malformed URL, or the provider not linked in\n" +
	       lease_options_cpp(advice) + "auto leadership = (*locker)->campaign(" + election + ", " + value +
	       ", opts);  // publish your address\n"
	       "pglease::LeaderView seen;  // a follower's last view of the leader: value, term\n"
	       "while (!leadership && leadership.error().code == pglease::Errc::timeout) {\n"
	       "    if (auto next = (*locker)->observe(" +
	       election +
	       ", seen, opts.wait))  // returns at each change\n"
	       "        seen = *next;\n"
	       "    leadership = (*locker)->campaign(" +
	       election + ", " + value +
	       ", opts);\n"
	       "}\n"
	       "if (!leadership)\n"
	       "    return 1;  // leadership.error().code: unavailable = retry later\n"
	       "std::atomic<bool> lost{false};\n"
	       "leadership->on_lost([&](const pglease::Error&) { lost = true; });\n"
	       "// the section: lead while !lost; " +
	       (advice.safety == "fencing" ? "fence each write with" : "send with each write") +
	       " leadership->term(); resigned at scope end\n";
}

// no_sql_line -- the comment line for SQL asked of a provider that is not
// PostgreSQL.
[[nodiscard]] std::string
no_sql_line(const Advice &advice)
{
	return "# " + advice.provider + " takes no SQL: --emit cpp prints the pglease code for it\n";
}

[[nodiscard]] std::string
emit_cpp(const Advice &advice, const AdviseInput &input)
{
	const std::string resource = cpp_literal(input.resource);
	if (advice.strategy == "Election")
		return emit_election_cpp(advice, resource);
	if (advice.provider == "PostgreSQL")
		return emit_postgres_cpp(advice, resource);
	if (advice.provider == "Redis")
		return emit_redis_cpp(advice, resource);
	return emit_consensus_cpp(advice, resource);
}

} // namespace

std::string
emit_code(const Advice &advice, const AdviseInput &input)
{
	if (input.emit == "sql" && advice.strategy == "Election")
		return "# an election takes no SQL here: --emit cpp prints the pglease code for it\n";
	if (input.emit == "sql")
		return advice.provider == "PostgreSQL" ? emit_sql(advice, input) : no_sql_line(advice);
	if (input.emit == "cpp")
		return emit_cpp(advice, input);
	return {};
}

} // namespace pglease::cli
