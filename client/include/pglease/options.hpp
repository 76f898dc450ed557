// pglease/options.hpp -- how a client connects and how a lease is taken.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pglease {

/// docs/decision-tree.md: Lease (TTL + fencing), Ephemeral (Lease that also
/// ends with the holder's connection), Advisory (pg_advisory_xact_lock in one
/// transaction, for sections under a second).
enum class Strategy { lease, ephemeral, advisory };

[[nodiscard]] std::string_view to_string(Strategy strategy) noexcept;

/// How a lease shares its resource (docs/shared-leases.md): exclusive, one
/// holder; shared, any number of shared holders and no exclusive one (a
/// reader-writer lease: readers shared, writers exclusive).
enum class Mode { exclusive, shared };

[[nodiscard]] std::string_view to_string(Mode mode) noexcept;

/// The largest semaphore limit (LeaseOptions::limit).
inline constexpr std::uint32_t max_limit = 10000;

struct ClientOptions {
	/// Longest time to establish one connection (libpq connect_timeout).
	std::chrono::milliseconds connect_timeout{std::chrono::seconds{5}};
	/// Reconnect backoff: doubles from initial to max, with jitter.
	std::chrono::milliseconds backoff_initial{std::chrono::milliseconds{100}};
	std::chrono::milliseconds backoff_max{std::chrono::seconds{5}};
	/// Idle connections kept for reuse.
	std::size_t max_idle_connections{4};
	/// Server-side statement timeout beyond an acquire's wait (and for every
	/// other call), so no call blocks much longer than it asked to.
	std::chrono::milliseconds statement_grace{std::chrono::seconds{2}};
	/// TLS material, paths of PEM files, for the providers that speak TLS
	/// (etcds://, ...): the CA the server's certificate must be signed by, and
	/// the client's certificate and key when the server asks for one.  The URL's
	/// query parameters cacert=, cert= and key= set the same; empty = unset.
	/// PostgreSQL takes libpq's own (sslrootcert, sslcert, sslkey, sslmode).
	std::string tls_ca_file;
	std::string tls_cert_file;
	std::string tls_key_file;
};

struct LeaseOptions {
	std::chrono::milliseconds ttl{std::chrono::seconds{30}};
	/// How long acquire may wait for the resource; 0 = try once.
	std::chrono::milliseconds wait{0};
	/// The holder's label (status shows it).  Stored with "~" and 64 random
	/// bits added, so that no two acquires share a grant whatever label they
	/// pass (Lease::holder() is what was stored); empty = a label of the
	/// client's own, unique the same way.
	std::string holder;
	/// Store `holder` exactly as given, so that it names one grant: an acquire
	/// with the same label and reclaim takes that grant back (the same token,
	/// a new expiry) instead of waiting for it, e.g. after this program's
	/// restart, and the token-level renew/release can name it by the label.
	/// The risk: two live processes passing one label with reclaim both hold
	/// the lease at once.  Needs a holder label (22023 without one).
	bool reclaim = false;
	Strategy strategy = Strategy::lease;
	/// Same as strategy = ephemeral.
	bool session_bound = false;
	/// Renew in the background every heartbeat (default TTL/3).
	bool auto_renew = true;
	/// 0 = TTL/3; must be at most TTL/2.
	std::chrono::milliseconds heartbeat{0};
	/// Allow a non-waiting try while this thread holds another lease.
	bool allow_nested_try = false;
	/// Mode::shared: a reader of a reader-writer lease (capabilities().shared_mode).
	Mode mode = Mode::exclusive;
	/// 0: a lock (one holder, or shared holders).  1..max_limit: a permit of
	/// a semaphore of that many (capabilities().semaphore); every holder and
	/// waiter of the resource must name the same limit (Errc::invalid_argument,
	/// SQLSTATE LS003, otherwise).  A permit is exclusive-mode.
	std::uint32_t limit = 0;
};

/// The four-line description of a configuration (docs/decision-tree.md):
///   Provider: PostgreSQL / Strategy: Lease / TTL: 30s / Safety: fencing
[[nodiscard]] std::string describe(const LeaseOptions &options);

/// Advisory locks of Strategy::advisory are taken on
/// hashtextextended(advisory_key_prefix || resource, 0), so they never collide
/// with other users of advisory locks.
inline constexpr std::string_view advisory_key_prefix = "pglease:";

/// The longest resource name and holder label, in bytes, for every provider
/// (the extension's own limits, LEASE_MAX_RESOURCE_BYTES and
/// LEASE_MAX_HOLDER_BYTES).  Both must also be valid UTF-8 without NUL bytes:
/// a name means the same lease on every provider, or it is refused
/// (Errc::invalid_argument) before any I/O.
inline constexpr std::size_t max_resource_bytes = 256;
inline constexpr std::size_t max_holder_bytes = 256;

/// "250ms", "30s", "5m", "2h": the shortest exact form.
[[nodiscard]] std::string format_duration(std::chrono::milliseconds d);

} // namespace pglease
