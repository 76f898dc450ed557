// pglease/locker.hpp -- one lock API over every provider of the decision
// tree: Locker, its Capabilities, and connect(url).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>

#include "pglease/election.hpp"
#include "pglease/lease.hpp"
#include "pglease/options.hpp"
#include "pglease/result.hpp"

namespace pglease {

/// What a provider truly gives (asserted by the conformance tests, printed by
/// `pglease advise`).
struct Capabilities {
	bool distributed = false;       ///< shared by processes on many machines
	bool fencing_token = false;     ///< Lease::token() strictly increases per resource
	bool fenced_write = false;      ///< the store itself rejects a stale holder's write
	bool fifo_wait = false;         ///< waiters are granted in arrival order
	bool ephemeral = false;         ///< a grant can end with the client's session
	bool durable = false;           ///< a grant survives a server crash
	bool survives_failover = false; ///< a grant and its token survive losing a server
	bool election = false;          ///< campaign / leader / observe (pglease/election.hpp)
	bool shared_mode = false;       ///< LeaseOptions::mode = Mode::shared (reader-writer leases)
	bool semaphore = false;         ///< LeaseOptions::limit > 0 (counted leases)
	bool reclaim = false;           ///< LeaseOptions::reclaim: a label takes back its own grant
};

/// Takes leases from one provider.  Every member is noexcept and thread-safe;
/// every provider returns the same Lease guard (auto-renewal, conservative
/// local deadline, on_lost once, cancel token, per-thread no-nested rule,
/// release in the destructor) and the same Errc codes.
class Locker {
public:
	virtual ~Locker() = default;

	/// Acquire, waiting at most options.wait; Errc::timeout when not granted
	/// in time, Errc::nested when this thread holds a lease.
	virtual Result<Lease> acquire(std::string_view resource, const LeaseOptions &options = {}) noexcept = 0;
	/// acquire with wait = 0.
	virtual Result<Lease> try_acquire(std::string_view resource, LeaseOptions options = {}) noexcept = 0;
	[[nodiscard]] virtual Capabilities capabilities() const noexcept = 0;

	/// Token-level calls, for tools that keep a token outside a Lease (the
	/// CLI's acquire/renew/release): renew or release the grant (resource,
	/// token) only if it was acquired by `holder` (LeaseOptions::holder, or
	/// the label the CLI's acquire printed).  true: done; false: (resource,
	/// token) is not the current grant, or it is another holder's -- nothing
	/// changed either way.  The holder is matched in the same server-side
	/// step as the renew or release (one statement, script or transaction),
	/// never read first and acted on later.  An empty holder is
	/// Errc::invalid_argument.  A provider that cannot name a grant by its
	/// token (Redlock: no tokens; memory: not shared between processes;
	/// ZooKeeper: a grant is its session's) answers Errc::invalid_argument.
	virtual Result<bool> renew(std::string_view resource, std::int64_t token, std::string_view holder,
	                           std::chrono::milliseconds ttl) noexcept;
	virtual Result<bool> release(std::string_view resource, std::int64_t token,
	                             std::string_view holder) noexcept;
	/// The same without the holder: whoever knows the token renews or
	/// releases the grant.  Kept for existing callers; prefer the calls
	/// above, since a token alone may be guessed or read from the provider
	/// (docs/production.md, "Who may end a lease").
	virtual Result<bool> renew(std::string_view resource, std::int64_t token,
	                           std::chrono::milliseconds ttl) noexcept;
	virtual Result<bool> release(std::string_view resource, std::int64_t token) noexcept;
	/// Leader election (pglease/election.hpp, docs/election.md).  campaign:
	/// become the leader of `election` publishing `value`, waiting at most
	/// options.wait (Errc::timeout), with the same options, rules and
	/// errors as acquire (an election is a lease with a value; the term is
	/// its token).  A provider without elections (Redlock: no tokens to be
	/// terms) answers Errc::invalid_argument and capabilities().election is
	/// false.
	virtual Result<Leadership> campaign(std::string_view election, std::string_view value,
	                                    const LeaseOptions &options = {}) noexcept;
	/// Who leads now, in one round trip, without being a candidate.
	virtual Result<LeaderView> leader(std::string_view election) noexcept;
	/// The first view that differs from `seen` (changed(seen, view)): a new
	/// term, a proclaimed value, or no leader; at once when the election
	/// already differs.  Never a term below seen.term of seen.epoch (a term
	/// of another epoch is reported: its counter started again; see
	/// LeaderView::epoch).  Errc::timeout when
	/// nothing changed within wait.  Start from a default LeaderView (or
	/// leader()'s) and pass back each result.
	virtual Result<LeaderView> observe(std::string_view election, const LeaderView &seen,
	                                   std::chrono::milliseconds wait) noexcept;
	/// The provider's name as `pglease advise` prints it ("PostgreSQL", "Redis", ...).
	[[nodiscard]] virtual std::string_view provider() const noexcept = 0;
};

/// A Locker for a URL: `postgresql://...` or a libpq key=value string
/// (PostgreSQL, a pglease::Client), `memory:` or `memory:NAME` (this
/// process), and the providers whose component is linked in
/// (`redis://host:port[/db]`, `redlock://h1:p1,h2:p2,h3:p3`, over TLS
/// `rediss://...` and `redlocks://...` with `?cacert=&cert=&key=`,
/// `redis+sentinel://s1:p1,s2:p2,s3:p3/MASTER_NAME[/db]`: the master the
/// Sentinels name, followed through a failover, Errc::unavailable meanwhile;
/// `etcd://h1:p1[,h2:p2,...]`, `zookeeper://h1:p1[,h2:p2,...][/chroot]`).
/// A malformed or unknown URL, or a provider not linked in, is
/// Errc::invalid_argument with a message naming the problem.
Result<std::unique_ptr<Locker>> connect(std::string_view url, ClientOptions options = {}) noexcept;

} // namespace pglease
