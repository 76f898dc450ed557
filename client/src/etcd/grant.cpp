// etcd/grant.cpp -- an etcd grant and the pool of released grants' leases
// (grant.hpp).
#include "etcd/grant.hpp"

#include <algorithm>

namespace pglease::detail::etcd {

namespace {

class EtcdGrant final : public Grant {
public:
	EtcdGrant(std::shared_ptr<Api> api, LockKey lock, std::shared_ptr<LeasePool> pool,
	          std::int64_t ttl_seconds, Clock::time_point deadline, Clock::time_point alive_since) noexcept
	    : api_(std::move(api)), lock_(std::move(lock)), pool_(std::move(pool)), ttl_seconds_(ttl_seconds),
	      deadline_(deadline), alive_since_(alive_since)
	{
	}

	// a keepalive refreshes the lease to the TTL it was granted with: ttl is
	// the grant's own (Lease::renew), anything longer is refused.  A renewal
	// ends by the lease's local deadline too: an answer after it comes too
	// late (the lease is lost then), and a call cut off by the network would
	// otherwise hold the renewal thread, and on_lost, up to statement_grace
	// past it
	Result<bool> renew(milliseconds ttl) noexcept override
	{
		try {
			if (ttl_seconds_of(ttl) > ttl_seconds_)
				return refused_ttl(lock_.revision, ttl_seconds_, ttl);
			const auto sent = Clock::now();
			const auto deadline = std::min(api_->gateway().call_deadline(), deadline_);
			auto left = api_->keepalive(lock_.lease, deadline);
			if (!left)
				return left.error();
			if (*left <= 0)
				return false;
			auto there = still_there(*api_, lock_, deadline);
			if (!there)
				return there.error();
			if (!*there) { // the key was deleted server-side: end the lease too
				(void)api_->revoke(lock_.lease, api_->gateway().call_deadline());
			} else {
				deadline_ = deadline_after(sent, ttl);
				alive_since_ = sent;
			}
			return *there;
		} catch (...) {
			return Error{Errc::internal, "", "out of memory"};
		}
	}
	// delete the key; the lease, holding no key now, goes to the pool
	Result<bool> release() noexcept override
	{
		try {
			const auto deadline = api_->gateway().call_deadline();
			auto deleted = api_->delete_key(lock_.key, lock_.revision, deadline);
			if (deleted && *deleted && pool_) {
				pool_->give(lock_.lease, ttl_seconds_, alive_since_, deadline);
				return true;
			}
			auto revoked = api_->revoke(lock_.lease, deadline);
			if (!deleted)
				return deleted.error();
			if (!revoked)
				return revoked.error();
			return *deleted;
		} catch (...) {
			return Error{Errc::internal, "", "out of memory"};
		}
	}
	// an election's grant: the value is put on the key only while it has
	// this term's create revision (concurrency.Election's Proclaim)
	Result<bool> proclaim(std::string_view value) noexcept override
	{
		try {
			return api_->proclaim(lock_.key, lock_.revision, lock_.lease, value,
			                      api_->gateway().call_deadline());
		} catch (...) {
			return Error{Errc::internal, "", "out of memory"};
		}
	}

private:
	std::shared_ptr<Api> api_;
	LockKey lock_;
	std::shared_ptr<LeasePool> pool_;
	const std::int64_t ttl_seconds_;
	Clock::time_point deadline_;    // the lease's local deadline (renew runs on one thread at a time)
	Clock::time_point alive_since_; // its lease's last keepalive's sending (or grant's)
};

} // namespace

Result<bool>
still_there(Api &api, const LockKey &lock, Clock::time_point deadline)
{
	auto range = api.lock_keys(lock.prefix, lock.revision, lock.revision, deadline, false, true);
	if (!range)
		return range.error();
	for (const auto &kv : range->kvs)
		if (kv.key == lock.key)
			return true;
	return false;
}

// refused_ttl -- etcd cannot change a lease's TTL: a keepalive refreshes it to
// the TTL it was granted with, so a renewal asking for longer would be a lie
Error
refused_ttl(std::int64_t token, std::int64_t granted, milliseconds ttl)
{
	return Error{Errc::invalid_argument, "22023",
	             "etcd cannot change a lease's TTL: the lease of token " + std::to_string(token) +
	                 " was granted for " + std::to_string(granted) + "s, so it cannot be renewed for " +
	                 format_duration(ttl) + " (renew with a ttl of at most " + std::to_string(granted) +
	                 "s, or acquire with the longer ttl)"};
}

LeasePool::~LeasePool()
{
	// one deadline for them all: a frozen server costs one statement_grace
	const auto deadline = api_->gateway().call_deadline();
	for (auto &idle : idle_)
		(void)api_->revoke(idle.pooled.lease, deadline);
}

LeasePool::Pooled
LeasePool::take(std::int64_t ttl_seconds, milliseconds fresh, Clock::time_point deadline)
{
	for (;;) {
		Pooled pooled;
		{
			std::lock_guard<std::mutex> lk(mu_);
			auto it = std::find_if(idle_.begin(), idle_.end(),
			                       [&](const Idle &e) { return e.ttl_seconds == ttl_seconds; });
			if (it == idle_.end())
				return Pooled{};
			pooled = it->pooled;
			idle_.erase(it);
		}
		const auto sent = Clock::now();
		if (sent - pooled.alive_since < fresh)
			return pooled; // alive for its TTL from alive_since, as etcd counts it
		auto left = api_->keepalive(pooled.lease, deadline);
		if (left && *left > 0)
			return Pooled{pooled.lease, sent};
		(void)api_->revoke(pooled.lease, deadline); // gone or unknown: not worth keeping
		if (Clock::now() >= deadline)
			return Pooled{};
	}
}

void
LeasePool::give(std::int64_t lease, std::int64_t ttl_seconds, Clock::time_point alive_since,
                Clock::time_point deadline)
{
	{
		std::lock_guard<std::mutex> lk(mu_);
		if (idle_.size() < max_idle_) {
			idle_.push_back(Idle{ttl_seconds, Pooled{lease, alive_since}});
			return;
		}
	}
	(void)api_->revoke(lease, deadline);
}

std::unique_ptr<Grant>
make_grant(std::shared_ptr<Api> api, LockKey lock, std::shared_ptr<LeasePool> pool, std::int64_t ttl_seconds,
           Clock::time_point deadline, Clock::time_point alive_since)
{
	return std::make_unique<EtcdGrant>(std::move(api), std::move(lock), std::move(pool), ttl_seconds,
	                                   deadline, alive_since);
}

} // namespace pglease::detail::etcd
