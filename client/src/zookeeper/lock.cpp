// zookeeper/lock.cpp -- a lock: the "Locks" recipe of the ZooKeeper recipes
// page (https://zookeeper.apache.org/doc/current/recipes.html#sc_recipes_Locks),
// with Curator's protection against lost create replies (nodes.hpp):
// - each acquire creates an EPHEMERAL|SEQUENTIAL node
//   <root>/<resource>/_c_<guid>-lock-<sequence>, its data the holder label;
//   <root> is the URL's chroot or /pglease, <resource> the resource encoded
//   into one path component (target.hpp: every byte outside [A-Za-z0-9_-]
//   becomes %XX), a container node the server removes once empty;
// - the lowest sequence holds; a waiter sets an exists watch on its
//   predecessor only (no herd) and looks again when it fires; a writer's
//   transaction tells the folder's children after it (nodes.hpp), so one
//   that finds only its own nodes there holds without listing them;
// - a create whose reply was lost (connection loss) is found again after the
//   reconnect by the GUID in its name, never created twice;
// - a waiter whose wait ends, or whose acquire fails, deletes its node.
// A lock is a shared lease's writer too (shared.cpp): it queues two nodes
// in one transaction, "lock-" and "__WRIT__".  A lock and a permit of one
// resource each check for the other after creating their node (one of the
// two sees the other) and refuse (LS003), deleting what they created.
// take() and wait_turn() are the queue every recipe waits in (readers,
// candidates, a semaphore's mutex).
#include <algorithm>

#include "zookeeper/grant.hpp"
#include "zookeeper/recipes.hpp"

namespace pglease::detail::zookeeper {

namespace {

// wait_over -- the wait for our turn ends: past give_up, unless it may
// go on until turn_until and `hopeless` (asked only then) says false
Result<bool>
wait_over(const Bounds &b, const Hopeless &hopeless)
{
	const auto now = Clock::now();
	if (now < b.give_up)
		return false;
	if (now >= b.turn_until || !hopeless)
		return true;
	return hopeless();
}

// refuse_beside_semaphore -- a lock's first listing (names, taken after
// our nodes exist) also looks for a semaphore on the resource: LS003, our
// nodes deleted, when one is held or queued
Result<void>
refuse_beside_semaphore(Session &s, const Target &target, const std::string &folder, const LockNode &mine,
                        const std::vector<std::string> &names, std::string_view resource, const Bounds &b)
{
	auto used = semaphore_in_use(s, target, folder, names, b);
	if (!used)
		return used.error();
	if (*used) {
		(void)remove_nodes(s, paths_of(folder, mine), b.until);
		return mismatch(resource, "it is a semaphore's (held or queued with a limit); a lock or "
		                          "shared lease of it (limit 0) is refused");
	}
	return {};
}

} // namespace

// wait_turn -- until no earlier node is in our way (granted: the time of
// the listing that showed it), the wait ends (timeout: our nodes are
// deleted) or a request fails.  On every way out but a grant and a
// timeout, the caller disposes of the session, which ends the nodes.
// check_semaphore: a lock's first listing, taken after our nodes exist,
// also looks for a semaphore on the resource (take_permit looks for
// locks after its lease node exists: one of the two sees the other).
// Past give_up the wait goes on until b.turn_until while `hopeless`
// says false (take_permit: the semaphore's mutex).
Result<Clock::time_point>
wait_turn(Session &s, const Target &target, const std::string &folder, const LockNode &mine, bool shared,
          bool check_semaphore, std::string_view resource, const LeaseOptions &options, const Bounds &b,
          const Hopeless &hopeless)
{
	for (bool first = true;; first = false) {
		auto seen = s.generation();
		auto checked = Clock::now();
		auto listed = s.children(folder, b.until);
		if (!listed.answered || listed.rc != ZOK) {
			if (listed.answered && retryable(listed.rc) && !s.expired() && s.wait_connected(b.until))
				continue; // reconnected (to another server): look again
			return failure(listed, target.hosts, "get_children " + folder, b.bound);
		}
		if (first && check_semaphore) {
			if (auto ok = refuse_beside_semaphore(s, target, folder, mine, listed.names, resource, b); !ok)
				return ok.error();
		}
		auto queue = queue_in_order(listed.names);
		if (!has_own(queue, mine.prefix))
			return Error{Errc::unavailable, "",
			             "zookeeper " + target.hosts + ": the lock node " + folder + "/" +
			                 mine.names.front() + " was deleted while waiting"};
		const std::string before = blocker(queue, mine.prefix, shared);
		if (before.empty())
			return checked;
		if (auto over = wait_over(b, hopeless); !over || *over) {
			// within the grace left; unanswered, the session's close ends it
			(void)remove_nodes(s, paths_of(folder, mine), b.until);
			if (!over)
				return over.error();
			return timed_out(resource, options);
		}
		// watch the nearest node in our way only; its deletion (or any
		// session event) wakes us
		const std::string predecessor = folder + "/" + before;
		auto watched = s.exists(predecessor, true, b.until);
		if (watched.answered && watched.rc == ZNONODE)
			continue;
		if (!watched.answered || (watched.rc != ZOK && !retryable(watched.rc)))
			return failure(watched, target.hosts, "exists " + predecessor, b.bound);
		(void)s.wait_event(seen, Clock::now() < b.give_up ? b.give_up : b.turn_until);
	}
}

// take -- create our nodes in folder, then wait for our turn
Result<Granted>
take(const Context &ctx, const std::string &folder, std::string_view data, const Recipe &recipe,
     std::string_view resource, const LeaseOptions &options)
{
	const Bounds b = bounds_of(ctx, options);
	Owned session;
	{
		auto opened = open_session(ctx, options.ttl, b);
		if (!opened)
			return opened.error();
		session.session = std::move(*opened);
	}
	// no ensure_folder here: create_lock_node makes the folder first only
	// when the locker has not seen it (a writer's pair), or when the
	// create says ZNONODE.  A create of an existing folder would be one
	// more write (an error transaction in the server's log) on every
	// acquire.
	const auto sent = Clock::now();
	auto mine = create_lock_node(*session, ctx.target, folder, recipe.names, data, b, ctx.folders.get());
	if (!mine)
		return mine.error();
	if (!ctx.target.auth.empty()) {
		if (auto owned = check_owned(*session, ctx.target, folder, folder + "/" + mine->names.front(), b);
		    !owned)
			return owned.error(); // the session's dispose deletes our node
	}
	if (mine->alone) // nothing else in the folder (no semaphore either): ours is first
		return granted(session, ctx, folder, *mine, recipe.election, options, sent);
	auto turn = wait_turn(*session, ctx.target, folder, *mine, recipe.shared, recipe.check_semaphore,
	                      resource, options, b);
	if (!turn)
		return turn.error();
	return granted(session, ctx, folder, *mine, recipe.election, options, *turn);
}

// take_lock -- a writer queues two nodes in one transaction: "lock-",
// which Curator's InterProcessMutex and pglease before shared leases wait
// for, and "__WRIT__", which Curator's read-write lock sorts and waits for
// (each ignores the other's name); the token is their czxid.  It waits for
// every earlier node.
Result<Granted>
take_lock(const Context &ctx, const std::string &folder, std::string_view holder, std::string_view resource,
          const LeaseOptions &options)
{
	static const Recipe writer{{"lock-", "__WRIT__"}, false, true, false};
	return take(ctx, folder, holder, writer, resource, options);
}

} // namespace pglease::detail::zookeeper
