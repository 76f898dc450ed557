// pglease/locker.hpp -- one lock API over every provider of the decision
// tree: Locker, its Capabilities, and connect(url).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>

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
	/// CLI's acquire/renew/release).  true: done; false: (resource, token) is
	/// not the current grant.  A provider that cannot name a grant by its
	/// token (Redlock: no tokens; memory: not shared between processes)
	/// answers Errc::invalid_argument.
	virtual Result<bool> renew(std::string_view resource, std::int64_t token,
	                           std::chrono::milliseconds ttl) noexcept;
	virtual Result<bool> release(std::string_view resource, std::int64_t token) noexcept;
	/// The provider's name as `pglease advise` prints it ("PostgreSQL", "Redis", ...).
	[[nodiscard]] virtual std::string_view provider() const noexcept = 0;
};

/// A Locker for a URL: `postgresql://...` or a libpq key=value string
/// (PostgreSQL, a pglease::Client), `memory:` or `memory:NAME` (this
/// process), and the providers whose component is linked in
/// (`redis://host:port[/db]`, `redlock://h1:p1,h2:p2,h3:p3`, over TLS
/// `rediss://...` and `redlocks://...` with `?cacert=&cert=&key=`,
/// `etcd://h1:p1[,h2:p2,...]`, `zookeeper://h1:p1[,h2:p2,...][/chroot]`).
/// A malformed or unknown URL, or a provider not linked in, is
/// Errc::invalid_argument with a message naming the problem.
Result<std::unique_ptr<Locker>> connect(std::string_view url, ClientOptions options = {}) noexcept;

} // namespace pglease
