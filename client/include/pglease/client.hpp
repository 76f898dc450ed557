// pglease/client.hpp -- Client (connections, auto-renewal) and Lease (RAII guard).
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
#include "pglease/options.hpp"
#include "pglease/result.hpp"

namespace pglease {

namespace detail {
class ClientCore;
struct LeaseState;
} // namespace detail

/// Fires once, when the lease it belongs to is lost.
class CancelToken {
public:
	CancelToken() = default;
	[[nodiscard]] bool cancelled() const noexcept { return flag_ && flag_->load(); }

private:
	friend class Lease;
	explicit CancelToken(std::shared_ptr<const std::atomic<bool>> flag) : flag_(std::move(flag)) {}
	std::shared_ptr<const std::atomic<bool>> flag_;
};

/// A held lease.  Move-only; the destructor releases it (best effort).
class Lease {
public:
	Lease(Lease &&) noexcept;
	Lease &operator=(Lease &&) noexcept;
	Lease(const Lease &) = delete;
	Lease &operator=(const Lease &) = delete;
	~Lease();

	[[nodiscard]] std::int64_t token() const noexcept;
	[[nodiscard]] const std::string &resource() const noexcept;
	/// Held by the conservative local deadline (steady_clock, from the send
	/// time of the last successful acquire/renew) and not lost or released.
	[[nodiscard]] bool valid() const noexcept;
	/// Time left before the local deadline; zero when not valid.
	[[nodiscard]] std::chrono::milliseconds remaining() const noexcept;
	/// Renew now for the lease's TTL.  Errc::lost if the grant is gone.
	Result<void> renew() noexcept;
	/// Release now.  Errc::lost if it was no longer held.
	Result<void> release() noexcept;
	/// Called once, from the renewal thread or the thread that noticed, when
	/// the lease is lost (not on release).  Called at once if already lost.
	void on_lost(std::function<void(const Error &)> callback) noexcept;
	[[nodiscard]] CancelToken cancel_token() const noexcept;
	/// Stop renewing and keep the grant when this object dies (it then ends
	/// at its TTL): for tools that hand the token to another process.
	std::int64_t detach() noexcept;

private:
	friend class Client;
	Lease(std::shared_ptr<detail::ClientCore> core, std::shared_ptr<detail::LeaseState> state) noexcept;
	std::shared_ptr<detail::ClientCore> core_;
	std::shared_ptr<detail::LeaseState> state_;
};

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

/// A connection (pool) to one PostgreSQL database with pg_lease.
/// Thread-safe.  No member throws: if construction fails (out of memory),
/// every call answers Errc::internal.
class Client {
public:
	explicit Client(std::string conninfo, ClientOptions options = {}) noexcept;
	~Client();
	Client(const Client &) = delete;
	Client &operator=(const Client &) = delete;

	/// Acquire with options.wait; Errc::timeout when not granted in time.
	Result<Lease> acquire(std::string_view resource, const LeaseOptions &options = {}) noexcept;
	/// acquire with wait = 0.
	Result<Lease> try_acquire(std::string_view resource, LeaseOptions options = {}) noexcept;

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
	Result<bool> renew(std::string_view resource, std::int64_t token, std::chrono::milliseconds ttl) noexcept;
	Result<bool> release(std::string_view resource, std::int64_t token) noexcept;
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

	/// Errc::internal when construction failed (core_ is null), else success.
	[[nodiscard]] Result<void> constructed() const noexcept;

	std::shared_ptr<detail::ClientCore> core_; // null when construction failed
	std::string construction_error_;
};

} // namespace pglease
