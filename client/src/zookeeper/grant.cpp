// zookeeper/grant.cpp -- the grant of every ZooKeeper recipe (grant.hpp).
#include "zookeeper/grant.hpp"

#include <algorithm>

#include "zookeeper/election.hpp"
#include "zookeeper/watchdog.hpp"

namespace pglease::detail::zookeeper {

namespace {

// ZookeeperGrant -- one lease: its session and its lock node, watched by
// the locker's watchdog (watchdog.hpp).  renew and release end within
// statement_grace (renew: by the local deadline, too).
class ZookeeperGrant final : public Grant {
public:
	// election: the node carries a value (proclaim); version: its data's
	// version as created
	// nodes: the grant's node (renew checks it) and any more it holds (a
	// writer's "__WRIT__" twin), deleted together at release
	ZookeeperGrant(std::unique_ptr<Session> session, std::vector<std::string> nodes, std::int64_t token,
	               Clock::time_point deadline, const Context &ctx, milliseconds session_ttl, bool election,
	               int version)
	    : w_(std::make_shared<Watchdog::Watched>()), node_(nodes.at(0)), nodes_(std::move(nodes)),
	      token_(token), pool_(ctx.pool), watchdog_(ctx.watchdog), session_ttl_(session_ttl),
	      grace_(ctx.options.statement_grace), election_(election), version_(version)
	{
		w_->session = std::move(session);
		w_->deadline = deadline;
		watchdog_->watch(w_, deadline);
	}
	~ZookeeperGrant() override
	{
		std::unique_ptr<Session> ending;
		{
			std::lock_guard<std::mutex> lk(w_->mu);
			ending = std::move(w_->session);
		}
		Session::dispose(std::move(ending));
	}
	ZookeeperGrant(const ZookeeperGrant &) = delete;
	ZookeeperGrant &operator=(const ZookeeperGrant &) = delete;

	Result<bool> renew(milliseconds ttl) noexcept override
	{
		try {
			std::lock_guard<std::mutex> lk(w_->mu);
			auto &session = w_->session;
			auto sent = Clock::now();
			if (!session || session->closed() || session->expired())
				return false; // released, or SESSION_EXPIRED: the node is gone
			if (!session->connected())
				return Error{Errc::unavailable, "",
				             "zookeeper " + session->hosts() +
				                 ": disconnected, the session is not confirmed"};
			// an answer after the local deadline would come too late anyway,
			// and the watchdog waits for this lock to end the session then
			auto until = std::min(deadline_after(sent, grace_), w_->deadline);
			auto a = session->exists(node_, false, until);
			if (a.answered && (a.rc == ZNONODE || a.rc == ZSESSIONEXPIRED || a.rc == ZINVALIDSTATE))
				return false;
			if (!a.answered || a.rc != ZOK)
				return failure(a, session->hosts(), "exists " + node_, grace_);
			if (a.stat.czxid != token_ || a.stat.ephemeralOwner != session->id())
				return false; // not our node any more
			auto renewed = deadline_after(sent, ttl);
			if (renewed < w_->deadline) // a shorter ttl: the watchdog looks earlier
				watchdog_->watch(w_, renewed);
			w_->deadline = renewed;
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
			std::lock_guard<std::mutex> lk(w_->mu);
			auto &session = w_->session;
			if (!session || session->closed() || session->expired())
				return false;
			if (!session->connected())
				return Error{Errc::unavailable, "",
				             "zookeeper " + session->hosts() +
				                 ": disconnected, the session is not confirmed"};
			auto until = std::min(deadline_after(Clock::now(), grace_), w_->deadline);
			return publish(*session, node_, token_, version_, value, until, grace_);
		} catch (...) {
			return Error{Errc::internal, "", "out of memory"};
		}
	}

	Result<bool> release() noexcept override
	{
		Owned ending; // disposed of (not closed waiting) after the lock, unless pooled
		try {
			std::lock_guard<std::mutex> lk(w_->mu);
			if (!w_->session)
				return false; // released already, or ended by the watchdog
			ending.session = std::move(w_->session);
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
	const std::shared_ptr<Watchdog::Watched> w_; // the session and deadline, under w_->mu
	const std::string node_;
	const std::vector<std::string> nodes_; // node_ first
	const std::int64_t token_;
	const std::shared_ptr<SessionPool> pool_;
	const std::shared_ptr<Watchdog> watchdog_;
	const milliseconds session_ttl_;
	const milliseconds grace_;
	const bool election_;
	int version_; // the node's data version we last saw (guarded by w_->mu)
};

} // namespace

Granted
granted(Owned &session, const Context &ctx, const std::string &folder, const LockNode &mine, bool election,
        const LeaseOptions &options, Clock::time_point checked)
{
	Granted g;
	g.token = mine.czxid;
	g.deadline = deadline_after(checked, options.ttl);
	g.grant = std::make_unique<ZookeeperGrant>(std::move(session.session), paths_of(folder, mine), mine.czxid,
	                                           g.deadline, ctx, options.ttl, election, mine.version);
	return g;
}

} // namespace pglease::detail::zookeeper
