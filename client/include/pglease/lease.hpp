// pglease/lease.hpp -- Lease: the RAII guard of a held lease, the same for
// every provider, and its CancelToken.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "pglease/error.hpp"
#include "pglease/result.hpp"

namespace pglease {

namespace detail {
class LeaseEngine;    // the renewal thread (opaque)
struct LeaseState;    // a lease's state (opaque)
struct LeaseAccess;   // how the library makes a Lease
} // namespace detail

class Leadership;

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
/// Renewed in the background every heartbeat (default TTL/3) unless
/// LeaseOptions::auto_renew is false.
class Lease {
public:
	Lease(Lease &&) noexcept;
	Lease &operator=(Lease &&) noexcept;
	Lease(const Lease &) = delete;
	Lease &operator=(const Lease &) = delete;
	~Lease();

	/// The fencing token; 0 for a provider without tokens (Redlock).
	[[nodiscard]] std::int64_t token() const noexcept;
	[[nodiscard]] const std::string &resource() const noexcept;
	/// The holder label the grant is stored under: LeaseOptions::holder with
	/// "~" and 64 random bits, the label as given with LeaseOptions::reclaim,
	/// or the locker's own.  The token-level renew and release name it.
	[[nodiscard]] const std::string &holder() const noexcept;
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
	friend struct detail::LeaseAccess;
	friend class Leadership;
	Lease(std::shared_ptr<detail::LeaseEngine> engine, std::shared_ptr<detail::LeaseState> state) noexcept;
	std::shared_ptr<detail::LeaseEngine> engine_;
	std::shared_ptr<detail::LeaseState> state_;
};

} // namespace pglease
