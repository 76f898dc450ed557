// redlock/locker.cpp -- the redlock:// provider: leases on a majority of N
// (three or more) independent Redis nodes.
//
// Recipe: Redlock as the Redis distlock page publishes it
// (https://redis.io/docs/latest/develop/clients/patterns/distributed-locks/):
//  1. note the start time, before the first node is asked;
//  2. SET key value NX PX ttl on every node at once (the page advises
//     asking them concurrently: here one thread writes to every node, then
//     polls all their sockets, redlock/round.hpp; no thread per node or
//     per call), the round bounded by a per-node timeout well under the
//     TTL: min(50 ms, ttl/10), reconnects included, and ended as soon as a
//     majority said yes;
//  3. granted only when a majority (N/2+1) said yes and the validity
//     ttl - elapsed - drift is still positive, drift = ttl/100 + 2 ms (the
//     clock-drift allowance); the lease's local deadline is then
//     start + ttl - drift;
//  4. otherwise undo on every node (a node whose answer was lost may have
//     set the key) and retry after a random delay while `wait` allows;
//  5. extend = compare-and-PEXPIRE on every node, valid only on a majority
//     and only while the grant is still valid: an expired grant is never
//     silently re-acquired; release = compare-and-DEL on every node.
//     Every call is written to every node; a round ended by a majority
//     leaves the slower nodes' replies to be read at the next one.
//
// Token: none.  Redlock's own spec gives no monotonic counter (a majority of
// INCRs is not one), so token() is 0 and Capabilities::fencing_token false;
// the token-level renew/release of Locker are refused.  Nor elections
// (capabilities().election false): their term is a fencing token, so
// campaign, leader and observe are refused with Errc::invalid_argument.  The value is a
// random 128-bit hex string per grant plus the holder, "<hex>:<holder>";
// no re-acquire by holder (each grant's value is new), a holder asking again
// waits like anyone else.
//
// Bounds: a round takes at most one per-node timeout, however many nodes are
// frozen, and no longer than a majority takes to say yes; renew and release
// are one round, acquire returns within wait plus two rounds (the last one
// and its undo).  TTLs up to 2^53-1 ms; every
// deadline saturates (deadline_after), and the validity is computed in ms.
//
// Key: pglease:lock:<resource> on every node (the Redis provider's name).
// Waiting: random, growing delays, not woken by releases, not FIFO.  A
// majority of nodes unreachable is Errc::unavailable at once, even with a
// wait: retrying cannot help before they come back.  When a node among
// those that did not answer refused us (wrong credentials, an ACL user
// without the lock key or a command), the round is Errc::permission
// instead: only its administrator can change that.
// Credentials: the URL's [user]:password@, the same AUTH on every node.
#include <random>
#include <thread>

#include "detail/backoff.hpp"
#include "detail/provider.hpp"
#include "redis/component.hpp"
#include "redis/lua.hpp"
#include "redlock/round.hpp"

namespace pglease::detail {

namespace {

using redis::Script;
using redlock::Cluster;
using redlock::Votes;

// redis/lua/redlock_*.lua: SET NX PX, compare-and-PEXPIRE, compare-and-DEL
const Script acquire_script{std::string{redis::lua::redlock_acquire}};
const Script extend_script{std::string{redis::lua::redlock_extend}};
const Script release_script{std::string{redis::lua::redlock_release}};

milliseconds
per_node_timeout(milliseconds ttl) noexcept
{
	return std::max(std::min(milliseconds{50}, ttl / 10), milliseconds{1});
}

milliseconds
drift_of(milliseconds ttl) noexcept
{
	return ttl / 100 + milliseconds{2};
}

// RedlockGrant -- one grant on a majority: its value names it on every node
class RedlockGrant final : public Grant {
public:
	RedlockGrant(std::shared_ptr<Cluster> nodes, std::string key, std::string value, milliseconds ttl,
	             Clock::time_point valid_until)
	    : nodes_(std::move(nodes)), key_(std::move(key)), value_(std::move(value)), ttl_(ttl),
	      valid_until_(valid_until)
	{
	}

	Result<bool> renew(milliseconds ttl) noexcept override
	{
		try {
			auto start = Clock::now();
			if (start >= valid_until_)
				return false; // expired: a majority may belong to someone else by now
			std::size_t n = nodes_->size(), quorum = n / 2 + 1;
			const std::string ms = std::to_string(ttl.count());
			Votes v = nodes_->ask(extend_script, key_, {value_, ms}, per_node_timeout(ttl), quorum);
			auto valid_until = deadline_after(start, ttl - drift_of(ttl));
			if (v.yes >= quorum && Clock::now() < valid_until) {
				valid_until_ = valid_until;
				ttl_ = ttl;
				return true;
			}
			if (v.no > n - quorum)
				return false; // a majority no longer has this grant
			return v.short_of("extended on " + std::to_string(v.yes) + " of " + std::to_string(n) +
			                  " nodes (a majority is " + std::to_string(quorum) + "): ");
		} catch (...) {
			return Error{Errc::internal, "", "out of memory"};
		}
	}

	Result<bool> release() noexcept override
	{
		try {
			const std::size_t quorum = nodes_->size() / 2 + 1;
			Votes v = nodes_->ask(release_script, key_, {value_}, per_node_timeout(ttl_), quorum);
			if (v.yes > 0)
				return true;
			if (v.no == nodes_->size())
				return false;
			return v.short_of("released on no node: ");
		} catch (...) {
			return Error{Errc::internal, "", "out of memory"};
		}
	}

private:
	std::shared_ptr<Cluster> nodes_;
	std::string key_;
	std::string value_;
	milliseconds ttl_;
	Clock::time_point valid_until_;
};

// RedlockLocker -- the acquire rounds of the recipe
class RedlockLocker final : public LockerBase {
public:
	explicit RedlockLocker(std::shared_ptr<Cluster> nodes) : nodes_(std::move(nodes)) {}

	Capabilities capabilities() const noexcept override
	{
		Capabilities c;
		c.distributed = true;
		c.survives_failover = true; // the loss of a minority of nodes
		return c;
	}
	std::string_view provider() const noexcept override { return "Redlock"; }

protected:
	milliseconds drift(milliseconds ttl) const noexcept override { return drift_of(ttl); }
	// 2^53-1 ms, as the Redis provider's (PX is a signed 64-bit count of ms;
	// the same exact bound on both providers)
	milliseconds max_ttl() const noexcept override { return milliseconds{(std::int64_t{1} << 53) - 1}; }

	Result<Granted> grant(std::string_view resource, const LeaseOptions &options, const std::string &holder,
	                      milliseconds) override
	{
		return take(resource, options, holder); // acquire() turns a throw into Errc::internal
	}

	// No elections (capabilities().election false): an election's term is a
	// fencing token, and Redlock has none (see the banner).
	Result<Granted> grant_leadership(std::string_view, std::string_view, const LeaseOptions &,
	                                 const std::string &, milliseconds) override
	{
		return no_elections();
	}
	Result<LeaderView> read_leader(std::string_view) override { return no_elections(); }
	Result<LeaderView> next_leader(std::string_view, const LeaderView &, Clock::time_point) override
	{
		return no_elections();
	}

private:
	static Error no_elections()
	{
		return Error{Errc::invalid_argument, "",
		             "the Redlock provider offers no leader election: a term must be a fencing token, "
		             "and Redlock has none; use redis:// (one node) or redis+sentinel:// for elections"};
	}

	// take -- acquire rounds until granted or options.wait is over
	Result<Granted> take(std::string_view resource, const LeaseOptions &options, const std::string &holder)
	{
		const std::string key = "pglease:lock:" + std::string{resource};
		const std::string ttl = std::to_string(options.ttl.count());
		const std::size_t n = nodes_->size(), quorum = n / 2 + 1;
		const auto give_up = deadline_after(Clock::now(), options.wait);
		Backoff delay{milliseconds{25}, milliseconds{500}};
		for (;;) {
			const std::string value = random_hex128() + ":" + holder;
			auto start = Clock::now();
			Votes v = nodes_->ask(acquire_script, key, {value, ttl}, per_node_timeout(options.ttl), quorum);
			// in ms: a TTL near max_ttl() in the clock's nanoseconds would overflow
			auto elapsed = std::chrono::ceil<milliseconds>(Clock::now() - start);
			if (v.yes >= quorum && options.ttl - elapsed - drift_of(options.ttl) > milliseconds{0}) {
				Granted g;
				g.deadline = deadline_after(start, options.ttl - drift_of(options.ttl));
				g.grant = std::make_unique<RedlockGrant>(nodes_, key, value, options.ttl, g.deadline);
				return g;
			}
			if (v.yes > 0 || v.yes + v.no < n)
				(void)nodes_->ask(release_script, key, {value}, per_node_timeout(options.ttl), n);
			if (v.yes + v.no < quorum)
				return v.short_of("lease \"" + std::string{resource} + "\": only " +
				                  std::to_string(v.yes + v.no) + " of " + std::to_string(n) +
				                  " Redlock nodes answered (a majority is " + std::to_string(quorum) + "): ");
			auto now = Clock::now();
			if (now >= give_up)
				return Error{Errc::timeout, "",
				             "lease \"" + std::string{resource} + "\" not granted within " +
				                 format_duration(options.wait) + " (granted by " + std::to_string(v.yes) +
				                 " of " + std::to_string(n) + " nodes)"};
			auto pause = std::min(delay.next(), std::chrono::ceil<milliseconds>(give_up - now));
			std::this_thread::sleep_for(pause);
		}
	}

	// random_hex128 -- 128 random bits in hex, this grant's name on every node
	std::string random_hex128()
	{
		std::lock_guard<std::mutex> lk(random_mu_);
		std::string hex;
		static const char digits[] = "0123456789abcdef";
		for (int word = 0; word < 4; word++) {
			std::uint32_t bits = random_();
			for (int i = 0; i < 8; i++, bits >>= 4)
				hex.push_back(digits[bits & 0xf]);
		}
		return hex;
	}

	std::shared_ptr<Cluster> nodes_;
	std::mutex random_mu_;
	std::random_device random_;
};

} // namespace

Result<std::unique_ptr<Locker>>
connect_redlock(std::string_view url, const ClientOptions &options)
{
	auto target = redis::parse_url(url, options);
	if (!target)
		return target.error();
	if (!target->redlock || target->nodes.size() < 3)
		return Error{Errc::invalid_argument, "",
		             "redlock:// names three or more independent nodes: redlock://h1:p1,h2:p2,h3:p3"};
	std::vector<std::shared_ptr<redlock::Node>> nodes;
	for (const auto &endpoint : target->nodes)
		nodes.push_back(
		    std::make_shared<redlock::Node>(endpoint, target->db, target->credentials, target->tls, options));
	auto locker = std::make_unique<RedlockLocker>(
	    std::make_shared<Cluster>(std::move(nodes), std::max<std::size_t>(options.max_idle_connections, 1)));
	return handed_out(std::move(locker));
}

} // namespace pglease::detail
