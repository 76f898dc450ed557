// pglease/client.hpp -- Client: the PostgreSQL provider (connections, the
// extension's SQL API), a Locker like every other, with its extras:
// token-level calls, status, and fenced writes and advisory locks, whose
// pqxx-typed definitions are in pglease/postgres.hpp.  This header does not
// include libpqxx.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pglease/detail/locker_base.hpp"
#include "pglease/error.hpp"
#include "pglease/lease.hpp"
#include "pglease/locker.hpp"
#include "pglease/options.hpp"
#include "pglease/result.hpp"

namespace pglease {

namespace detail {
class PgPool;
/// The pqxx::work a fenced or advisory section runs in (pglease/postgres.hpp).
class PgTransaction;
using PgWork = std::function<void(PgTransaction &)>;
} // namespace detail

/// One row of lease.leases.
struct LeaseInfo {
	std::string resource;
	std::string holder;
	std::int64_t token = 0;
	std::string owner;
	std::chrono::milliseconds remaining{0};
	bool session_bound = false;
	std::optional<int> waiters;
	Mode mode = Mode::exclusive; ///< Mode::shared: a reader (since pg_lease 0.4.0)
	std::uint32_t limit = 0;     ///< > 0: a permit of a semaphore of that many
};

/// The PostgreSQL Locker: a connection (pool) to one database with pg_lease.
/// Thread-safe.  No member throws: if construction fails (out of memory),
/// every call answers Errc::internal.
///
/// acquire waits at most options.wait (Errc::timeout when not granted in
/// time); Strategy::ephemeral (or session_bound) keeps the grant's
/// connection: the grant ends with it.  renew and release (token-level, for
/// tools that keep tokens outside a Lease, like the CLI) act on the exact
/// (resource, token), and with a holder only if lease.grants names it.
class Client : public detail::LockerBase {
public:
	explicit Client(std::string conninfo, ClientOptions options = {}) noexcept;
	~Client() override;
	Client(const Client &) = delete;
	Client &operator=(const Client &) = delete;

	/// Fencing tokens, fenced writes in the data's own transaction, FIFO
	/// waits, ephemeral grants, durable; survives failover to a synchronous
	/// standby.
	[[nodiscard]] Capabilities capabilities() const noexcept override;
	[[nodiscard]] std::string_view provider() const noexcept override { return "PostgreSQL"; }
	[[nodiscard]] Result<void> constructed() const noexcept override;

	/// Run fn(pqxx::work&) in a transaction that first passes lease.fence:
	/// the writes commit only while the lease is current, and no one else
	/// can be granted it until they do.  The server decides, whatever the
	/// local deadline says.  Errc::lost (LS001) if the token is stale; an
	/// exception thrown by fn rolls back and becomes Errc::internal.
	/// Defined in pglease/postgres.hpp (include it to call this).
	template <class F> auto fenced(const Lease &lease, F &&fn) noexcept;

	/// Strategy::advisory: run fn(pqxx::work&) in a transaction holding
	/// pg_advisory_xact_lock on the resource, waiting at most `wait`.
	/// Defined in pglease/postgres.hpp (include it to call this).
	template <class F>
	auto with_advisory(std::string_view resource, std::chrono::milliseconds wait, F &&fn) noexcept;

	/// Take the advisory lock in the caller's own transaction (a pqxx::work:
	/// include pglease/postgres.hpp to call this).
	static Result<void> advisory_lock(detail::PgTransaction tx, std::string_view resource,
	                                  std::chrono::milliseconds wait) noexcept;

	/// The rows of lease.leases.
	Result<std::vector<LeaseInfo>> status() noexcept;

	/// The holder label used when LeaseOptions::holder is empty.
	[[nodiscard]] const std::string &default_holder() const noexcept;

protected:
	Result<detail::Granted> grant(std::string_view resource, const LeaseOptions &options,
	                              const std::string &holder, std::chrono::milliseconds heartbeat) override;
	[[nodiscard]] std::chrono::milliseconds max_ttl() const noexcept override;
	Result<bool> renew_by_token(std::string_view resource, std::int64_t token, std::string_view holder,
	                            std::chrono::milliseconds ttl) override;
	Result<bool> release_by_token(std::string_view resource, std::int64_t token,
	                              std::string_view holder) override;
	// elections: lease.acquire with a value, lease.leader, lease.observe
	Result<detail::Granted> grant_leadership(std::string_view election, std::string_view value,
	                                         const LeaseOptions &options, const std::string &holder,
	                                         std::chrono::milliseconds heartbeat) override;
	Result<LeaderView> read_leader(std::string_view election) override;
	Result<LeaderView> next_leader(std::string_view election, const LeaderView &seen,
	                               std::chrono::steady_clock::time_point deadline) override;

private:
	Result<detail::Granted> take(std::string_view resource, const LeaseOptions &options,
	                             const std::string &holder, const std::string *value);
	Result<void> run_fenced(const Lease &lease, const detail::PgWork &work) noexcept;
	Result<void> run_advisory(std::string_view resource, std::chrono::milliseconds wait,
	                          const detail::PgWork &work) noexcept;

	std::shared_ptr<detail::PgPool> pool_; // null when construction failed
	std::string construction_error_;
};

} // namespace pglease
