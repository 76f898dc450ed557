// etcd/locker.cpp -- the etcd:// provider: the FIFO lock recipe of etcd's
// clientv3/concurrency Mutex, over the JSON gateway (etcd/gateway.hpp), and
// the same queue as concurrency.Election's campaign (an election's key holds
// its value; reading and observing it: etcd/election.cpp).
//
// The keys, their prefixes and which key waits for which: etcd/layout.hpp;
// the grant and the pool of released grants' leases: etcd/grant.hpp.
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
// etcd's Go package experimental/recipes): a reader, a lock (the recipe's
// writer) and a permit each put their key and hold once the older keys let
// them (etcd/layout.hpp, blocker); a reader or a lock watches the latest
// older key in its way, a permit the whole prefix (a release wakes the
// semaphore's waiters, each one range read).  A request naming another
// limit than the oldest key of the resource is refused with LS003 and its
// key revoked.
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
// LeaseGrant/LeaseRevoke per grant; one kept alive within the last tenth of
// its TTL (or heartbeat, if shorter) is used as it is, its grant's deadline
// counting from that keepalive, else it is kept alive first.  So an
// uncontended acquire+release costs 3 requests at most (a keepalive, the
// txn that puts the key and reads the queue, the delete), 2 as a rule.
// A renewal's calls end by the lease's
// local deadline too (etcd_locker_test RenewalInFlightAtTheDeadlineEndsByIt).
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
#include <optional>
#include <thread>

#include "detail/provider.hpp"
#include "etcd/api.hpp"
#include "etcd/component.hpp"
#include "etcd/election.hpp"
#include "etcd/gateway.hpp"
#include "etcd/grant.hpp"
#include "etcd/layout.hpp"

namespace pglease::detail {

namespace {

using namespace etcd; // NOLINT(google-build-using-namespace): the recipe is etcd's

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

	Error timed_out(std::string_view resource, const LeaseOptions &options, std::int64_t lease,
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
	Granted hold(LockKey lock, const LeaseOptions &options, Clock::time_point alive_since)
	{
		Granted g;
		g.token = lock.revision;
		g.deadline = deadline_after(alive_since, options.ttl);
		g.grant =
		    make_grant(api_, std::move(lock), pool_, ttl_seconds_of(options.ttl), g.deadline, alive_since);
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
	// it hold (blocker); queue again when its lease expired while queued
	Result<Granted> take(const std::string &prefix, std::string_view resource, const LeaseOptions &options,
	                     const std::string &value, milliseconds heartbeat, Shape shape)
	{
		Budget budget;
		budget.gateway = &api_->gateway();
		budget.give_up = deadline_after(Clock::now(), options.wait);
		budget.end = deadline_after(budget.give_up, budget.gateway->options().statement_grace);
		// a pooled lease kept alive this recently is used without a keepalive
		const milliseconds fresh = std::min(heartbeat, options.ttl / 10);
		for (;;) { // once per place in the queue
			Clock::time_point alive_since;
			Api::Range queue; // as the put's txn read it
			auto lock = queue_key(prefix, value, ttl_seconds_of(options.ttl), fresh, shape, budget, queue,
			                      alive_since);
			if (!lock)
				return lock.error();
			auto held =
			    wait_first(*lock, std::move(queue), resource, options, heartbeat, shape, budget, alive_since);
			if (!held)
				return held.error();
			if (*held)
				return std::move(**held);
			if (Clock::now() >= budget.give_up)
				return timed_out(resource, options, lock->lease, budget);
		}
	}

	// queue_key -- our key at prefix, under the lease it will hold with, of
	// the full TTL (a pooled one, or a new one), kept alive every heartbeat
	// as the grant will be (the file's comment); `queue`: the keys of the
	// queue, read by the txn that put ours; `alive_since`: when the lease
	// was last granted or kept alive (a pooled one within `fresh` is not
	// kept alive again: LeasePool::take)
	Result<LockKey> queue_key(const std::string &prefix, const std::string &value, std::int64_t ttl_seconds,
	                          milliseconds fresh, const Shape &shape, const Budget &budget, Api::Range &queue,
	                          Clock::time_point &alive_since)
	{
		auto pooled = pool_->take(ttl_seconds, fresh, budget.step());
		for (;;) { // once more with a new lease if the pooled one is gone
			Result<std::int64_t> lease = pooled.lease;
			alive_since = pooled.alive_since;
			if (pooled.lease == 0) {
				alive_since = Clock::now();
				lease = api_->lease_grant(ttl_seconds, budget.step());
			}
			if (!lease)
				return lease.error();
			LockKey lock{prefix,
			             shape.padded ? shaped_key(prefix, shape.key, *lease)
			                          : prefix + lease_hex(*lease, false),
			             *lease, 0};
			auto queued =
			    api_->create_key(prefix, lock.key, value, lock.lease, budget.step(), shape.shared_layout);
			if (!queued && queued.error().code == Errc::lost && pooled.lease != 0) {
				pooled = LeasePool::Pooled{}; // revoked meanwhile ("requested lease not found")
				continue;
			}
			if (!queued) {
				(void)api_->revoke(lock.lease, budget.step());
				return queued.error();
			}
			lock.revision = queued->revision;
			queue = std::move(queued->queue);
			return lock;
		}
	}

	// wait_first -- until the keys ahead of ours let it hold: the grant;
	// nullopt when our key is gone (its lease expired while queued: queue
	// again).  `first`: the queue as the put read it, looked at before any
	// read of its own.  The limit is checked once, at the first look.
	Result<std::optional<Granted>> wait_first(LockKey &lock, Api::Range first, std::string_view resource,
	                                          const LeaseOptions &options, milliseconds heartbeat,
	                                          const Shape &shape, const Budget &budget,
	                                          Clock::time_point &alive_since)
	{
		bool checked = false; // the limit, once per key
		for (;;) {            // once per wake-up
			Result<Api::Range> queue = std::move(first);
			if (checked)
				queue =
				    api_->lock_keys(lock.prefix, 0, lock.revision, budget.step(), false, shape.shared_layout);
			if (!queue) {
				if (queue.error().code == Errc::unavailable && Clock::now() + watch_retry < budget.give_up) {
					std::this_thread::sleep_for(watch_retry); // failing over, maybe
					continue;
				}
				(void)api_->revoke(lock.lease, budget.step());
				return queue.error();
			}
			const Kv *mine = nullptr;
			for (const auto &kv : queue->kvs)
				if (kv.create_revision == lock.revision && kv.key == lock.key)
					mine = &kv;
			if (!mine)
				return std::optional<Granted>{};
			if (!checked) {
				checked = true;
				if (auto refused = mismatch(resource, queue->kvs, *mine)) {
					(void)api_->revoke(lock.lease, budget.step()); // its key goes with it
					return *refused;
				}
			}
			const Kv *predecessor = blocker(queue->kvs, *mine);
			if (!predecessor)
				return std::optional<Granted>{hold(std::move(lock), options, alive_since)};
			auto now = Clock::now();
			if (now >= budget.give_up)
				return timed_out(resource, options, lock.lease, budget);
			auto slice = std::min(std::chrono::ceil<milliseconds>(budget.give_up - now), heartbeat);
			pause(lock.prefix, *mine, predecessor->key, queue->revision, slice);
			if (Clock::now() - alive_since >= heartbeat) {
				auto sent = Clock::now();
				auto left = api_->keepalive(lock.lease, budget.step());
				if (left && *left > 0)
					alive_since = sent;
			}
		}
	}

	// pause -- until the key in our way is deleted (a permit: any key under
	// the prefix, whose going may admit it: every delete wakes the
	// semaphore's waiters), or slice passes; a watch that failed is a short
	// sleep (the caller polls)
	void pause(const std::string &prefix, const Kv &mine, const std::string &predecessor,
	           std::int64_t revision, milliseconds slice)
	{
		bool woken = false;
		if (mine.shape.kind == KeyKind::permit) {
			auto ended = api_->gateway().watch(prefix, prefix_end(prefix), revision + 1, slice, true);
			woken = static_cast<bool>(ended);
		} else {
			auto ended = api_->gateway().wait_deleted(predecessor, revision + 1, slice);
			woken = static_cast<bool>(ended);
		}
		if (!woken) // the watch failed: poll instead
			std::this_thread::sleep_for(std::min(watch_retry, slice));
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
