// pglease/status.hpp -- status(locker): the grants a provider holds now, as
// `pglease status` prints them.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pglease/locker.hpp"
#include "pglease/options.hpp"
#include "pglease/result.hpp"

namespace pglease {

/// One grant: a row of lease.leases on PostgreSQL.
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

/// The grants of the locker's provider, ordered by resource and token.
/// PostgreSQL (a locker of pglease::connect("postgresql://...")) lists
/// lease.leases; another provider answers Errc::invalid_argument.
Result<std::vector<LeaseInfo>> status(Locker &locker) noexcept;

} // namespace pglease
