// zookeeper/locker.cpp -- the zookeeper:// provider: leases on a ZooKeeper
// ensemble (or one server).  Its recipes, one room each: locks (lock.cpp,
// the "Locks" recipe of the ZooKeeper recipes page, with Curator's
// protection against lost create replies: nodes.hpp), shared leases
// (shared.cpp: Curator's InterProcessReadWriteLock), semaphores
// (permits.cpp: Curator's InterProcessSemaphoreV2) and elections
// (election.cpp: Curator's LeaderSelector), over one session per grant
// (session.hpp, pool.hpp) and its grant (grant.cpp).
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
// deadline has its session closed by the locker's one watchdog thread
// (watchdog.hpp), so an unrenewed lease ends server-side when it ends
// locally, as with the other providers.
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
#include "detail/provider.hpp"
#include "zookeeper/component.hpp"
#include "zookeeper/election.hpp"
#include "zookeeper/recipes.hpp"
#include "zookeeper/watchdog.hpp"

namespace pglease::detail {

namespace {

using zookeeper::Context;
using zookeeper::Target;

// ZookeeperLocker -- each acquire takes a session of its own (a released
// grant's, or a new one) and queues its nodes as its recipe says
class ZookeeperLocker final : public LockerBase {
public:
	ZookeeperLocker(Target target, ClientOptions options)
	    : ctx_{std::move(target), options,
	           std::make_shared<zookeeper::SessionPool>(options.max_idle_connections),
	           std::make_shared<zookeeper::FolderHints>(), std::make_shared<zookeeper::Watchdog>()}
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
		// acquire() turns a throw into Errc::internal
		const std::string folder = ctx_.target.root + "/" + zookeeper::encode_resource(resource);
		if (options.limit > 0)
			return zookeeper::take_permit(ctx_, folder, holder, resource, options);
		if (options.mode == Mode::shared)
			return zookeeper::take_shared(ctx_, folder, holder, resource, options);
		return zookeeper::take_lock(ctx_, folder, holder, resource, options);
	}

	// grant_leadership -- a lock in the election's folder whose node carries
	// the value (a LeaderSelector participant's id) instead of the holder
	Result<Granted> grant_leadership(std::string_view election, std::string_view value,
	                                 const LeaseOptions &options, const std::string &, milliseconds) override
	{
		return zookeeper::take_leadership(ctx_, election, value, options);
	}

	Result<LeaderView> read_leader(std::string_view election) override
	{
		auto s = reader_.get(deadline_after(Clock::now(), ctx_.options.connect_timeout));
		if (!s)
			return s.error();
		const auto grace = ctx_.options.statement_grace;
		return zookeeper::read_view(**s, zookeeper::election_folder(ctx_.target, election), false,
		                            deadline_after(Clock::now(), grace), grace);
	}

	// next_leader -- the watches of zookeeper::next_view; a bounded re-read
	// every second as the safety net.  A read session that expired (the
	// servers were away longer than its timeout) took its watches with it:
	// a new one reads and watches again, within the same deadline.
	Result<LeaderView> next_leader(std::string_view election, const LeaderView &seen,
	                               Clock::time_point deadline) override
	{
		const std::string folder = zookeeper::election_folder(ctx_.target, election);
		for (;;) {
			// a new read session: connected by the deadline, or at least
			// within a statement_grace (a wait of 0 still reads once)
			auto s =
			    reader_.get(std::max(deadline, deadline_after(Clock::now(), ctx_.options.statement_grace)));
			if (!s)
				return s.error();
			auto view = zookeeper::next_view(**s, folder, seen, deadline, ctx_.options.statement_grace,
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
	const Context ctx_;
	zookeeper::ReadSession reader_{ctx_.target, ctx_.options.connect_timeout};
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
