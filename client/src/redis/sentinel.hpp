// redis/sentinel.hpp -- where a redis+sentinel:// provider finds its master:
// the Sentinels are asked, as Redis' Sentinel client guidelines say
// (https://redis.io/docs/latest/develop/reference/sentinel-clients/).
//
// Resolution: each Sentinel in turn, the last one that answered first, is
// asked SENTINEL get-master-addr-by-name MASTER; the first address given
// wins, and that Sentinel moves to the front of the list.  A Sentinel that
// is down, times out or answers nil is skipped for the next.  The address is
// then only a candidate: a stale Sentinel can name a demoted node, so the
// caller checks ROLE on its new connection (is_master) before trusting it,
// and asks again after any connection error, READONLY, or a ROLE that is not
// master (redis/node.cpp).
//
// Errors: no Sentinel reachable, or no master reachable: Errc::unavailable.
// Every reachable Sentinel answers nil (none monitors MASTER, e.g. a typo in
// the URL): Errc::invalid_argument, not retried.  A Sentinel that wants a
// password (NOAUTH): Errc::permission -- the Sentinels are asked without
// credentials (the URL's are the data nodes', endpoint.hpp).
//
// Locking: Sentinels::mu_ guards the order of the list; no lock is held
// while a Sentinel is asked.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "redis/connection.hpp"

namespace pglease::detail::redis {

class Sentinels {
public:
	Sentinels(std::vector<Endpoint> sentinels, std::string master_name) noexcept
	    : sentinels_(std::move(sentinels)), master_name_(std::move(master_name))
	{
	}
	Sentinels(const Sentinels &) = delete;
	Sentinels &operator=(const Sentinels &) = delete;

	[[nodiscard]] const std::string &master_name() const noexcept { return master_name_; }

	/// The master's address as the first Sentinel that knows it says; every
	/// Sentinel asked with timeouts (the connect and the command each), the
	/// whole by deadline.
	[[nodiscard]] Result<Endpoint> master(Timeouts timeouts,
	                                      std::chrono::steady_clock::time_point deadline) noexcept;

	/// Errc::unavailable unless ROLE on connection answers master (a
	/// Sentinel's stale answer, or a node demoted since).
	[[nodiscard]] static Result<void> is_master(Connection &connection) noexcept;

private:
	Result<Endpoint> ask(const Endpoint &sentinel, Timeouts timeouts) noexcept;
	void answered(const Endpoint &sentinel) noexcept;

	std::mutex mu_;
	std::vector<Endpoint> sentinels_;
	const std::string master_name_;
};

} // namespace pglease::detail::redis
