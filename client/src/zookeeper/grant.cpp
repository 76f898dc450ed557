// zookeeper/grant.cpp -- the grant of every ZooKeeper recipe (grant.hpp).
#include "zookeeper/grant.hpp"

#include <algorithm>
#include <condition_variable>
#include <thread>

#include "zookeeper/election.hpp"

namespace pglease::detail::zookeeper {

namespace {

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
			return publish(*session_, node_, token_, version_, value, until, grace_);
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

} // namespace

Granted
granted(Owned &session, const Context &ctx, const std::string &folder, const LockNode &mine, bool election,
        const LeaseOptions &options, Clock::time_point checked)
{
	Granted g;
	g.token = mine.czxid;
	g.deadline = deadline_after(checked, options.ttl);
	g.grant = std::make_unique<ZookeeperGrant>(std::move(session.session), paths_of(folder, mine), mine.czxid,
	                                           g.deadline, ctx.pool, options.ttl, ctx.options.statement_grace,
	                                           election, mine.version);
	return g;
}

} // namespace pglease::detail::zookeeper
