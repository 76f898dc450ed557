// postgres/locker.hpp -- PgLocker: the PostgreSQL provider (connections, the
// extension's SQL API), a Locker like every other, reached through
// pglease::connect.  Its extras -- fenced writes, advisory locks, status --
// are the free functions of pglease/postgres.hpp and pglease/status.hpp,
// which find it behind a Locker (postgres/postgres.cpp).  Private to the
// library.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <pqxx/transaction>

#include "detail/locker_base.hpp"
#include "pglease/error.hpp"
#include "pglease/lease.hpp"
#include "pglease/locker.hpp"
#include "pglease/options.hpp"
#include "pglease/result.hpp"
#include "pglease/status.hpp"

namespace pglease::detail {

class PgPool;

/// fn(pqxx::work&) run in a transaction the provider opened.
using PgSection = std::function<void(pqxx::work &)>;

/// The PostgreSQL Locker: a connection (pool) to one database with pg_lease.
/// Thread-safe.  No member throws: if construction fails (out of memory),
/// every call answers Errc::internal.
///
/// acquire waits at most options.wait (Errc::timeout when not granted in
/// time); Strategy::ephemeral (or session_bound) keeps the grant's
/// connection: the grant ends with it.  renew and release (token-level, for
/// tools that keep tokens outside a Lease, like the CLI) act on the exact
/// (resource, token), and with a holder only if lease.grants names it.
class PgLocker : public LockerBase {
public:
	PgLocker(std::string conninfo, ClientOptions options) noexcept;
	~PgLocker() override;
	PgLocker(const PgLocker &) = delete;
	PgLocker &operator=(const PgLocker &) = delete;

	/// Fencing tokens, fenced writes in the data's own transaction, FIFO
	/// waits, ephemeral grants, durable; survives failover to a synchronous
	/// standby.
	[[nodiscard]] Capabilities capabilities() const noexcept override;
	[[nodiscard]] std::string_view provider() const noexcept override { return "PostgreSQL"; }
	[[nodiscard]] Result<void> constructed() const noexcept override;

	/// pglease::fenced: fn in a transaction that first passes lease.fence.
	Result<void> run_fenced(const Lease &lease, const PgSection &section) noexcept;
	/// pglease::with_advisory: fn in a transaction holding the advisory lock.
	Result<void> run_advisory(std::string_view resource, std::chrono::milliseconds wait,
	                          const PgSection &section) noexcept;
	/// pglease::status: the rows of lease.leases.
	Result<std::vector<LeaseInfo>> status() noexcept;

protected:
	Result<Granted> grant(std::string_view resource, const LeaseOptions &options, const std::string &holder,
	                      std::chrono::milliseconds heartbeat) override;
	[[nodiscard]] std::chrono::milliseconds max_ttl() const noexcept override;
	Result<bool> renew_by_token(std::string_view resource, std::int64_t token, std::string_view holder,
	                            std::chrono::milliseconds ttl) override;
	Result<bool> release_by_token(std::string_view resource, std::int64_t token,
	                              std::string_view holder) override;
	// elections: lease.acquire with a value, lease.leader, lease.observe
	Result<Granted> grant_leadership(std::string_view election, std::string_view value,
	                                 const LeaseOptions &options, const std::string &holder,
	                                 std::chrono::milliseconds heartbeat) override;
	Result<LeaderView> read_leader(std::string_view election) override;
	Result<LeaderView> next_leader(std::string_view election, const LeaderView &seen,
	                               std::chrono::steady_clock::time_point deadline) override;

private:
	Result<Granted> take(std::string_view resource, const LeaseOptions &options, const std::string &holder,
	                     const std::string *value);

	std::shared_ptr<PgPool> pool_; // null when construction failed
	std::string construction_error_;
};

} // namespace pglease::detail
