// memory/space.cpp -- LockSpace, the in-memory provider's lock table, and the
// registry of named spaces (the recipe is in space.hpp).
//
// Locking notes: one mutex per space, mu_, guards the table; every member
// takes it for its whole run and no other lock is held with it (the
// registry's mutex is never held while a space's is).  A waiter sleeps on
// its own condition variable with mu_ released.  Only the front waiter of a
// queue may be granted, which makes waits first come first served: a
// newcomer (a wait = 0 try too) is refused while anyone is queued, so a
// waiting writer holds back every later reader.  The front waiter sleeps
// until the earlier of its deadline and the first expiry among the current
// grants, so an unreleased grant passes on at its expiry instant; a release,
// and a change of front (the old front granted, timed out or gone), wake the
// new front, and no one else: readers queued behind a granted reader are
// granted one after another, each waking the next.
//
// Tokens: one counter per space, not per resource.  It is monotonic per
// resource (it is monotonic overall, like the extension's sequence), starts
// at 1, never reuses a value, and lets an idle entry be dropped whole: a
// per-resource counter would have to outlive its entry, and the table would
// then grow with every resource name ever used.  The counter lives in memory
// only: durable = false, survives_failover = false, not distributed.
#include "memory/space.hpp"

#include "detail/provider.hpp"

#include <algorithm>
#include <new>
#include <system_error>

namespace pglease::detail::memory {

using std::chrono::milliseconds;

namespace {

/// The longest single sleep: a longer wait sleeps again, so no clock
/// conversion of the C++ library sees a far-future time.
constexpr std::chrono::hours longest_sleep{24};

/// An Error even when its message cannot be allocated (then it has none).
Error
make_error(Errc code, const char *message) noexcept
{
	Error error;
	error.code = code;
	try {
		error.message = message;
	} catch (...) {
	}
	return error;
}

} // namespace

/* QueueSlot -- a waiter's place in its resource's queue, left on every exit
 * (grant, timeout, exception) with mu_ held.  The entry cannot be dropped
 * while the slot is in its queue, so the iterator stays valid. */
class LockSpace::QueueSlot {
public:
	QueueSlot(LockSpace &space, Entries::iterator it, Waiter &me) : space_(space), it_(it), me_(me)
	{
		it_->second.queue.push_back(&me_);
	}
	~QueueSlot()
	{
		auto &queue = it_->second.queue;
		const bool was_front = queue.front() == &me_;
		queue.erase(std::find(queue.begin(), queue.end(), &me_));
		// a new front must recompute its sleep: the resource may be free now,
		// or held by a grant with a new expiry
		if (was_front && !queue.empty())
			queue.front()->wake.notify_one();
		space_.drop_if_idle(it_, Clock::now());
	}
	QueueSlot(const QueueSlot &) = delete;
	QueueSlot &operator=(const QueueSlot &) = delete;

	[[nodiscard]] bool at_front() const noexcept { return it_->second.queue.front() == &me_; }

private:
	LockSpace &space_;
	Entries::iterator it_;
	Waiter &me_;
};

/* current -- is any of the entry's grants still in force at now? */
bool
LockSpace::current(const Entry &entry, Clock::time_point now) noexcept
{
	return std::any_of(entry.grants.begin(), entry.grants.end(),
	                   [&](const Grant &g) { return now < g.expiry; });
}

/* prune -- forget the grants that are over at now */
void
LockSpace::prune(Entry &entry, Clock::time_point now) noexcept
{
	entry.grants.erase(std::remove_if(entry.grants.begin(), entry.grants.end(),
	                                  [&](const Grant &g) { return g.expiry <= now; }),
	                   entry.grants.end());
}

/* admits -- may a request of this sharing join the (pruned) grants now? */
bool
LockSpace::admits(const Entry &entry, Sharing sharing) noexcept
{
	if (sharing.limit > 0)
		return entry.grants.size() < sharing.limit;
	if (sharing.mode == Mode::exclusive)
		return entry.grants.empty();
	return std::all_of(entry.grants.begin(), entry.grants.end(),
	                   [](const Grant &g) { return g.sharing.mode == Mode::shared; });
}

/* find -- the current grant (resource, token), or null */
LockSpace::Grant *
LockSpace::find(Entry &entry, std::int64_t token, Clock::time_point now) noexcept
{
	for (Grant &g : entry.grants)
		if (g.token == token && now < g.expiry)
			return &g;
	return nullptr;
}

/* conflict -- why a request cannot join the (pruned) resource at all, or
 * null: a limit other than its grants' or, with none, its waiters'; the same
 * holder's grant in another mode or limit */
const char *
LockSpace::conflict(const Entry &entry, std::string_view holder, Sharing sharing) noexcept
{
	for (const Grant &g : entry.grants) {
		if (g.holder == holder && (g.sharing.mode != sharing.mode || g.sharing.limit != sharing.limit))
			return "this holder holds the resource in another mode or limit";
		if (g.sharing.limit != sharing.limit)
			return "the resource's holders have another limit";
	}
	if (entry.grants.empty() && !entry.queue.empty() && entry.queue.front()->sharing.limit != sharing.limit)
		return "the resource's waiters have another limit";
	return nullptr;
}

/* granted -- a new grant with the next token of the space, with the
 * election's value when there is one */
std::int64_t
LockSpace::granted(Entry &entry, std::string_view holder, const std::string *value, Sharing sharing,
                   Clock::time_point now, milliseconds ttl)
{
	entry.grants.push_back(Grant{std::string{holder}, last_token_ + 1, deadline_after(now, ttl),
	                             value ? *value : std::string{}, std::chrono::system_clock::now(), sharing});
	changed_.notify_all();
	// counted only once the grant exists, so a failed allocation skips no token
	return ++last_token_;
}

/* wake_front -- a grant ended: the front waiter may proceed now */
void
LockSpace::wake_front(Entry &entry) noexcept
{
	if (!entry.queue.empty())
		entry.queue.front()->wake.notify_one();
	changed_.notify_all();
}

/* drop_if_idle -- forget an entry with no current grant and no waiter */
void
LockSpace::drop_if_idle(Entries::iterator it, Clock::time_point now) noexcept
{
	if (it->second.queue.empty() && !current(it->second, now))
		entries_.erase(it);
}

/* sweep -- drop every idle entry (grants that expired unreleased) */
void
LockSpace::sweep(Clock::time_point now) noexcept
{
	for (auto it = entries_.begin(); it != entries_.end();) {
		auto next = std::next(it);
		drop_if_idle(it, now);
		it = next;
	}
	sweep_at_ = std::max(sweep_min, 2 * entries_.size());
}

Result<std::int64_t>
LockSpace::acquire(std::string_view resource, std::string_view holder, Sharing sharing, milliseconds ttl,
                   milliseconds wait) noexcept
{
	return take(resource, holder, nullptr, sharing, ttl, wait);
}

Result<std::int64_t>
LockSpace::campaign(std::string_view resource, std::string_view holder, std::string_view value,
                    milliseconds ttl, milliseconds wait) noexcept
{
	try {
		const std::string kept{value};
		return take(resource, holder, &kept, Sharing{}, ttl, wait);
	} catch (...) {
		return make_error(Errc::internal, "out of memory");
	}
}

/* take -- acquire, or campaign when value is not null: the value is set in
 * the same step as the grant, so no observer sees a leader without it */
Result<std::int64_t>
LockSpace::take(std::string_view resource, std::string_view holder, const std::string *value,
                Sharing sharing, milliseconds ttl, milliseconds wait) noexcept
{
	if (resource.empty())
		return make_error(Errc::invalid_argument, "resource must not be empty");
	if (holder.empty())
		return make_error(Errc::invalid_argument, "holder must not be empty");
	if (ttl <= milliseconds::zero())
		return make_error(Errc::invalid_argument, "ttl must be positive");
	if (wait < milliseconds::zero())
		return make_error(Errc::invalid_argument, "wait must not be negative");

	try {
		auto now = Clock::now();
		const auto deadline = deadline_after(now, wait);
		std::unique_lock<std::mutex> lock(mu_);

		auto it = entries_.find(resource);
		if (it == entries_.end()) {
			if (entries_.size() >= sweep_at_)
				sweep(now);
			it = entries_.try_emplace(std::string{resource}).first;
		}
		Entry &entry = it->second;
		prune(entry, now);
		if (const char *why = conflict(entry, holder, sharing)) {
			Error e = make_error(Errc::invalid_argument, why);
			e.sqlstate = "LS003";
			drop_if_idle(it, now);
			return e;
		}
		for (Grant &g : entry.grants) {
			// the holder's own grant again: same token, new expiry, never a wait
			if (g.holder != holder)
				continue;
			g.expiry = deadline_after(now, ttl);
			if (value && g.value != *value) {
				g.value = *value;
				changed_.notify_all();
			}
			return g.token;
		}
		if (entry.queue.empty() && admits(entry, sharing))
			return granted(entry, holder, value, sharing, now, ttl);
		if (wait == milliseconds::zero())
			return make_error(Errc::timeout, "resource is held or has waiters");

		Waiter me;
		me.sharing = sharing;
		QueueSlot slot(*this, it, me);
		for (;;) {
			prune(entry, now);
			if (slot.at_front() && admits(entry, sharing))
				return granted(entry, holder, value, sharing, now, ttl);
			if (now >= deadline)
				return make_error(Errc::timeout, "not granted within wait");
			auto until = deadline;
			if (slot.at_front())
				for (const Grant &g : entry.grants)
					until = std::min(until, g.expiry);
			me.wake.wait_until(lock, std::min(until, now + longest_sleep));
			now = Clock::now();
		}
	} catch (const std::bad_alloc &) {
		return make_error(Errc::internal, "out of memory");
	} catch (const std::exception &e) {
		return make_error(Errc::internal, e.what());
	} catch (...) {
		return make_error(Errc::internal, "unknown exception");
	}
}

Result<bool>
LockSpace::renew(std::string_view resource, std::int64_t token, milliseconds ttl) noexcept
{
	if (resource.empty())
		return make_error(Errc::invalid_argument, "resource must not be empty");
	if (ttl <= milliseconds::zero())
		return make_error(Errc::invalid_argument, "ttl must be positive");

	try {
		const auto now = Clock::now();
		std::lock_guard<std::mutex> lock(mu_);
		auto it = entries_.find(resource);
		if (it == entries_.end())
			return false;
		Grant *g = find(it->second, token, now);
		if (!g) {
			drop_if_idle(it, now);
			return false;
		}
		g->expiry = deadline_after(now, ttl);
		return true;
	} catch (const std::exception &e) {
		return make_error(Errc::internal, e.what());
	} catch (...) {
		return make_error(Errc::internal, "unknown exception");
	}
}

Result<bool>
LockSpace::release(std::string_view resource, std::int64_t token) noexcept
{
	if (resource.empty())
		return make_error(Errc::invalid_argument, "resource must not be empty");

	try {
		const auto now = Clock::now();
		std::lock_guard<std::mutex> lock(mu_);
		auto it = entries_.find(resource);
		if (it == entries_.end())
			return false;
		Entry &entry = it->second;
		const bool ended = find(entry, token, now) != nullptr;
		if (ended) {
			entry.grants.erase(std::find_if(entry.grants.begin(), entry.grants.end(),
			                                [&](const Grant &g) { return g.token == token; }));
			wake_front(entry);
		}
		drop_if_idle(it, now);
		return ended;
	} catch (const std::exception &e) {
		return make_error(Errc::internal, e.what());
	} catch (...) {
		return make_error(Errc::internal, "unknown exception");
	}
}

bool
LockSpace::break_grant(std::string_view resource) noexcept
{
	try {
		const auto now = Clock::now();
		std::lock_guard<std::mutex> lock(mu_);
		auto it = entries_.find(resource);
		if (it == entries_.end() || !current(it->second, now))
			return false;
		Entry &entry = it->second;
		entry.grants.clear();
		wake_front(entry);
		drop_if_idle(it, now);
		return true;
	} catch (...) {
		return false;
	}
}

Result<bool>
LockSpace::proclaim(std::string_view resource, std::int64_t token, std::string_view value) noexcept
{
	try {
		const auto now = Clock::now();
		std::lock_guard<std::mutex> lock(mu_);
		auto it = entries_.find(resource);
		Grant *g = it == entries_.end() ? nullptr : find(it->second, token, now);
		if (!g)
			return false;
		g->value = std::string{value};
		changed_.notify_all();
		return true;
	} catch (const std::exception &e) {
		return make_error(Errc::internal, e.what());
	} catch (...) {
		return make_error(Errc::internal, "unknown exception");
	}
}

/* view_of -- the election's view at now, mu_ held */
LeaderView
LockSpace::view_of(std::string_view resource, Clock::time_point now) const
{
	LeaderView view;
	auto it = entries_.find(resource);
	if (it == entries_.end() || it->second.grants.empty())
		return view;
	const Grant &g = it->second.grants.back(); // an election has one grant at a time
	view.term = g.token; // the current term, or the last one, ended
	if (now < g.expiry) {
		view.has_leader = true;
		view.value = g.value;
		view.since = g.since;
	}
	return view;
}

Result<LeaderView>
LockSpace::leader(std::string_view resource) const noexcept
{
	try {
		std::lock_guard<std::mutex> lock(mu_);
		return view_of(resource, Clock::now());
	} catch (const std::exception &e) {
		return make_error(Errc::internal, e.what());
	} catch (...) {
		return make_error(Errc::internal, "unknown exception");
	}
}

/* next_leader -- sleep on changed_ until the view differs from seen; a
 * current grant's expiry has no event, so the sleep ends there too */
Result<LeaderView>
LockSpace::next_leader(std::string_view resource, const LeaderView &seen, Clock::time_point deadline) noexcept
{
	try {
		std::unique_lock<std::mutex> lock(mu_);
		for (;;) {
			auto now = Clock::now();
			LeaderView view = view_of(resource, now);
			if (changed(seen, view) || now >= deadline)
				return view;
			auto until = deadline;
			auto it = entries_.find(resource);
			if (it != entries_.end())
				for (const Grant &g : it->second.grants)
					if (now < g.expiry)
						until = std::min(until, g.expiry);
			changed_.wait_until(lock, std::min(until, now + longest_sleep));
		}
	} catch (const std::exception &e) {
		return make_error(Errc::internal, e.what());
	} catch (...) {
		return make_error(Errc::internal, "unknown exception");
	}
}

bool
LockSpace::held(std::string_view resource, std::int64_t token) const noexcept
{
	try {
		const auto now = Clock::now();
		std::lock_guard<std::mutex> lock(mu_);
		auto it = entries_.find(resource);
		return it != entries_.end() &&
		       std::any_of(it->second.grants.begin(), it->second.grants.end(),
		                   [&](const Grant &g) { return g.token == token && now < g.expiry; });
	} catch (...) {
		return false; // only a failed lock of mu_ lands here
	}
}

std::size_t
LockSpace::waiters(std::string_view resource) const noexcept
{
	try {
		std::lock_guard<std::mutex> lock(mu_);
		auto it = entries_.find(resource);
		return it == entries_.end() ? 0 : it->second.queue.size();
	} catch (...) {
		return 0; // only a failed lock of mu_ lands here
	}
}

/* lock_space -- the registry: spaces are kept for the life of the process.
 * Were one dropped with its last user, the next Locker of that name would
 * start its tokens at 1 again, below tokens a fenced store has already seen.
 * An unused space costs its counter and the empty table. */
std::shared_ptr<LockSpace>
lock_space(std::string_view name) noexcept
{
	static std::mutex registry_mu;
	static std::map<std::string, std::shared_ptr<LockSpace>, std::less<>> registry;

	try {
		std::lock_guard<std::mutex> lock(registry_mu);
		auto it = registry.find(name);
		if (it == registry.end())
			it = registry.emplace(std::string{name}, std::make_shared<LockSpace>()).first;
		return it->second;
	} catch (...) {
		return nullptr; // out of memory, or a failed lock of registry_mu
	}
}

} // namespace pglease::detail::memory
