// etcd/locker.cpp -- the etcd:// provider: the FIFO lock recipe of etcd's
// clientv3/concurrency Mutex, over the JSON gateway (etcd/gateway.hpp), and
// the same queue as concurrency.Election's campaign (an election's key holds
// its value; reading and observing it: etcd/election.cpp).
//
// Prefixes: "pglease/lock/" below stands for the URL's lock_prefix= (its
// default); an election's keys lie under election_prefix= ("pglease/election/"
// by default), named by the lease ID unpadded ("%x", as etcd's recipes do).
//
// Recipe: acquire grants an etcd lease (LeaseGrant; the TTL in whole seconds,
// rounded up: etcd leases have no finer unit, so 1500ms is a 2 s lease; the
// local deadline still uses the TTL asked for, so it is conservative; at most
// etcd's MaxLeaseTTL, 9,000,000,000 s, max_ttl()) and puts
// "pglease/lock/<resource>/<lease id, 16 hex digits>" with that lease (a txn:
// put only if the key does not exist yet, so a retried request keeps the
// first create revision).  The holder is the key of the resource with the
// lowest create revision; a waiter watches only its predecessor (the key
// created just before its own) for deletion -- no herd -- and after waking
// re-reads the queue, its own key included: a waiter whose lease expired
// while queued has lost its place and queues again, it is never told it
// holds the lock.  While queued, the waiter keeps its own lease alive every
// heartbeat.
//
// A key is put once and never again: from its put to its release it keeps
// its create and mod revisions, its value and its lease, the one of the full
// TTL that it holds under (etcd's rwmutex recipe finds the keys ahead of its
// own by mod revision, so a key put again would be passed).  Orphans: a
// waiter keeps that lease alive every heartbeat, as a holder does, so the
// key of a waiter that crashed, or whose acquire gave up without its revoke
// reaching etcd (or whose put executed late), goes with the lease within the
// TTL after its last keepalive -- as concurrency.Mutex's key goes with its
// session.
//
// Shared leases and semaphores (docs/shared-leases.md, "etcd") queue in the
// same prefix, in the key layout of etcd's rwmutex recipe (recipe.RWMutex of
// etcd's Go package experimental/recipes): a reader puts "pglease/lock/<resource>/
// read/<lease id, 20 digits>" and holds once no lock or writer key is older
// than its own (it watches the latest older one); a lock is the recipe's
// writer, its key the Mutex key above, and waits for every older key of any
// shape, the recipe's "write/<n>" writers included.  A permit of a
// semaphore of N puts ".../permit/<N>/<lease id, 20 digits>" and holds once
// fewer than N permit keys are older (it watches the prefix: a release
// wakes the semaphore's waiters, each one range read).  The limit is in
// every permit key's name, so each request sees it: one that names another
// limit than the oldest key of the resource (its grants, or with none its
// first waiter; a lock and a reader name 0) is refused with LS003 and its key
// revoked.
//
// Time: every call has one deadline: statement_grace for renew, release and
// the token calls; wait + statement_grace for acquire, each of its requests
// bounded by a statement_grace of its own within it.  The gateway shares a
// request's time among the endpoints it tries (etcd/gateway.hpp), so frozen
// members cost one deadline, not one each.
//
// Token: the lock key's create revision, etcd's cluster-wide revision
// counter: strictly increasing per resource (and across the cluster), kept
// through restarts and leader changes with the raft log.
//
// Renew is LeaseKeepAlive (TTL 0 or lease not found: not held) plus a read of
// the key (deleted server-side: not held).  Release deletes the key (a txn on
// its create revision) and pools its lease; a waiter that times out revokes
// its lease, which deletes its key.  A released grant's lease, holding no key
// any more, is kept in the locker's pool (ClientOptions::max_idle_connections)
// for the next acquire with the same TTL, after a keepalive: no
// LeaseGrant/LeaseRevoke per grant.  Keys of resource "a/b" lie under the
// prefix of resource "a", so a queue read keeps only keys whose rest after the
// prefix is 16 hex digits.
//
// Token calls act only on the holder's key (no lock key of the resource
// created before it): a queued waiter's token answers false and its key stays.
// Given a holder label, only a key whose value (written at its creation) is
// that label: the release txn compares it too.
// etcd cannot change a lease's TTL (a keepalive refreshes it to the TTL it was
// granted with), so renew(resource, token, ttl) with ttl longer than that is
// invalid_argument naming the granted TTL; a shorter ttl refreshes the lease
// to its granted TTL (held at least as long as asked).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <optional>
#include <thread>

#include "detail/provider.hpp"
#include "etcd/api.hpp"
#include "etcd/component.hpp"
#include "etcd/election.hpp"
#include "etcd/gateway.hpp"

namespace pglease::detail {

namespace {

using namespace etcd; // NOLINT(google-build-using-namespace): the recipe is etcd's

// A grant's lock key, by name and by create revision (= token).
struct LockKey {
	std::string prefix; // of its queue: queue_prefix(lock or election prefix, name)
	std::string key;
	std::int64_t lease = 0;
	std::int64_t revision = 0;
};

// still_there -- the lock key exists with its create revision
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

// blocker -- the key `mine` must outlast before it holds, of the keys of
// its queue created before it; nullptr: it holds now.  A lock (a writer)
// waits for every key ahead; a reader for every key ahead but readers; a
// permit for every key ahead but permits of its own limit, and for those
// only once `limit` of them are ahead.  For a reader and a lock: the latest
// such key, the one just before it (no herd).
const Api::Kv *
blocker(const std::vector<Api::Kv> &queue, const Api::Kv &mine)
{
	const Api::Kv *latest = nullptr;
	std::uint32_t permits_ahead = 0;
	bool other_ahead = false;
	for (const auto &kv : queue) {
		if (kv.create_revision >= mine.create_revision)
			continue;
		bool blocks = true;
		if (mine.shape.kind == KeyKind::reader) {
			blocks = kv.shape.kind != KeyKind::reader;
		} else if (mine.shape.kind == KeyKind::permit) {
			if (kv.shape.kind == KeyKind::permit && kv.shape.limit == mine.shape.limit)
				++permits_ahead;
			else
				other_ahead = true;
		}
		if (blocks && (!latest || kv.create_revision > latest->create_revision))
			latest = &kv;
	}
	if (mine.shape.kind == KeyKind::permit && !other_ahead && permits_ahead < mine.shape.limit)
		return nullptr;
	return latest;
}

// limit_of -- the limit a key's grant names: a permit's, 0 for the others
std::uint32_t
limit_of(KeyShape shape)
{
	return shape.kind == KeyKind::permit ? shape.limit : 0;
}

// sharing_of -- what a limit makes of a resource, for LS003's message
std::string
sharing_of(std::uint32_t limit)
{
	return limit == 0 ? std::string{"a lock (exclusive or shared)"}
	                  : "a semaphore of " + std::to_string(limit) + " permits";
}

// mismatch -- the first key of the queue (the resource's current grants, or
// with none its first waiter) names another limit than `mine`: refused with
// LS003 (docs/shared-leases.md).  Every request compares itself with the
// same first key, so keys of two limits are never granted together; a key
// that raced past the check (the first key went between) still waits for
// every key ahead of another limit (blocker).
std::optional<Error>
mismatch(std::string_view resource, const std::vector<Api::Kv> &queue, const Api::Kv &mine)
{
	const Api::Kv *first = &mine;
	for (const auto &kv : queue)
		if (kv.create_revision < first->create_revision)
			first = &kv;
	if (limit_of(first->shape) == limit_of(mine.shape))
		return std::nullopt;
	return Error{Errc::invalid_argument, "LS003",
	             "lease \"" + std::string(resource) + "\" is " + sharing_of(limit_of(first->shape)) +
	                 ", and this request asks for " + sharing_of(limit_of(mine.shape))};
}

// LeasePool -- the etcd leases of cleanly released grants (their lock key
// deleted, so they hold no key), kept for the next acquire with the same TTL:
// a grant then costs no LeaseGrant and LeaseRevoke, two of the four raft
// writes it cost otherwise.  A pooled lease is used again only after a
// keepalive says it is still alive (a keepalive is not a raft write); the
// ones left when the pool goes are revoked.
class LeasePool {
public:
	LeasePool(std::shared_ptr<Api> api, std::size_t max_idle) : api_(std::move(api)), max_idle_(max_idle) {}
	~LeasePool()
	{
		// one deadline for them all: a frozen server costs one statement_grace
		const auto deadline = api_->gateway().call_deadline();
		for (auto &[ttl, lease] : idle_)
			(void)api_->revoke(lease, deadline);
	}
	LeasePool(const LeasePool &) = delete;
	LeasePool &operator=(const LeasePool &) = delete;

	/// A pooled lease of ttl_seconds, alive and refreshed; 0 when none.
	std::int64_t take(std::int64_t ttl_seconds, Clock::time_point deadline)
	{
		for (;;) {
			std::int64_t lease = 0;
			{
				std::lock_guard<std::mutex> lk(mu_);
				auto it = std::find_if(idle_.begin(), idle_.end(),
				                       [&](const auto &e) { return e.first == ttl_seconds; });
				if (it == idle_.end())
					return 0;
				lease = it->second;
				idle_.erase(it);
			}
			auto left = api_->keepalive(lease, deadline);
			if (left && *left > 0)
				return lease;
			(void)api_->revoke(lease, deadline); // gone or unknown: not worth keeping
			if (Clock::now() >= deadline)
				return 0;
		}
	}

	void give(std::int64_t lease, std::int64_t ttl_seconds, Clock::time_point deadline)
	{
		{
			std::lock_guard<std::mutex> lk(mu_);
			if (idle_.size() < max_idle_) {
				idle_.emplace_back(ttl_seconds, lease);
				return;
			}
		}
		(void)api_->revoke(lease, deadline);
	}

private:
	std::shared_ptr<Api> api_;
	const std::size_t max_idle_;
	std::mutex mu_;
	std::vector<std::pair<std::int64_t, std::int64_t>> idle_; // (TTL in seconds, lease ID)
};

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

class EtcdGrant final : public Grant {
public:
	EtcdGrant(std::shared_ptr<Api> api, LockKey lock, std::shared_ptr<LeasePool> pool,
	          std::int64_t ttl_seconds, Clock::time_point deadline) noexcept
	    : api_(std::move(api)), lock_(std::move(lock)), pool_(std::move(pool)), ttl_seconds_(ttl_seconds),
	      deadline_(deadline)
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
			if (!*there) // the key was deleted server-side: end the lease too
				(void)api_->revoke(lock_.lease, api_->gateway().call_deadline());
			else
				deadline_ = deadline_after(sent, ttl);
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
				pool_->give(lock_.lease, ttl_seconds_, deadline);
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
	Clock::time_point deadline_; // the lease's local deadline (renew runs on one thread at a time)
};

class EtcdLocker final : public LockerBase {
public:
	EtcdLocker(std::shared_ptr<Api> api, std::size_t max_idle, std::string lock_prefix,
	           std::string election_prefix)
	    : api_(std::move(api)), pool_(std::make_shared<LeasePool>(api_, max_idle)),
	      lock_prefix_(std::move(lock_prefix)), election_prefix_(std::move(election_prefix))
	{
	}

	Capabilities capabilities() const noexcept override
	{
		Capabilities c;
		c.distributed = c.fencing_token = c.fifo_wait = c.ephemeral = c.durable = c.survives_failover = true;
		c.election = true;                  // etcd/election.cpp
		c.shared_mode = c.semaphore = true; // docs/shared-leases.md, "etcd"
		return c;                           // fenced_write: etcd checks no token on the data's store
	}
	std::string_view provider() const noexcept override { return "etcd"; }

	// etcd's MaxLeaseTTL (lease.MaxLeaseTTL, 9,000,000,000 s): a longer
	// LeaseGrant is refused with OUT_OF_RANGE
	milliseconds max_ttl() const noexcept override { return std::chrono::seconds{9'000'000'000LL}; }

	// Only the holder's grant (the resource's lock key with the lowest create
	// revision) is renewed: a queued waiter's token answers false, its lease
	// untouched.  etcd cannot change a lease's TTL, so a ttl longer than the
	// one the lease was granted with is refused; a shorter one refreshes it to
	// its granted TTL (held at least as long as asked, as etcd itself raises a
	// TTL below its minimum).
	Result<bool> renew_by_token(std::string_view resource, std::int64_t token, std::string_view holder,
	                            milliseconds ttl) override
	{
		const auto deadline = api_->gateway().call_deadline();
		auto lock = holder_of(resource, token, holder, deadline);
		if (!lock)
			return lock.error();
		if (lock->lease == 0)
			return false;
		auto granted = api_->granted_ttl(lock->lease, deadline);
		if (!granted)
			return granted.error();
		if (*granted <= 0)
			return false;
		if (ttl_seconds_of(ttl) > *granted)
			return refused_ttl(token, *granted, ttl);
		auto left = api_->keepalive(lock->lease, deadline);
		if (!left)
			return left.error();
		if (*left <= 0)
			return false;
		// the key may have been deleted since it was read (its lease then
		// kept alive for nothing): held only if it is still there; a key of
		// that create revision that exists is still the first of the queue
		return still_there(*api_, *lock, deadline);
	}

	// Only the holder's grant is released: a txn deletes the key only if it
	// still has that create revision (then it is still the first: no key can
	// be created before it later) and, given a holder, that value; then its
	// lease is revoked.
	Result<bool> release_by_token(std::string_view resource, std::int64_t token,
	                              std::string_view holder) override
	{
		const auto deadline = api_->gateway().call_deadline();
		auto lock = holder_of(resource, token, holder, deadline);
		if (!lock)
			return lock.error();
		if (lock->lease == 0)
			return false;
		auto deleted = api_->delete_key(lock->key, token, deadline, holder);
		if (!deleted)
			return deleted.error();
		if (*deleted)
			(void)api_->revoke(lock->lease, deadline); // best effort: it holds no key now
		return *deleted;
	}

protected:
	Result<Granted> grant(std::string_view resource, const LeaseOptions &options, const std::string &holder,
	                      milliseconds heartbeat) override
	{
		if (options.strategy == Strategy::advisory)
			return Error{
			    Errc::invalid_argument, "",
			    "the etcd provider offers Strategy::lease and ephemeral (an etcd lease), no advisory locks"};
		// acquire() turns a throw into Errc::internal
		Shape shape;
		shape.key.kind = options.limit > 0              ? KeyKind::permit
		                 : options.mode == Mode::shared ? KeyKind::reader
		                                                : KeyKind::lock;
		shape.key.limit = options.limit;
		return take(queue_prefix(lock_prefix_, resource), resource, options, holder, heartbeat, shape);
	}

	// An election is a queue in concurrency.Election's layout: the key's
	// value is the proclamation, the term its create revision.
	Result<Granted> grant_leadership(std::string_view election, std::string_view value,
	                                 const LeaseOptions &options, const std::string &,
	                                 milliseconds heartbeat) override
	{
		if (options.strategy == Strategy::advisory)
			return Error{Errc::invalid_argument, "",
			             "the etcd provider campaigns with Strategy::lease and ephemeral (an etcd lease), no "
			             "advisory locks"};
		Shape shape;
		shape.padded = shape.shared_layout = false;
		return take(queue_prefix(election_prefix_, election), election, options, std::string{value},
		            heartbeat, shape);
	}
	Result<LeaderView> read_leader(std::string_view election) override
	{
		return leader_view(*api_, queue_prefix(election_prefix_, election), api_->gateway().call_deadline());
	}
	Result<LeaderView> next_leader(std::string_view election, const LeaderView &seen,
	                               Clock::time_point deadline) override
	{
		return next_view(*api_, queue_prefix(election_prefix_, election), seen, deadline);
	}

private:
	// holder_of -- the lock key of (resource, token) if it is the holder's
	// (no lock key of the resource was created before it) and, given a
	// holder label, its value is that label; lease 0 otherwise.  The value
	// is written once, when the key of that create revision is created, so a
	// match read here names the holder of exactly the grant a later
	// keepalive or delete acts on.
	Result<LockKey> holder_of(std::string_view resource, std::int64_t token, std::string_view holder,
	                          Clock::time_point deadline)
	{
		const std::string prefix = queue_prefix(lock_prefix_, resource);
		auto range = api_->lock_keys(prefix, 0, token, deadline, !holder.empty(), true);
		if (!range)
			return range.error();
		LockKey lock{prefix, "", 0, token};
		for (const auto &kv : range->kvs) {
			if (kv.create_revision == token && (holder.empty() || kv.value == holder) &&
			    !blocker(range->kvs, kv)) { // not a waiter's token
				lock.key = kv.key;
				lock.lease = kv.lease;
			}
		}
		return lock;
	}

	// One acquire's time: `give_up` ends the wait, `end` (give_up plus
	// statement_grace) the whole call; each request gets what is left of a
	// statement_grace, at most until `end`.
	struct Budget {
		Clock::time_point give_up;
		Clock::time_point end;
		Gateway *gateway;
		Clock::time_point step() const { return std::min(end, gateway->call_deadline()); }
	};

	Result<Granted> timed_out(std::string_view resource, const LeaseOptions &options, std::int64_t lease,
	                          const Budget &budget)
	{
		// best effort: otherwise the key goes with its lease, no longer kept alive
		(void)api_->revoke(lease, budget.step());
		return Error{Errc::timeout, "",
		             "lease \"" + std::string(resource) + "\" not granted within " +
		                 format_duration(options.wait)};
	}

	// hold -- the queued key is first: the grant, as it is (its lease is the
	// full TTL's, alive since alive_since)
	Result<Granted> hold(LockKey lock, const LeaseOptions &options, Clock::time_point alive_since)
	{
		Granted g;
		g.token = lock.revision;
		g.deadline = deadline_after(alive_since, options.ttl);
		g.grant = std::make_unique<EtcdGrant>(api_, std::move(lock), pool_, ttl_seconds_of(options.ttl), g.deadline);
		return g;
	}

	// How take() names and reads a queue's keys: a lock's, a reader's or a
	// permit's key among every shape (shared_layout); an election's among
	// lock keys only, its lease ID unpadded.
	struct Shape {
		KeyShape key;
		bool padded = true;
		bool shared_layout = true;
	};

	// take -- queue a key at prefix (value: the holder label of a lock, the
	// proclamation of an election), then wait until the keys ahead of it let
	// it hold (blocker)
	Result<Granted> take(const std::string &prefix, std::string_view resource, const LeaseOptions &options,
	                     const std::string &value, milliseconds heartbeat, Shape shape)
	{
		Budget budget;
		budget.gateway = &api_->gateway();
		budget.give_up = deadline_after(Clock::now(), options.wait);
		budget.end = deadline_after(budget.give_up, budget.gateway->options().statement_grace);
		// the key queues under the lease it will hold with, of the full TTL,
		// kept alive every heartbeat as the grant will be (the file's comment)
		const std::int64_t ttl_seconds = ttl_seconds_of(options.ttl);
		for (;;) { // once per place in the queue
			auto alive_since = Clock::now();
			Result<std::int64_t> lease = pool_->take(ttl_seconds, budget.step());
			if (*lease == 0)
				lease = api_->lease_grant(ttl_seconds, budget.step());
			if (!lease)
				return lease.error();
			LockKey lock{prefix,
			             shape.padded ? shaped_key(prefix, shape.key, *lease)
			                          : prefix + lease_hex(*lease, false),
			             *lease, 0};
			auto revision = api_->create_key(lock.key, value, lock.lease, budget.step());
			if (!revision) {
				(void)api_->revoke(lock.lease, budget.step());
				return revision.error();
			}
			lock.revision = *revision;
			bool checked = false; // the limit, once per key
			for (;;) {            // once per wake-up
				auto queue =
				    api_->lock_keys(prefix, 0, lock.revision, budget.step(), false, shape.shared_layout);
				if (!queue) {
					if (queue.error().code == Errc::unavailable &&
					    Clock::now() + watch_retry < budget.give_up) {
						std::this_thread::sleep_for(watch_retry); // failing over, maybe
						continue;
					}
					(void)api_->revoke(lock.lease, budget.step());
					return queue.error();
				}
				const Api::Kv *mine = nullptr;
				for (const auto &kv : queue->kvs)
					if (kv.create_revision == lock.revision && kv.key == lock.key)
						mine = &kv;
				if (!mine)
					break; // our lease expired while queued: the key is gone, queue again
				if (!checked) {
					checked = true;
					if (auto refused = mismatch(resource, queue->kvs, *mine)) {
						(void)api_->revoke(lock.lease, budget.step()); // its key goes with it
						return *refused;
					}
				}
				const Api::Kv *predecessor = blocker(queue->kvs, *mine);
				if (!predecessor)
					return hold(std::move(lock), options, alive_since);
				auto now = Clock::now();
				if (now >= budget.give_up)
					return timed_out(resource, options, lock.lease, budget);
				auto slice = std::min(std::chrono::ceil<milliseconds>(budget.give_up - now), heartbeat);
				bool woken = false;
				if (mine->shape.kind == KeyKind::permit) {
					// any key ahead may be the one whose going admits it:
					// every delete under the prefix wakes the semaphore's waiters
					auto ended =
					    api_->gateway().watch(prefix, prefix_end(prefix), queue->revision + 1, slice, true);
					woken = static_cast<bool>(ended);
				} else {
					auto ended = api_->gateway().wait_deleted(predecessor->key, queue->revision + 1, slice);
					woken = static_cast<bool>(ended);
				}
				if (!woken) // the watch failed: poll instead
					std::this_thread::sleep_for(std::min(watch_retry, slice));
				if (Clock::now() - alive_since >= heartbeat) {
					auto sent = Clock::now();
					auto left = api_->keepalive(lock.lease, budget.step());
					if (left && *left > 0)
						alive_since = sent;
				}
			}
			if (Clock::now() >= budget.give_up)
				return timed_out(resource, options, lock.lease, budget);
		}
	}

	std::shared_ptr<Api> api_;
	std::shared_ptr<LeasePool> pool_;
	const std::string lock_prefix_;     // URL's lock_prefix=, "pglease/lock/" by default
	const std::string election_prefix_; // URL's election_prefix=, "pglease/election/" by default
};

} // namespace

Result<std::unique_ptr<Locker>>
connect_etcd(std::string_view url, const ClientOptions &options)
{
	auto target = etcd::parse_target(url, options);
	if (!target)
		return target.error();
	std::string lock_prefix = target->lock_prefix, election_prefix = target->election_prefix;
	auto gateway = std::make_shared<Gateway>(std::move(*target), options);
	auto locker =
	    std::make_unique<EtcdLocker>(std::make_shared<Api>(std::move(gateway)), options.max_idle_connections,
	                                 std::move(lock_prefix), std::move(election_prefix));
	return handed_out(std::move(locker));
}

} // namespace pglease::detail
