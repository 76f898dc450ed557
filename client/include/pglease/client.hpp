// pglease/client.hpp -- Client: the PostgreSQL Locker (connections, the
// extension's SQL API), with its extras: fenced writes, advisory locks,
// token-level calls and status.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <pqxx/transaction>

#include "pglease/error.hpp"
#include "pglease/lease.hpp"
#include "pglease/locker.hpp"
#include "pglease/options.hpp"
#include "pglease/result.hpp"

namespace pglease {

namespace detail {
class PgPool;
class PgLocker;
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
};

/// The PostgreSQL Locker: a connection (pool) to one database with pg_lease.
/// Thread-safe.  No member throws: if construction fails (out of memory),
/// every call answers Errc::internal.
class Client : public Locker {
public:
	explicit Client(std::string conninfo, ClientOptions options = {}) noexcept;
	~Client() override;
	Client(const Client &) = delete;
	Client &operator=(const Client &) = delete;

	/// Acquire with options.wait; Errc::timeout when not granted in time.
	/// Strategy::ephemeral (or session_bound) keeps the grant's connection:
	/// the grant ends with it.
	Result<Lease> acquire(std::string_view resource, const LeaseOptions &options = {}) noexcept override;
	/// acquire with wait = 0.
	Result<Lease> try_acquire(std::string_view resource, LeaseOptions options = {}) noexcept override;
	/// Fencing tokens, fenced writes in the data's own transaction, FIFO
	/// waits, ephemeral grants, durable; survives failover to a synchronous
	/// standby.
	[[nodiscard]] Capabilities capabilities() const noexcept override;
	[[nodiscard]] std::string_view provider() const noexcept override { return "PostgreSQL"; }

	/// Run fn(pqxx::work&) in a transaction that first passes lease.fence:
	/// the writes commit only while the lease is current, and no one else
	/// can be granted it until they do.  The server decides, whatever the
	/// local deadline says.  Errc::lost (LS001) if the token is stale; an
	/// exception thrown by fn rolls back and becomes Errc::internal.
	template <class F> auto fenced(const Lease &lease, F &&fn) noexcept
	{
		return call_in_tx(&Client::run_fenced, &lease, std::string_view{}, std::chrono::milliseconds{0},
		                  std::forward<F>(fn));
	}

	/// Strategy::advisory: run fn(pqxx::work&) in a transaction holding
	/// pg_advisory_xact_lock on the resource, waiting at most `wait`.
	template <class F>
	auto with_advisory(std::string_view resource, std::chrono::milliseconds wait, F &&fn) noexcept
	{
		return call_in_tx(&Client::run_advisory, nullptr, resource, wait, std::forward<F>(fn));
	}

	/// Take the advisory lock in the caller's own transaction.
	static Result<void> advisory_lock(pqxx::work &tx, std::string_view resource,
	                                  std::chrono::milliseconds wait) noexcept;

	/// Token-level calls, for tools that keep tokens outside a Lease (the CLI).
	Result<bool> renew(std::string_view resource, std::int64_t token,
	                   std::chrono::milliseconds ttl) noexcept override;
	Result<bool> release(std::string_view resource, std::int64_t token) noexcept override;
	Result<std::vector<LeaseInfo>> status() noexcept;

	/// The holder label used when LeaseOptions::holder is empty.
	[[nodiscard]] const std::string &default_holder() const noexcept;

private:
	using TxFn = std::function<void(pqxx::work &)>;
	Result<void> run_fenced(const Lease *lease, std::string_view, std::chrono::milliseconds,
	                        const TxFn &fn) noexcept;
	Result<void> run_advisory(const Lease *, std::string_view resource, std::chrono::milliseconds wait,
	                          const TxFn &fn) noexcept;

	template <class F>
	auto call_in_tx(Result<void> (Client::*run)(const Lease *, std::string_view, std::chrono::milliseconds,
	                                            const TxFn &) noexcept,
	                const Lease *lease, std::string_view resource, std::chrono::milliseconds wait,
	                F &&fn) noexcept
	{
		using R = std::invoke_result_t<F, pqxx::work &>;
		if constexpr (std::is_void_v<R>) {
			return (this->*run)(lease, resource, wait, TxFn{[&fn](pqxx::work &tx) { fn(tx); }});
		} else {
			std::optional<R> out;
			Result<void> r =
			    (this->*run)(lease, resource, wait, TxFn{[&](pqxx::work &tx) { out.emplace(fn(tx)); }});
			if (!r)
				return Result<R>{r.error()};
			return Result<R>{std::move(*out)};
		}
	}

	/// Errc::internal when construction failed, else success.
	[[nodiscard]] Result<void> constructed() const noexcept;

	std::shared_ptr<detail::PgPool> pool_;     // null when construction failed
	std::unique_ptr<detail::PgLocker> locker_; // null when construction failed
	std::string construction_error_;
};

} // namespace pglease
