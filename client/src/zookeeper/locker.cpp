// zookeeper/locker.cpp -- the zookeeper:// provider: leases on a ZooKeeper
// ensemble (or one server).
//
// Recipe: "Locks" of the ZooKeeper recipes page
// (https://zookeeper.apache.org/doc/current/recipes.html#sc_recipes_Locks),
// with Curator's "protection" against lost create replies
// (InterProcessMutex / CreateBuilder.withProtection):
// - each acquire creates an EPHEMERAL|SEQUENTIAL node
//   <root>/<resource>/_c_<guid>-lock-<sequence>, its data the holder label;
//   <root> is the URL's chroot or /pglease, <resource> the resource encoded
//   into one path component (target.hpp: every byte outside [A-Za-z0-9_-]
//   becomes %XX), a container node the server removes once empty;
// - the lowest sequence holds; a waiter sets an exists watch on its
//   predecessor only (no herd) and looks again when it fires;
// - a create whose reply was lost (connection loss) is found again after the
//   reconnect by the GUID in its name, never created twice;
// - a waiter whose wait ends, or whose acquire fails, deletes its node.
//
// Shared leases (docs/shared-leases.md): Curator's InterProcessReadWriteLock
// in the same folder.  A reader queues _c_<guid>-__READ__<sequence> and waits
// for every earlier writer node (a "__WRIT__" or a "lock-" one), watching the
// nearest; a writer -- a plain lock -- queues two nodes in one transaction
// (consecutive sequences, one GUID): _c_<guid>-lock-<n>, which Curator's
// InterProcessMutex and earlier pglease clients sort and wait for, and
// _c_<guid>-__WRIT__<n+1>, which Curator's read-write lock sorts and waits
// for (each recipe ignores the other's names); it waits for every earlier
// node.  Elections keep the one "lock-" node.
//
// Semaphores: Curator's InterProcessSemaphoreV2.  A permit queues in the
// mutex <folder>/locks (lock nodes as above); once first, it creates
// <folder>/leases/_c_<guid>-lease-<sequence> and waits until at most `limit`
// leases exist, then leaves the mutex: first come, first served.  The mutex
// is no permit: a request whose wait is over (wait 0: at once) still waits up
// to 500 ms for it while fewer than `limit` leases exist.  V2 keeps
// no limit on the server; pglease writes it as the data of <folder>/leases
// while holding the mutex, and refuses another limit while leases are held
// (LS003, Curator's own clients are not checked).  A lock and a permit of
// one resource each check for the other after creating their node (one of
// the two sees the other) and refuse (LS003), deleting what they created.
//
// Elections (zookeeper/election.hpp): the same lock nodes, in the folder
// <root>/.election/<election> (target.hpp), each node's data the candidate's
// value rather than its holder label: Curator's LeaderSelector layout.  The
// grant's proclaim is a versioned setData on its own node; leader() and
// observe() read through one extra session per locker (ReadSession).
//
// Credentials (zookeeper://user:password@...): every session authenticates
// with the digest scheme (session.hpp), and every node it creates -- the
// root, its ancestors, the resource's folder, the lock nodes -- gets
// creator_read_acl(): all permissions for the creator's identity, READ for
// anyone.  Deleting a lock node needs DELETE on its folder, and re-ACLing
// the root needs its ADMIN, so another identity, or an unauthenticated
// client, can neither break a lease nor lock everyone out; nor can it queue
// (no CREATE): clients sharing a resource share one identity.  check_owned
// refuses to hold a lease under a folder or root someone else may change
// (made earlier without credentials).  Without credentials, every node is
// world:anyone:cdrwa: anyone reaching the servers can break a lease.
//
// Token: the lock node's czxid (from the Stat of zoo_create2; a writer's
// pair's, read back after the multi), the zxid of the transaction that
// created it.  A grant never precedes an earlier conflicting node's grant,
// so tokens increase across modes and permits too.  zxids are totally ordered over the
// ensemble's whole history (epoch in the high 32 bits), so a later grant of
// the same resource always has a higher token, across leader elections and
// restarts, as long as the ensemble keeps its data.
//
// Sessions: one ZooKeeper session per lease, its timeout the lease's TTL,
// so the TTL is exact.  The server clamps a session timeout into
// [minSessionTimeout, maxSessionTimeout], by default [2, 20] x tickTime;
// zoo_recv_timeout says what it granted.  A TTL above the maximum is refused
// (Errc::invalid_argument naming the servers' maximum, as soon as the session
// is negotiated: it could expire before the lease's local deadline); one
// below the minimum is accepted, the session then outlives a crashed holder
// by the difference.  Above 288h (max_ttl) a TTL is refused before any I/O:
// the C client's timers overflow.  The C client's own heartbeat keeps the
// session; Grant::renew checks it: expired -> false (lost at once),
// disconnected (Curator's SUSPENDED) -> Errc::unavailable, so the lease is
// lost when its local deadline passes without a reconnect; else the node must
// still exist with our czxid and session.  A grant not renewed by its local
// deadline closes its session itself (its watchdog), so an unrenewed lease
// ends server-side when it ends locally, as with the other providers.
// Release deletes the node and gives the session to the locker's pool of idle
// sessions (at most ClientOptions::max_idle_connections), reused by the next
// acquire with the same TTL while connected: no createSession/closeSession
// per grant.  Any other end of a grant closes its session.
//
// Time bounds: every request is asynchronous and waited for until one
// deadline per call (session.hpp): acquire within wait + statement_grace
// (the session setup also within connect_timeout), renew and release within
// statement_grace, whatever the server does (frozen, partitioned, slow).
// A request abandoned at its deadline may still run later: the call then
// closes its session, without waiting (Session::dispose).  So a lock node
// created after its acquire gave up is deleted when the server reads the
// session's close, queued behind the create on the same connection (at once
// when a frozen server resumes); if the client had already lost that
// connection (after 2/3 of the TTL without an answer), when the session
// expires: at most one TTL after the server resumes (a reconnect the client
// left in the frozen server's socket may touch the session once more; seen:
// a 3 s session's node gone 3.1 s after SIGCONT).  Until then
// the node only delays other acquirers, it is nobody's grant.
#include <algorithm>
#include <optional>
#include <condition_variable>
#include <functional>
#include <random>
#include <thread>

#include "detail/provider.hpp"
#include "zookeeper/component.hpp"
#include "zookeeper/election.hpp"
#include "zookeeper/session.hpp"
#include "zookeeper/target.hpp"

namespace pglease::detail {

namespace {

using zookeeper::error_of;
using zookeeper::Session;
using zookeeper::Target;

// protection_prefix -- "_c_<guid>-": the start of a name this acquire alone
// can have (its nodes' names add the recipe's: "lock-", "__READ__", ...)
std::string
protection_prefix()
{
	static thread_local std::mt19937_64 rng{
	    std::random_device{}() ^ static_cast<std::uint64_t>(Clock::now().time_since_epoch().count())};
	static const char hex[] = "0123456789abcdef";
	std::string guid;
	for (int i = 0; i < 32; i++)
		guid += hex[rng() & 15];
	return "_c_" + guid + "-";
}

// retryable -- an error after which the session may come back
bool
retryable(int rc)
{
	return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT;
}

// failure -- the Error of a request that failed (answered) or was abandoned
Error
failure(const zookeeper::Answer &a, const std::string &hosts, const std::string &what, milliseconds bound)
{
	return a.answered ? error_of(a.rc, hosts, what) : zookeeper::unanswered(hosts, what, bound);
}

// Owned -- a session that is disposed of (closed without waiting) however
// the scope ends, unless moved out
struct Owned {
	std::unique_ptr<Session> session;
	Owned() = default;
	Owned(const Owned &) = delete;
	Owned &operator=(const Owned &) = delete;
	~Owned() { Session::dispose(std::move(session)); }
	Session *operator->() const noexcept { return session.get(); }
	Session &operator*() const noexcept { return *session; }
};

// SessionPool -- the sessions of cleanly released grants, kept open for the
// next acquire with the same TTL (a session's timeout is its lease's TTL):
// a grant then costs no createSession and closeSession, two of the five
// writes to the transaction log it cost otherwise.  A session is reused only
// while connected and not expired; it holds no node when pooled.
class SessionPool {
public:
	explicit SessionPool(std::size_t max_idle) : max_idle_(max_idle) {}
	~SessionPool()
	{
		for (auto &idle : idle_)
			Session::dispose(std::move(idle.second));
	}
	SessionPool(const SessionPool &) = delete;
	SessionPool &operator=(const SessionPool &) = delete;

	std::unique_ptr<Session> take(milliseconds ttl) noexcept
	{
		std::vector<std::unique_ptr<Session>> stale; // disposed of outside the lock
		std::unique_ptr<Session> found;
		{
			std::lock_guard<std::mutex> lk(mu_);
			for (auto it = idle_.begin(); it != idle_.end() && !found;) {
				if (it->first != ttl) {
					++it;
					continue;
				}
				auto s = std::move(it->second);
				it = idle_.erase(it);
				if (s->connected() && !s->expired())
					found = std::move(s);
				else
					stale.push_back(std::move(s));
			}
		}
		for (auto &s : stale)
			Session::dispose(std::move(s));
		return found;
	}

	void give(std::unique_ptr<Session> session, milliseconds ttl) noexcept
	{
		try {
			std::lock_guard<std::mutex> lk(mu_);
			if (idle_.size() < max_idle_) {
				idle_.emplace_back(ttl, std::move(session));
				return;
			}
		} catch (...) {
		}
		Session::dispose(std::move(session));
	}

private:
	const std::size_t max_idle_;
	std::mutex mu_;
	std::vector<std::pair<milliseconds, std::unique_ptr<Session>>> idle_;
};

// remove_nodes -- delete one node, or several in one transaction
zookeeper::Answer
remove_nodes(Session &s, const std::vector<std::string> &paths, Clock::time_point until) noexcept
{
	if (paths.size() == 1)
		return s.remove(paths.front(), until);
	try {
		std::vector<Session::Op> ops;
		for (const auto &path : paths)
			ops.push_back(Session::Op{false, path, {}, 0});
		return s.multi(ops, until);
	} catch (...) {
		zookeeper::Answer a;
		a.answered = true;
		a.rc = ZSYSTEMERROR;
		return a;
	}
}

// ZookeeperGrant -- one lease: its session and its lock node.  renew and
// release end within statement_grace (renew: by the local deadline, too).
class ZookeeperGrant final : public Grant {
public:
	// election: the node carries a value (proclaim); version: its data's
	// version as created
	// nodes: the grant's node (renew checks it) and any more it holds (a
	// writer's "__WRIT__" twin), deleted together at release
	ZookeeperGrant(std::unique_ptr<Session> session, std::vector<std::string> nodes, std::int64_t token,
	               Clock::time_point deadline, std::shared_ptr<SessionPool> pool, milliseconds session_ttl,
	               milliseconds grace, bool election, int version)
	    : session_(std::move(session)), node_(nodes.at(0)), nodes_(std::move(nodes)), token_(token),
	      deadline_(deadline), pool_(std::move(pool)), session_ttl_(session_ttl), grace_(grace),
	      election_(election), version_(version)
	{
		watchdog_ = std::thread([this] { close_at_deadline(); });
	}
	~ZookeeperGrant() override
	{
		{
			std::lock_guard<std::mutex> lk(mu_);
			stopping_ = true;
		}
		cv_.notify_all();
		watchdog_.join();
		Session::dispose(std::move(session_));
	}
	ZookeeperGrant(const ZookeeperGrant &) = delete;
	ZookeeperGrant &operator=(const ZookeeperGrant &) = delete;

	Result<bool> renew(milliseconds ttl) noexcept override
	{
		try {
			std::lock_guard<std::mutex> lk(mu_);
			auto sent = Clock::now();
			if (!session_ || session_->closed() || session_->expired())
				return false; // released, or SESSION_EXPIRED: the node is gone
			if (!session_->connected())
				return Error{Errc::unavailable, "",
				             "zookeeper " + session_->hosts() +
				                 ": disconnected, the session is not confirmed"};
			// an answer after the local deadline would come too late anyway,
			// and the watchdog waits for this lock to end the session then
			auto until = std::min(deadline_after(sent, grace_), deadline_);
			auto a = session_->exists(node_, false, until);
			if (a.answered && (a.rc == ZNONODE || a.rc == ZSESSIONEXPIRED || a.rc == ZINVALIDSTATE))
				return false;
			if (!a.answered || a.rc != ZOK)
				return failure(a, session_->hosts(), "exists " + node_, grace_);
			if (a.stat.czxid != token_ || a.stat.ephemeralOwner != session_->id())
				return false; // not our node any more
			deadline_ = deadline_after(sent, ttl);
			return true;
		} catch (...) {
			return Error{Errc::internal, "", "out of memory"};
		}
	}

	// proclaim -- setData on our node, compared with its version in the same
	// step (zookeeper::publish)
	Result<bool> proclaim(std::string_view value) noexcept override
	{
		if (!election_)
			return Grant::proclaim(value);
		try {
			std::lock_guard<std::mutex> lk(mu_);
			if (!session_ || session_->closed() || session_->expired())
				return false;
			if (!session_->connected())
				return Error{Errc::unavailable, "",
				             "zookeeper " + session_->hosts() +
				                 ": disconnected, the session is not confirmed"};
			auto until = std::min(deadline_after(Clock::now(), grace_), deadline_);
			return zookeeper::publish(*session_, node_, token_, version_, value, until, grace_);
		} catch (...) {
			return Error{Errc::internal, "", "out of memory"};
		}
	}

	Result<bool> release() noexcept override
	{
		Owned ending; // disposed of (not closed waiting) after the lock, unless pooled
		try {
			std::lock_guard<std::mutex> lk(mu_);
			if (!session_)
				return false; // released already
			ending.session = std::move(session_);
			if (ending->closed() || ending->expired())
				return false;
			if (!ending->connected())
				return Error{Errc::unavailable, "",
				             "zookeeper " + ending->hosts() + ": disconnected at release; the node " + node_ +
				                 " goes when its session expires (within " + format_duration(session_ttl_) +
				                 ")"};
			auto a = remove_nodes(*ending, nodes_, deadline_after(Clock::now(), grace_));
			if (a.answered && a.rc == ZOK) { // the session holds no node now: the next grant may use it
				pool_->give(std::move(ending.session), session_ttl_);
				return true;
			}
			if (a.answered && (a.rc == ZNONODE || a.rc == ZSESSIONEXPIRED || a.rc == ZINVALIDSTATE))
				return false;
			// the delete may still run; the session's close follows it
			auto e = failure(a, ending->hosts(), "delete " + node_, grace_);
			e.message += "; the node goes when the server reads the session's close, or when the session "
			             "expires (within " +
			             format_duration(session_ttl_) + ")";
			return e;
		} catch (...) {
			return Error{Errc::internal, "", "out of memory"};
		}
	}

private:
	// close_at_deadline -- the watchdog: a lease not renewed by its local
	// deadline ends server-side too (closing the session deletes the node)
	void close_at_deadline() noexcept
	{
		std::unique_lock<std::mutex> lk(mu_);
		while (!stopping_) {
			if (Clock::now() >= deadline_) {
				auto ending = std::move(session_);
				lk.unlock();
				Session::dispose(std::move(ending));
				return;
			}
			cv_.wait_until(lk, std::min(deadline_, Clock::now() + std::chrono::hours{1}));
		}
	}

	std::unique_ptr<Session> session_; // null once released or ended
	const std::string node_;
	const std::vector<std::string> nodes_; // node_ first
	const std::int64_t token_;
	std::mutex mu_; // guards session_, deadline_, stopping_ and every use of the session
	std::condition_variable cv_;
	Clock::time_point deadline_;
	bool stopping_ = false;
	const std::shared_ptr<SessionPool> pool_;
	const milliseconds session_ttl_;
	const milliseconds grace_;
	const bool election_;
	int version_; // the node's data version we last saw (guarded by mu_)
	std::thread watchdog_;
};

// ZookeeperLocker -- each acquire takes a session of its own (a released
// grant's, or a new one) and queues a lock node
class ZookeeperLocker final : public LockerBase {
public:
	ZookeeperLocker(Target target, ClientOptions options)
	    : target_(std::move(target)), options_(options),
	      pool_(std::make_shared<SessionPool>(options.max_idle_connections))
	{
	}

	Capabilities capabilities() const noexcept override
	{
		Capabilities c;
		c.distributed = true;
		c.fencing_token = true;     // czxid
		c.fifo_wait = true;         // sequence order
		c.ephemeral = true;         // ends with the session
		c.durable = true;           // the node is in the replicated, fsynced log
		c.survives_failover = true; // a quorum keeps node and session
		c.election = true;          // Curator's LeaderSelector layout (zookeeper/election.hpp)
		c.shared_mode = true;       // Curator's InterProcessReadWriteLock layout
		c.semaphore = true;         // Curator's InterProcessSemaphoreV2 layout
		return c;
	}
	std::string_view provider() const noexcept override { return "ZooKeeper"; }

protected:
	Result<Granted> grant(std::string_view resource, const LeaseOptions &options, const std::string &holder,
	                      milliseconds) override
	{
		if (options.strategy == Strategy::advisory)
			return Error{Errc::invalid_argument, "",
			             "the ZooKeeper provider has no advisory locks (Strategy::lease or ephemeral: "
			             "every ZooKeeper grant ends with its session)"};
		// acquire() turns a throw into Errc::internal
		const std::string folder = target_.root + "/" + zookeeper::encode_resource(resource);
		if (options.limit > 0)
			return take_permit(folder, holder, resource, options);
		return take(folder, holder, options.mode == Mode::shared ? Request::shared : Request::exclusive,
		            resource, options);
	}

	// grant_leadership -- a lock in the election's folder whose node carries
	// the value (a LeaderSelector participant's id) instead of the holder
	Result<Granted> grant_leadership(std::string_view election, std::string_view value,
	                                 const LeaseOptions &options, const std::string &, milliseconds) override
	{
		if (options.strategy == Strategy::advisory)
			return Error{Errc::invalid_argument, "",
			             "the ZooKeeper provider has no advisory elections (Strategy::lease or ephemeral)"};
		return take(zookeeper::election_folder(target_, election), value, Request::election, election,
		            options);
	}

	Result<LeaderView> read_leader(std::string_view election) override
	{
		auto s = reader_.get(deadline_after(Clock::now(), options_.connect_timeout));
		if (!s)
			return s.error();
		const auto grace = options_.statement_grace;
		return zookeeper::read_view(**s, zookeeper::election_folder(target_, election), false,
		                            deadline_after(Clock::now(), grace), grace);
	}

	// next_leader -- the watches of zookeeper::next_view; a bounded re-read
	// every second as the safety net.  A read session that expired (the
	// servers were away longer than its timeout) took its watches with it:
	// a new one reads and watches again, within the same deadline.
	Result<LeaderView> next_leader(std::string_view election, const LeaderView &seen,
	                               Clock::time_point deadline) override
	{
		const std::string folder = zookeeper::election_folder(target_, election);
		for (;;) {
			// a new read session: connected by the deadline, or at least
			// within a statement_grace (a wait of 0 still reads once)
			auto s = reader_.get(std::max(deadline, deadline_after(Clock::now(), options_.statement_grace)));
			if (!s)
				return s.error();
			auto view = zookeeper::next_view(**s, folder, seen, deadline, options_.statement_grace,
			                                 std::chrono::seconds{1});
			if (view || !(*s)->expired() || Clock::now() >= deadline)
				return view;
		}
	}

	// max_ttl -- what the C client can carry: it computes two thirds of the
	// session timeout in an int of milliseconds (zookeeper_interest), which
	// overflows above INT_MAX / 2 ms (12.4 days: the session then never
	// connects); 12 days is the round bound below.  The servers' own maximum
	// (maxSessionTimeout) is usually far lower: take() refuses a TTL above
	// it, naming it, once a session was negotiated.
	milliseconds max_ttl() const noexcept override { return std::chrono::hours{12 * 24}; }

private:
	// What one request queues: an election's or a plain lock's single
	// "lock-" node, a reader's "__READ__" node, or a writer's pair (below);
	// or a semaphore's permit (take_permit).
	enum class Request { election, shared, exclusive };
	// The nodes a request created, all named prefix + recipe name + sequence
	struct LockNode {
		std::string prefix;
		std::vector<std::string> names; // the first one's czxid is the token
		std::int64_t czxid = 0;
		int version = 0; // of its data
	};
	// One acquire's bounds: the wait ends at give_up, every request and the
	// session setup at until (wait + statement_grace: one deadline for the
	// whole call); a permit's turn at the semaphore's mutex may come until
	// turn_until (take_permit), a lock's by give_up
	struct Bounds {
		Clock::time_point give_up, until;
		milliseconds bound;
		Clock::time_point turn_until;
	};
	// The semaphore's mutex is no permit: a permit request past its wait
	// still waits this long for it (within until) while permits are free:
	// other requests hold it for a few round trips each
	static constexpr milliseconds mutex_grace{500};
	// A check of whether waiting on makes sense (empty: it always does)
	using Hopeless = std::function<Result<bool>()>;

	// ensure_folder -- the resource's container node, and its persistent ancestors
	Result<void> ensure_folder(Session &s, const std::string &folder, const Bounds &b)
	{
		auto a = s.create(folder, {}, ZOO_CONTAINER, b.until);
		if (a.answered && (a.rc == ZOK || a.rc == ZNODEEXISTS))
			return {};
		if (!a.answered || a.rc != ZNONODE)
			return failure(a, s.hosts(), "create " + folder, b.bound);
		for (auto at = folder.find('/', 1); at != std::string::npos; at = folder.find('/', at + 1)) {
			std::string ancestor = folder.substr(0, at);
			// a semaphore's <root>/<resource> above its "locks" and "leases"
			// is a container too; the root and <root>/.election persist
			const bool resource_folder =
			    ancestor.size() > target_.root.size() && ancestor != target_.root + "/.election";
			a = s.create(ancestor, {}, resource_folder ? ZOO_CONTAINER : ZOO_PERSISTENT, b.until);
			if (!a.answered || (a.rc != ZOK && a.rc != ZNODEEXISTS))
				return failure(a, s.hosts(), "create " + ancestor, b.bound);
		}
		a = s.create(folder, {}, ZOO_CONTAINER, b.until);
		if (!a.answered || (a.rc != ZOK && a.rc != ZNODEEXISTS))
			return failure(a, s.hosts(), "create " + folder, b.bound);
		return {};
	}

	// check_owned -- with credentials: the resource's folder (and an
	// election's <root>/.election) and the root let
	// no identity but this client's delete, create, write or re-ACL (READ
	// only).  Our own lock node's ACL names our identity (the server expands
	// the "auth" scheme into the ids the session authenticated as).  Checked
	// after our node exists: a folder with a child cannot be deleted, and
	// once its ACL is ours nobody else can change it, so the check holds for
	// the whole lease.  A node made without credentials (world:anyone:cdrwa)
	// or by another identity is refused with Errc::permission.
	Result<void> check_owned(Session &s, const std::string &folder, const std::string &node, const Bounds &b)
	{
		auto mine = s.get_acl(node, b.until);
		if (!mine.answered || mine.rc != ZOK)
			return failure(mine, s.hosts(), "get_acl " + node, b.bound);
		std::vector<std::string> ours;
		for (const auto &entry : mine.acl)
			if (entry.first == ZOO_PERM_ALL)
				ours.push_back(entry.second);
		// an election's folder has one more ancestor of ours: <root>/.election
		std::vector<std::string> paths{folder, target_.root};
		if (auto parent = folder.substr(0, folder.rfind('/')); parent != target_.root)
			paths.insert(paths.begin() + 1, parent);
		for (const std::string &path : paths) {
			auto a = s.get_acl(path, b.until);
			if (!a.answered || a.rc != ZOK)
				return failure(a, s.hosts(), "get_acl " + path, b.bound);
			for (const auto &[perms, id] : a.acl) {
				if ((perms & ~ZOO_PERM_READ) == 0 || std::find(ours.begin(), ours.end(), id) != ours.end())
					continue;
				// "digest:user:hash": the hash stays out of the message
				auto shown = id.substr(0, id.find(':', id.find(':') + 1));
				return Error{Errc::permission, "",
				             "zookeeper " + s.hosts() + ": " + path + " lets " + shown +
				                 " change it or delete its children, not only \"" + target_.user +
				                 "\": a lease under it could be broken or blocked by others (made without "
				                 "credentials or by another identity?); with no lease held, delete it "
				                 "(zkCli deleteall), or setAcl it to auth::cdrwa,world:anyone:r as \"" +
				                 target_.user + "\", or use another chroot"};
			}
		}
		return {};
	}

	// find_protected -- our nodes after a lost create reply, by their GUID
	// prefix: every one of them, in the order of `recipes` (a multi creates
	// all or none), or nothing
	Result<std::optional<LockNode>> find_protected(Session &s, const std::string &folder,
	                                               const std::string &prefix,
	                                               const std::vector<std::string> &recipes, const Bounds &b)
	{
		auto listed = s.children(folder, b.until);
		if (!listed.answered || listed.rc != ZOK)
			return failure(listed, s.hosts(), "get_children " + folder, b.bound);
		LockNode found{prefix, {}, 0, 0};
		for (const auto &recipe : recipes)
			for (const auto &name : listed.names)
				if (name.compare(0, prefix.size() + recipe.size(), prefix + recipe) == 0)
					found.names.push_back(name);
		if (found.names.empty())
			return std::optional<LockNode>{};
		auto a = s.exists(folder + "/" + found.names.front(), false, b.until);
		if (!a.answered || a.rc != ZOK)
			return failure(a, s.hosts(), "exists " + folder + "/" + found.names.front(), b.bound);
		found.czxid = a.stat.czxid;
		found.version = a.stat.version;
		return std::optional<LockNode>{std::move(found)};
	}

	// create_once -- the EPHEMERAL|SEQUENTIAL nodes prefix + each of recipes
	// (one: a create; two: a multi, consecutive sequence numbers), created
	// once.  names: as created, without the folder
	zookeeper::Answer create_once(Session &s, const std::string &folder, const std::string &prefix,
	                              const std::vector<std::string> &recipes, std::string_view data,
	                              const Bounds &b)
	{
		if (recipes.size() == 1) {
			auto a =
			    s.create(folder + "/" + prefix + recipes.front(), data, ZOO_EPHEMERAL_SEQUENTIAL, b.until);
			if (a.answered && a.rc == ZOK)
				a.names.push_back(a.path.substr(a.path.rfind('/') + 1));
			return a;
		}
		std::vector<Session::Op> ops;
		for (const auto &recipe : recipes)
			ops.push_back(Session::Op{true, folder + "/" + prefix + recipe, std::string{data},
			                          ZOO_EPHEMERAL_SEQUENTIAL});
		auto a = s.multi(ops, b.until);
		if (a.answered && a.rc == ZOK) {
			for (auto &name : a.names)
				name = name.substr(name.rfind('/') + 1);
			// a multi's create reports no Stat: the token is read back
			auto st = s.exists(folder + "/" + a.names.front(), false, b.until);
			if (!st.answered || st.rc != ZOK)
				return st;
			a.stat = st.stat;
		}
		return a;
	}

	// create_lock_node -- our nodes (Curator's protection: a create whose
	// reply was lost is found again after the reconnect by the GUID in its
	// name, never created twice)
	Result<LockNode> create_lock_node(Session &s, const std::string &folder,
	                                  const std::vector<std::string> &recipes, std::string_view data,
	                                  const Bounds &b)
	{
		const std::string prefix = protection_prefix();
		const std::string what = "create " + folder + "/" + prefix + recipes.front();
		Error last{Errc::unavailable, "", "zookeeper " + s.hosts() + ": could not create the lock node"};
		for (int attempt = 0; attempt < 4; attempt++) {
			auto a = create_once(s, folder, prefix, recipes, data, b);
			if (a.answered && a.rc == ZOK)
				return LockNode{prefix, std::move(a.names), a.stat.czxid, a.stat.version};
			last = failure(a, s.hosts(), what, b.bound);
			if (!a.answered) // it may still be created: the caller's dispose ends it
				return last;
			if (a.rc == ZNONODE) { // the empty container was reaped meanwhile
				if (auto made = ensure_folder(s, folder, b); !made)
					return made.error();
				continue;
			}
			if (!retryable(a.rc))
				return last;
			// the reply was lost: the nodes may exist; find them after the reconnect
			if (!s.wait_connected(b.until))
				return last;
			auto found = find_protected(s, folder, prefix, recipes, b);
			if (!found)
				return found.error();
			if (*found)
				return std::move(**found);
		}
		return last;
	}

	// open_session -- a pooled session with this TTL, or a new one
	Result<std::unique_ptr<Session>> open_session(milliseconds ttl, const Bounds &b)
	{
		if (auto pooled = pool_->take(ttl))
			return pooled;
		auto setup = std::min(b.until, deadline_after(Clock::now(), options_.connect_timeout));
		auto opened = Session::open(target_.hosts, ttl, setup, target_.auth);
		if (!opened)
			return opened.error();
		auto s = std::move(*opened);
		if (s->negotiated() < ttl) {
			// the server clamps into [minSessionTimeout, maxSessionTimeout]: less
			// than asked is its maximum
			auto most = s->negotiated();
			Session::dispose(std::move(s));
			return Error{Errc::invalid_argument, "22023",
			             "zookeeper " + target_.hosts + ": ttl " + format_duration(ttl) +
			                 " is longer than the servers grant: their sessions last at most " +
			                 format_duration(most) +
			                 " (maxSessionTimeout, by default 20 x tickTime); ask for a ttl of at most that"};
		}
		return s;
	}

	// bounds_of -- one acquire's deadlines, from now
	Bounds bounds_of(const LeaseOptions &options) const
	{
		const auto start = Clock::now();
		const auto bound = saturating_add(options.wait, options_.statement_grace);
		const auto give_up = deadline_after(start, options.wait);
		return Bounds{give_up, deadline_after(start, bound), bound, give_up};
	}

	// mismatch -- LS003: the request disagrees with the resource's grants or waiters
	static Error mismatch(std::string_view resource, const std::string &why)
	{
		return Error{Errc::invalid_argument, "LS003", "lease \"" + std::string{resource} + "\": " + why};
	}

	static Error timed_out(std::string_view resource, const LeaseOptions &options)
	{
		return Error{Errc::timeout, "",
		             "lease \"" + std::string{resource} + "\" not granted within " +
		                 format_duration(options.wait)};
	}

	static std::vector<std::string> paths_of(const std::string &folder, const LockNode &node)
	{
		std::vector<std::string> paths;
		for (const auto &name : node.names)
			paths.push_back(folder + "/" + name);
		return paths;
	}

	// granted -- the Grant of our nodes in folder, checked free at `checked`
	Granted granted(Owned &session, const std::string &folder, const LockNode &mine, bool election,
	                const LeaseOptions &options, Clock::time_point checked)
	{
		Granted g;
		g.token = mine.czxid;
		g.deadline = deadline_after(checked, options.ttl);
		g.grant = std::make_unique<ZookeeperGrant>(std::move(session.session), paths_of(folder, mine),
		                                           mine.czxid, g.deadline, pool_, options.ttl,
		                                           options_.statement_grace, election, mine.version);
		return g;
	}

	// take -- create our nodes in folder (data: a lock's holder label, an
	// election's value), then wait until no earlier node is in their way.
	// A writer (Request::exclusive) queues two nodes in one transaction:
	// "lock-", which Curator's InterProcessMutex and pglease before shared
	// leases wait for, and "__WRIT__", which Curator's read-write lock sorts
	// and waits for (each ignores the other's name); the token is their czxid.
	Result<Granted> take(const std::string &folder, std::string_view data, Request request,
	                     std::string_view resource, const LeaseOptions &options)
	{
		static const std::vector<std::string> election{"lock-"}, reader{"__READ__"},
		    writer{"lock-", "__WRIT__"};
		const Bounds b = bounds_of(options);
		Owned session;
		{
			auto opened = open_session(options.ttl, b);
			if (!opened)
				return opened.error();
			session.session = std::move(*opened);
		}
		// no ensure_folder first: the folder is there but for a resource's
		// first acquire (or one after the server reaped the empty
		// container), and create_lock_node makes it when the create says
		// ZNONODE.  A create of an existing folder would be one more write
		// (an error transaction in the server's log) on every acquire.
		auto mine = create_lock_node(*session, folder,
		                             request == Request::election ? election
		                             : request == Request::shared ? reader
		                                                          : writer,
		                             data, b);
		if (!mine)
			return mine.error();
		if (!target_.auth.empty()) {
			if (auto owned = check_owned(*session, folder, folder + "/" + mine->names.front(), b); !owned)
				return owned.error(); // the session's dispose deletes our node
		}
		auto turn = wait_turn(*session, folder, *mine, request == Request::shared,
		                      request != Request::election, resource, options, b);
		if (!turn)
			return turn.error();
		return granted(session, folder, *mine, request == Request::election, options, *turn);
	}

	// wait_turn -- until no earlier node is in our way (granted: the time of
	// the listing that showed it), the wait ends (timeout: our nodes are
	// deleted) or a request fails.  On every way out but a grant and a
	// timeout, the caller disposes of the session, which ends the nodes.
	// check_semaphore: a lock's first listing, taken after our nodes exist,
	// also looks for a semaphore on the resource (take_permit looks for
	// locks after its lease node exists: one of the two sees the other).
	// Past give_up the wait goes on until b.turn_until while `hopeless`
	// says false (take_permit: the semaphore's mutex).
	Result<Clock::time_point> wait_turn(Session &s, const std::string &folder, const LockNode &mine,
	                                    bool shared, bool check_semaphore, std::string_view resource,
	                                    const LeaseOptions &options, const Bounds &b,
	                                    const Hopeless &hopeless = {})
	{
		for (bool first = true;; first = false) {
			auto seen = s.generation();
			auto checked = Clock::now();
			auto listed = s.children(folder, b.until);
			if (!listed.answered || listed.rc != ZOK) {
				if (listed.answered && retryable(listed.rc) && !s.expired() && s.wait_connected(b.until))
					continue; // reconnected (to another server): look again
				return failure(listed, target_.hosts, "get_children " + folder, b.bound);
			}
			if (first && check_semaphore) {
				auto used = semaphore_in_use(s, folder, listed.names, b);
				if (!used)
					return used.error();
				if (*used) {
					(void)remove_nodes(s, paths_of(folder, mine), b.until);
					return mismatch(resource, "it is a semaphore's (held or queued with a limit); a lock or "
					                          "shared lease of it (limit 0) is refused");
				}
			}
			auto queue = zookeeper::queue_in_order(listed.names);
			if (!zookeeper::has_own(queue, mine.prefix))
				return Error{Errc::unavailable, "",
				             "zookeeper " + target_.hosts + ": the lock node " + folder + "/" +
				                 mine.names.front() + " was deleted while waiting"};
			const std::string before = zookeeper::blocker(queue, mine.prefix, shared);
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
				return failure(watched, target_.hosts, "exists " + predecessor, b.bound);
			(void)s.wait_event(seen, Clock::now() < b.give_up ? b.give_up : b.turn_until);
		}
	}

	// wait_over -- the wait for our turn ends: past give_up, unless it may
	// go on until turn_until and `hopeless` (asked only then) says false
	static Result<bool> wait_over(const Bounds &b, const Hopeless &hopeless)
	{
		const auto now = Clock::now();
		if (now < b.give_up)
			return false;
		if (now >= b.turn_until || !hopeless)
			return true;
		return hopeless();
	}

	// semaphore_in_use -- a lease or a queued request in folder's "leases" or
	// "locks" (names: folder's children; those empty containers linger until
	// the server reaps them)
	Result<bool> semaphore_in_use(Session &s, const std::string &folder,
	                              const std::vector<std::string> &names, const Bounds &b)
	{
		for (const char *sub : {"leases", "locks"}) {
			if (std::find(names.begin(), names.end(), sub) == names.end())
				continue;
			auto listed = s.children(folder + "/" + sub, b.until);
			if (listed.answered && listed.rc == ZNONODE)
				continue;
			if (!listed.answered || listed.rc != ZOK)
				return failure(listed, target_.hosts, "get_children " + folder + "/" + sub, b.bound);
			if (!listed.names.empty())
				return true;
		}
		return false;
	}

	// lock_queued -- a lock, reader or writer holds or waits in folder
	Result<bool> lock_queued(Session &s, const std::string &folder, const Bounds &b)
	{
		auto listed = s.children(folder, b.until);
		if (!listed.answered || listed.rc != ZOK)
			return failure(listed, target_.hosts, "get_children " + folder, b.bound);
		return !zookeeper::queue_in_order(listed.names).empty();
	}

	// stored_limit -- the limit pglease wrote into <folder>/leases (0: none,
	// e.g. a "leases" node Curator made), its data version, and how many
	// lease nodes it has; exists = false when there is no "leases" node
	struct StoredLimit {
		bool exists = false;
		std::uint32_t limit = 0;
		int version = 0;
		bool held = false;
		std::uint32_t count = 0;
	};
	Result<StoredLimit> stored_limit(Session &s, const std::string &leases, const Bounds &b)
	{
		StoredLimit out;
		auto data = s.get_data(leases, false, b.until);
		if (data.answered && data.rc == ZNONODE)
			return out;
		if (!data.answered || data.rc != ZOK)
			return failure(data, target_.hosts, "get_data " + leases, b.bound);
		out.exists = true;
		out.version = data.stat.version;
		if (!data.data.empty() && data.data.size() <= 5 &&
		    std::all_of(data.data.begin(), data.data.end(), [](char c) { return c >= '0' && c <= '9'; }))
			out.limit = static_cast<std::uint32_t>(std::stoul(data.data));
		out.count = static_cast<std::uint32_t>(std::max(data.stat.numChildren, 0));
		out.held = out.count > 0;
		return out;
	}

	// permits_taken -- at least `limit` lease nodes exist (listed with a
	// watch: a change wakes the wait), so no permit is free for us now:
	// every lease node is a permit held but the mutex holder's, which is
	// granted when within the limit (Curator's clients too create lease
	// nodes only holding the mutex)
	Result<bool> permits_taken(Session &s, const std::string &leases, std::uint32_t limit, const Bounds &b)
	{
		auto listed = s.children(leases, b.until, true);
		if (listed.answered && listed.rc == ZNONODE)
			return false;
		if (!listed.answered || listed.rc != ZOK)
			return failure(listed, target_.hosts, "get_children " + leases, b.bound);
		return listed.names.size() >= limit;
	}

	// refuse_other_limit -- LS003 when leases are held under another limit
	static Result<void> refuse_other_limit(const StoredLimit &stored, std::uint32_t limit,
	                                       std::string_view resource)
	{
		if (stored.held && stored.limit != 0 && stored.limit != limit)
			return mismatch(resource, "its permits are held with limit " + std::to_string(stored.limit) +
			                              ", not " + std::to_string(limit));
		return {};
	}

	// claim_limit -- holding the semaphore's mutex: the leases held (if
	// any) were taken with our limit, and <folder>/leases records it for
	// the next requests (written with the version read: set once)
	Result<void> claim_limit(Session &s, const std::string &folder, const std::string &leases,
	                         std::uint32_t limit, std::string_view resource, const Bounds &b)
	{
		const std::string mine = std::to_string(limit);
		for (int attempt = 0; attempt < 8; attempt++) {
			auto stored = stored_limit(s, leases, b);
			if (!stored)
				return stored.error();
			if (!stored->exists) {
				auto a = s.create(leases, mine, ZOO_CONTAINER, b.until);
				if (a.answered && a.rc == ZNONODE) {
					if (auto made = ensure_folder(s, folder, b); !made)
						return made.error();
					continue;
				}
				if (a.answered && (a.rc == ZOK || a.rc == ZNODEEXISTS))
					continue; // read what is there now
				return failure(a, target_.hosts, "create " + leases, b.bound);
			}
			if (auto ok = refuse_other_limit(*stored, limit, resource); !ok)
				return ok.error();
			if (stored->limit == limit)
				return {};
			auto a = s.set_data(leases, mine, stored->version, b.until);
			if (a.answered && (a.rc == ZOK || a.rc == ZBADVERSION || a.rc == ZNONODE))
				continue;
			return failure(a, target_.hosts, "set_data " + leases, b.bound);
		}
		return Error{Errc::unavailable, "", "zookeeper " + target_.hosts + ": " + leases + " kept changing"};
	}

	// wait_count -- until at most limit leases exist, ours among them
	// (InterProcessSemaphoreV2's rule, watching the children); the time of
	// the listing that showed it
	Result<Clock::time_point> wait_count(Session &s, const std::string &leases, const std::string &own,
	                                     std::uint32_t limit, std::string_view resource,
	                                     const LeaseOptions &options, const Bounds &b)
	{
		for (;;) {
			auto seen = s.generation();
			auto checked = Clock::now();
			auto listed = s.children(leases, b.until, true);
			if (!listed.answered || listed.rc != ZOK) {
				if (listed.answered && retryable(listed.rc) && !s.expired() && s.wait_connected(b.until))
					continue;
				return failure(listed, target_.hosts, "get_children " + leases, b.bound);
			}
			if (std::find(listed.names.begin(), listed.names.end(), own) == listed.names.end())
				return Error{Errc::unavailable, "",
				             "zookeeper " + target_.hosts + ": the lease node " + leases + "/" + own +
				                 " was deleted while waiting"};
			if (listed.names.size() <= limit)
				return checked;
			if (Clock::now() >= b.give_up)
				return timed_out(resource, options);
			(void)s.wait_event(seen, b.give_up);
		}
	}

	// take_permit -- Curator's InterProcessSemaphoreV2: queue in the mutex
	// <folder>/locks; once first, check the limit, create our lease node
	// in <folder>/leases and wait until at most `limit` leases exist (the
	// mutex keeps later requests behind us: first come, first served); then
	// leave the mutex.  The grant is the lease node alone.  The mutex is no
	// permit: past its wait (a wait of 0 at once) a request still waits up
	// to mutex_grace for it, while fewer than `limit` lease nodes exist.
	Result<Granted> take_permit(const std::string &folder, std::string_view data, std::string_view resource,
	                            const LeaseOptions &options)
	{
		Bounds b = bounds_of(options);
		const std::string locks = folder + "/locks", leases = folder + "/leases";
		Owned session;
		{
			auto opened = open_session(options.ttl, b);
			if (!opened)
				return opened.error();
			session.session = std::move(*opened);
		}
		Session &s = *session;
		if (auto made = ensure_folder(s, folder, b); !made)
			return made.error();
		// refused before queueing when it is plain already; the checks that
		// count are made again holding the mutex
		auto locked = lock_queued(s, folder, b);
		if (!locked)
			return locked.error();
		if (*locked)
			return mismatch(resource, "it is held or queued as a lock or shared lease (limit 0); a permit "
			                          "(limit " +
			                              std::to_string(options.limit) + ") is refused");
		auto stored = stored_limit(s, leases, b);
		if (!stored)
			return stored.error();
		if (auto ok = refuse_other_limit(*stored, options.limit, resource); !ok)
			return ok.error();
		if (Clock::now() >= b.give_up && stored->count >= options.limit)
			return timed_out(resource, options); // no permit free, none to wait for

		auto mutex = create_lock_node(s, locks, {"lock-"}, data, b);
		if (!mutex)
			return mutex.error();
		if (!target_.auth.empty()) {
			if (auto owned = check_owned(s, locks, locks + "/" + mutex->names.front(), b); !owned)
				return owned.error();
		}
		b.turn_until = std::max(b.give_up, std::min(b.until, deadline_after(Clock::now(), mutex_grace)));
		const Hopeless taken = [&] { return permits_taken(s, leases, options.limit, b); };
		auto turn = wait_turn(s, locks, *mutex, false, false, resource, options, b, taken);
		if (!turn)
			return turn.error();
		const auto mutex_paths = paths_of(locks, *mutex);
		auto permit = take_lease(s, folder, leases, data, resource, options, b);
		if (!permit) {
			(void)remove_nodes(s, mutex_paths, b.until);
			return permit.error();
		}
		// the mutex goes now: the next request may count
		auto freed = remove_nodes(s, mutex_paths, b.until);
		if (!freed.answered || freed.rc != ZOK)
			return failure(freed, target_.hosts, "delete " + mutex_paths.front(), b.bound);
		return granted(session, leases, permit->first, false, options, permit->second);
	}

	// take_lease -- holding the mutex: our lease node, once the limit
	// agrees and no lock queued meanwhile, and the count admits it; on a
	// refusal or timeout the node is deleted
	Result<std::pair<LockNode, Clock::time_point>>
	take_lease(Session &s, const std::string &folder, const std::string &leases, std::string_view data,
	           std::string_view resource, const LeaseOptions &options, const Bounds &b)
	{
		if (auto claimed = claim_limit(s, folder, leases, options.limit, resource, b); !claimed)
			return claimed.error();
		auto lease = create_lock_node(s, leases, {"lease-"}, data, b);
		if (!lease)
			return lease.error();
		if (!target_.auth.empty()) {
			if (auto owned = check_owned(s, leases, leases + "/" + lease->names.front(), b); !owned)
				return owned.error();
		}
		// a lock queued since the first look saw no lease: it went ahead
		auto locked = lock_queued(s, folder, b);
		if (!locked || *locked) {
			(void)remove_nodes(s, paths_of(leases, *lease), b.until);
			if (!locked)
				return locked.error();
			return mismatch(resource, "a lock or shared lease (limit 0) of it was queued meanwhile; a permit "
			                          "(limit " +
			                              std::to_string(options.limit) + ") is refused");
		}
		auto counted = wait_count(s, leases, lease->names.front(), options.limit, resource, options, b);
		if (!counted) {
			(void)remove_nodes(s, paths_of(leases, *lease), b.until);
			return counted.error();
		}
		return std::make_pair(std::move(*lease), *counted);
	}

	Target target_;
	ClientOptions options_;
	std::shared_ptr<SessionPool> pool_;
	zookeeper::ReadSession reader_{target_, options_.connect_timeout};
};

} // namespace

Result<std::unique_ptr<Locker>>
connect_zookeeper(std::string_view url, const ClientOptions &options)
{
	auto target = zookeeper::parse_url(url);
	if (!target)
		return target.error();
	if (!options.tls_ca_file.empty() || !options.tls_cert_file.empty() || !options.tls_key_file.empty())
		return Error{Errc::invalid_argument, "",
		             "the ZooKeeper provider has no TLS (Debian's ZooKeeper C client is built without it): "
		             "ClientOptions tls_ca_file, tls_cert_file and tls_key_file must be empty"};
	auto locker = std::make_unique<ZookeeperLocker>(std::move(*target), options);
	return handed_out(std::move(locker));
}

} // namespace pglease::detail
