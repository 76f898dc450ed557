// etcd/grant.hpp -- an etcd grant: its key and the lease it lives under,
// and the pool of released grants' leases (etcd/locker.cpp's banner has the
// recipe).  Renew is LeaseKeepAlive plus a read of the key; release deletes
// the key (a txn on its create revision) and pools its lease.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "detail/provider.hpp"
#include "etcd/api.hpp"

namespace pglease::detail::etcd {

/// A grant's lock key, by name and by create revision (= token).
struct LockKey {
	std::string prefix; ///< of its queue: queue_prefix(lock or election prefix, name)
	std::string key;
	std::int64_t lease = 0;
	std::int64_t revision = 0;
};

/// The lock key exists with its create revision.
[[nodiscard]] Result<bool> still_there(Api &api, const LockKey &lock, Clock::time_point deadline);

/// etcd cannot change a lease's TTL: a keepalive refreshes it to the TTL it
/// was granted with, so a renewal asking for longer is refused naming it.
[[nodiscard]] Error refused_ttl(std::int64_t token, std::int64_t granted, milliseconds ttl);

/// The etcd leases of cleanly released grants (their lock key deleted, so
/// they hold no key), kept for the next acquire with the same TTL: a grant
/// then costs no LeaseGrant and LeaseRevoke, two of the four raft writes it
/// cost otherwise.  A pooled lease is used again as it is when kept alive
/// recently (`fresh`: the grant's deadline counts from that keepalive),
/// else after a keepalive says it is still alive (a keepalive is not a raft
/// write); the ones left when the pool goes are revoked.
class LeasePool {
public:
	LeasePool(std::shared_ptr<Api> api, std::size_t max_idle) : api_(std::move(api)), max_idle_(max_idle) {}
	~LeasePool();
	LeasePool(const LeasePool &) = delete;
	LeasePool &operator=(const LeasePool &) = delete;

	struct Pooled {
		std::int64_t lease = 0;        ///< 0: none
		Clock::time_point alive_since; ///< its last keepalive's (or grant's) sending
	};
	/// A pooled lease of ttl_seconds, alive: kept alive within `fresh`, or
	/// by a keepalive now.
	Pooled take(std::int64_t ttl_seconds, milliseconds fresh, Clock::time_point deadline);
	/// Keep the lease, kept alive last at alive_since (at most max_idle),
	/// else revoke it.
	void give(std::int64_t lease, std::int64_t ttl_seconds, Clock::time_point alive_since,
	          Clock::time_point deadline);

private:
	struct Idle {
		std::int64_t ttl_seconds;
		Pooled pooled;
	};
	std::shared_ptr<Api> api_;
	const std::size_t max_idle_;
	std::mutex mu_;
	std::vector<Idle> idle_;
};

/// The grant of lock, under its lease of ttl_seconds, held until deadline.
/// alive_since: when its lease was last granted or kept alive.
[[nodiscard]] std::unique_ptr<Grant> make_grant(std::shared_ptr<Api> api, LockKey lock,
                                                std::shared_ptr<LeasePool> pool, std::int64_t ttl_seconds,
                                                Clock::time_point deadline, Clock::time_point alive_since);

} // namespace pglease::detail::etcd
