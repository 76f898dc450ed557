// zookeeper/permits.cpp -- semaphores: Curator's InterProcessSemaphoreV2 in
// the resource's folder.  A permit queues in the mutex <folder>/locks (lock
// nodes as lock.cpp's); once first, it creates
// <folder>/leases/_c_<guid>-lease-<sequence> and waits until at most `limit`
// leases exist, then leaves the mutex: first come, first served.  The mutex
// is no permit: a request whose wait is over (wait 0: at once) still waits up
// to 500 ms for it while fewer than `limit` leases exist.  V2 keeps
// no limit on the server; pglease writes it as the data of <folder>/leases
// while holding the mutex, and refuses another limit while leases are held
// (LS003, Curator's own clients are not checked).  A lock and a permit of
// one resource each check for the other after creating their node (one of
// the two sees the other) and refuse (LS003), deleting what they created.
#include <algorithm>
#include <utility>

#include "zookeeper/grant.hpp"
#include "zookeeper/recipes.hpp"

namespace pglease::detail::zookeeper {

namespace {

// The semaphore's mutex is no permit: a permit request past its wait
// still waits this long for it (within until) while permits are free:
// other requests hold it for a few round trips each
constexpr milliseconds mutex_grace{500};

// lock_queued -- a lock, reader or writer holds or waits in folder
Result<bool>
lock_queued(Session &s, const Target &target, const std::string &folder, const Bounds &b)
{
	auto listed = s.children(folder, b.until);
	if (!listed.answered || listed.rc != ZOK)
		return failure(listed, target.hosts, "get_children " + folder, b.bound);
	return !queue_in_order(listed.names).empty();
}

// StoredLimit -- the limit pglease wrote into <folder>/leases (0: none,
// e.g. a "leases" node Curator made), its data version, and how many
// lease nodes it has; exists = false when there is no "leases" node
struct StoredLimit {
	bool exists = false;
	std::uint32_t limit = 0;
	int version = 0;
	std::uint32_t count = 0;
	bool held() const noexcept { return count > 0; }
};

Result<StoredLimit>
stored_limit(Session &s, const Target &target, const std::string &leases, const Bounds &b)
{
	StoredLimit out;
	auto data = s.get_data(leases, false, b.until);
	if (data.answered && data.rc == ZNONODE)
		return out;
	if (!data.answered || data.rc != ZOK)
		return failure(data, target.hosts, "get_data " + leases, b.bound);
	out.exists = true;
	out.version = data.stat.version;
	if (!data.data.empty() && data.data.size() <= 5 &&
	    std::all_of(data.data.begin(), data.data.end(), [](char c) { return c >= '0' && c <= '9'; }))
		out.limit = static_cast<std::uint32_t>(std::stoul(data.data));
	out.count = static_cast<std::uint32_t>(std::max(data.stat.numChildren, 0));
	return out;
}

// permits_taken -- at least `limit` lease nodes exist (listed with a
// watch: a change wakes the wait), so no permit is free for us now:
// every lease node is a permit held but the mutex holder's, which is
// granted when within the limit (Curator's clients too create lease
// nodes only holding the mutex)
Result<bool>
permits_taken(Session &s, const Target &target, const std::string &leases, std::uint32_t limit,
              const Bounds &b)
{
	auto listed = s.children(leases, b.until, true);
	if (listed.answered && listed.rc == ZNONODE)
		return false;
	if (!listed.answered || listed.rc != ZOK)
		return failure(listed, target.hosts, "get_children " + leases, b.bound);
	return listed.names.size() >= limit;
}

// refuse_other_limit -- LS003 when leases are held under another limit
Result<void>
refuse_other_limit(const StoredLimit &stored, std::uint32_t limit, std::string_view resource)
{
	if (stored.held() && stored.limit != 0 && stored.limit != limit)
		return mismatch(resource, "its permits are held with limit " + std::to_string(stored.limit) +
		                              ", not " + std::to_string(limit));
	return {};
}

// claim_limit -- holding the semaphore's mutex: the leases held (if
// any) were taken with our limit, and <folder>/leases records it for
// the next requests (written with the version read: set once)
Result<void>
claim_limit(Session &s, const Target &target, const std::string &folder, const std::string &leases,
            std::uint32_t limit, std::string_view resource, const Bounds &b)
{
	const std::string mine = std::to_string(limit);
	for (int attempt = 0; attempt < 8; attempt++) {
		auto stored = stored_limit(s, target, leases, b);
		if (!stored)
			return stored.error();
		if (!stored->exists) {
			auto a = s.create(leases, mine, ZOO_CONTAINER, b.until);
			if (a.answered && a.rc == ZNONODE) {
				if (auto made = ensure_folder(s, target, folder, b); !made)
					return made.error();
				continue;
			}
			if (a.answered && (a.rc == ZOK || a.rc == ZNODEEXISTS))
				continue; // read what is there now
			return failure(a, target.hosts, "create " + leases, b.bound);
		}
		if (auto ok = refuse_other_limit(*stored, limit, resource); !ok)
			return ok.error();
		if (stored->limit == limit)
			return {};
		auto a = s.set_data(leases, mine, stored->version, b.until);
		if (a.answered && (a.rc == ZOK || a.rc == ZBADVERSION || a.rc == ZNONODE))
			continue;
		return failure(a, target.hosts, "set_data " + leases, b.bound);
	}
	return Error{Errc::unavailable, "", "zookeeper " + target.hosts + ": " + leases + " kept changing"};
}

// wait_count -- until at most limit leases exist, ours among them
// (InterProcessSemaphoreV2's rule, watching the children); the time of
// the listing that showed it
Result<Clock::time_point>
wait_count(Session &s, const Target &target, const std::string &leases, const std::string &own,
           std::uint32_t limit, std::string_view resource, const LeaseOptions &options, const Bounds &b)
{
	for (;;) {
		auto seen = s.generation();
		auto checked = Clock::now();
		auto listed = s.children(leases, b.until, true);
		if (!listed.answered || listed.rc != ZOK) {
			if (listed.answered && retryable(listed.rc) && !s.expired() && s.wait_connected(b.until))
				continue;
			return failure(listed, target.hosts, "get_children " + leases, b.bound);
		}
		if (std::find(listed.names.begin(), listed.names.end(), own) == listed.names.end())
			return Error{Errc::unavailable, "",
			             "zookeeper " + target.hosts + ": the lease node " + leases + "/" + own +
			                 " was deleted while waiting"};
		if (listed.names.size() <= limit)
			return checked;
		if (Clock::now() >= b.give_up)
			return timed_out(resource, options);
		(void)s.wait_event(seen, b.give_up);
	}
}

// take_lease -- holding the mutex: our lease node, once the limit
// agrees and no lock queued meanwhile, and the count admits it; on a
// refusal or timeout the node is deleted
Result<std::pair<LockNode, Clock::time_point>>
take_lease(Session &s, const Target &target, const std::string &folder, const std::string &leases,
           std::string_view data, std::string_view resource, const LeaseOptions &options, const Bounds &b)
{
	if (auto claimed = claim_limit(s, target, folder, leases, options.limit, resource, b); !claimed)
		return claimed.error();
	auto lease = create_lock_node(s, target, leases, {"lease-"}, data, b);
	if (!lease)
		return lease.error();
	if (!target.auth.empty()) {
		if (auto owned = check_owned(s, target, leases, leases + "/" + lease->names.front(), b); !owned)
			return owned.error();
	}
	// a lock queued since the first look saw no lease: it went ahead
	auto locked = lock_queued(s, target, folder, b);
	if (!locked || *locked) {
		(void)remove_nodes(s, paths_of(leases, *lease), b.until);
		if (!locked)
			return locked.error();
		return mismatch(resource, "a lock or shared lease (limit 0) of it was queued meanwhile; a permit "
		                          "(limit " +
		                              std::to_string(options.limit) + ") is refused");
	}
	auto counted = wait_count(s, target, leases, lease->names.front(), options.limit, resource, options, b);
	if (!counted) {
		(void)remove_nodes(s, paths_of(leases, *lease), b.until);
		return counted.error();
	}
	return std::make_pair(std::move(*lease), *counted);
}

// refuse_early -- before queueing: LS003 when the resource is plain
// already, or its permits are held with another limit; a timeout when no
// permit is free and the wait is over (the checks that count are made
// again holding the mutex)
Result<void>
refuse_early(Session &s, const Target &target, const std::string &folder, const std::string &leases,
             std::string_view resource, const LeaseOptions &options, const Bounds &b)
{
	auto locked = lock_queued(s, target, folder, b);
	if (!locked)
		return locked.error();
	if (*locked)
		return mismatch(resource, "it is held or queued as a lock or shared lease (limit 0); a permit "
		                          "(limit " +
		                              std::to_string(options.limit) + ") is refused");
	auto stored = stored_limit(s, target, leases, b);
	if (!stored)
		return stored.error();
	if (auto ok = refuse_other_limit(*stored, options.limit, resource); !ok)
		return ok.error();
	if (Clock::now() >= b.give_up && stored->count >= options.limit)
		return timed_out(resource, options); // no permit free, none to wait for
	return {};
}

} // namespace

// semaphore_in_use -- a lease or a queued request in folder's "leases" or
// "locks" (names: folder's children; those empty containers linger until
// the server reaps them)
Result<bool>
semaphore_in_use(Session &s, const Target &target, const std::string &folder,
                 const std::vector<std::string> &names, const Bounds &b)
{
	for (const char *sub : {"leases", "locks"}) {
		if (std::find(names.begin(), names.end(), sub) == names.end())
			continue;
		auto listed = s.children(folder + "/" + sub, b.until);
		if (listed.answered && listed.rc == ZNONODE)
			continue;
		if (!listed.answered || listed.rc != ZOK)
			return failure(listed, target.hosts, "get_children " + folder + "/" + sub, b.bound);
		if (!listed.names.empty())
			return true;
	}
	return false;
}

// take_permit -- Curator's InterProcessSemaphoreV2: queue in the mutex
// <folder>/locks; once first, check the limit, create our lease node
// in <folder>/leases and wait until at most `limit` leases exist (the
// mutex keeps later requests behind us: first come, first served); then
// leave the mutex.  The grant is the lease node alone.  The mutex is no
// permit: past its wait (a wait of 0 at once) a request still waits up
// to mutex_grace for it, while fewer than `limit` lease nodes exist.
Result<Granted>
take_permit(const Context &ctx, const std::string &folder, std::string_view holder, std::string_view resource,
            const LeaseOptions &options)
{
	const Target &target = ctx.target;
	Bounds b = bounds_of(ctx, options);
	const std::string locks = folder + "/locks", leases = folder + "/leases";
	Owned session;
	{
		auto opened = open_session(ctx, options.ttl, b);
		if (!opened)
			return opened.error();
		session.session = std::move(*opened);
	}
	Session &s = *session;
	if (auto made = ensure_folder(s, target, folder, b); !made)
		return made.error();
	if (auto ok = refuse_early(s, target, folder, leases, resource, options, b); !ok)
		return ok.error();

	auto mutex = create_lock_node(s, target, locks, {"lock-"}, holder, b);
	if (!mutex)
		return mutex.error();
	if (!target.auth.empty()) {
		if (auto owned = check_owned(s, target, locks, locks + "/" + mutex->names.front(), b); !owned)
			return owned.error();
	}
	b.turn_until = std::max(b.give_up, std::min(b.until, deadline_after(Clock::now(), mutex_grace)));
	const Hopeless taken = [&] { return permits_taken(s, target, leases, options.limit, b); };
	auto turn = wait_turn(s, target, locks, *mutex, false, false, resource, options, b, taken);
	if (!turn)
		return turn.error();
	const auto mutex_paths = paths_of(locks, *mutex);
	auto permit = take_lease(s, target, folder, leases, holder, resource, options, b);
	if (!permit) {
		(void)remove_nodes(s, mutex_paths, b.until);
		return permit.error();
	}
	// the mutex goes now: the next request may count
	auto freed = remove_nodes(s, mutex_paths, b.until);
	if (!freed.answered || freed.rc != ZOK)
		return failure(freed, target.hosts, "delete " + mutex_paths.front(), b.bound);
	return granted(session, ctx, leases, permit->first, false, options, permit->second);
}

} // namespace pglease::detail::zookeeper
