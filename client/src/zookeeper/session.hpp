// zookeeper/session.hpp -- one ZooKeeper session of the official C client
// (libzookeeper_mt), as the provider uses it: one per lease.
//
// Every request is asynchronous (zoo_a*) and waited for until a deadline the
// caller gives: the synchronous zoo_* calls wait until the client declares
// the connection lost (two thirds of the session timeout, the lease's TTL),
// so a frozen server held a call for seconds past its bound.  A request not
// answered by its deadline is abandoned, not cancelled: the server may still
// run it later, so the caller ends the session (dispose), and what the
// request created goes with it.
//
// Locking notes: the C client calls on_event and the completions from its
// own completion thread.  Session::mu_ guards the event generation, the
// handle's closing and the table of requests in flight; a watch or session
// event bumps the generation and wakes every waiter, who then looks at the
// state again (events carry no data this provider needs).  close() joins the
// client's threads, so no callback runs after it and the Session may be
// freed; it must not be called from a callback.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <zookeeper/zookeeper.h>

#include "pglease/options.hpp"
#include "pglease/result.hpp"

namespace pglease::detail::zookeeper {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// The Error a ZooKeeper return code amounts to (what: the operation and path).
[[nodiscard]] Error error_of(int rc, const std::string &hosts, const std::string &what);
/// The ACL of every node an authenticated session creates: all permissions
/// for the creator's identity (the "auth" scheme: the digest id the session
/// authenticated as), READ for anyone.  Deleting a node is the DELETE
/// permission of its parent, so a lock node under a folder with this ACL can
/// be deleted by its creator's identity only.
[[nodiscard]] const ACL_vector &creator_read_acl() noexcept;
/// Errc::unavailable: no answer to `what` within `bound`.
[[nodiscard]] Error unanswered(const std::string &hosts, const std::string &what, milliseconds bound);

/// What one request came back with.
struct Answer {
	bool answered = false; ///< false: no answer by the deadline (the request may still run)
	int rc = ZOPERATIONTIMEOUT;
	Stat stat{};                    ///< exists, create, get_data, set_data
	std::string path;               ///< create: the node's name as created
	std::string data;               ///< get_data: the node's data (empty for none)
	std::vector<std::string> names; ///< get_children
	/// get_acl: each entry's perms (ZOO_PERM_*) and "scheme:id"
	std::vector<std::pair<int, std::string>> acl;
};

class Session {
public:
	/// Connect to hosts with a session timeout of ttl; Errc::unavailable if
	/// not connected by until.  With auth ("user:password"), the session
	/// authenticates with the digest scheme once connected, waiting for the
	/// server's verdict (Errc::permission if refused; the C client sends it
	/// again itself on every reconnect of the session), and every node it
	/// creates carries creator_read_acl(); without, world:anyone:cdrwa.
	static Result<std::unique_ptr<Session>> open(const std::string &hosts, milliseconds ttl,
	                                             Clock::time_point until,
	                                             const std::string &auth = {}) noexcept;
	/// End a session without waiting: zookeeper_close sends closeSession and
	/// then waits up to 1.5 s for the server's answer (3 s more to send it),
	/// which a frozen server never gives, so this runs it on a thread of its
	/// own.  The server deletes the session's nodes when it reads the close;
	/// if the connection was already lost, when the session expires.
	static void dispose(std::unique_ptr<Session> session) noexcept;
	~Session() { close(); }
	Session(const Session &) = delete;
	Session &operator=(const Session &) = delete;

	/// End the session now (see dispose).
	void close() noexcept;
	[[nodiscard]] bool closed() noexcept;
	[[nodiscard]] const std::string &hosts() const noexcept { return hosts_; }
	[[nodiscard]] bool connected() noexcept;
	[[nodiscard]] bool expired() noexcept;
	/// The session timeout the server granted (zoo_recv_timeout).
	[[nodiscard]] milliseconds negotiated() noexcept;
	[[nodiscard]] std::int64_t id() noexcept;

	/// The count of events so far; wait_event waits for one more than seen.
	[[nodiscard]] std::uint64_t generation() noexcept;
	/// true: an event came after seen; false: until passed first.
	bool wait_event(std::uint64_t seen, Clock::time_point until) noexcept;
	/// Wait until connected (true) or expired or until passed (false).
	bool wait_connected(Clock::time_point until) noexcept;

	/// The requests, each answered or abandoned by until.  watch: an exists
	/// watch whose firing counts as an event of this session.
	Answer exists(const std::string &path, bool watch, Clock::time_point until) noexcept;
	Answer create(const std::string &path, std::string_view data, int mode, Clock::time_point until) noexcept;
	struct Call; // one request in flight (session.cpp)
	/// A request sent and not waited for yet.  The server answers a
	/// session's requests in order, so one sent after it is answered after
	/// it: pipelined, the two cost one round trip.  Every Pending is awaited.
	struct Pending {
		std::shared_ptr<Call> call;
		int rc = ZSYSTEMERROR; ///< the client's, when it was sent (ZOK: sent)
	};
	/// create without waiting for the answer (await has it).
	Pending send_create(const std::string &path, std::string_view data, int mode) noexcept;
	/// The answer of p, or none if not answered by until.
	Answer await(Pending &p, Clock::time_point until) noexcept;
	Answer remove(const std::string &path, Clock::time_point until) noexcept;
	/// children, get_data -- watch: a child or data watch whose firing
	/// counts as an event of this session (an election's observers)
	Answer children(const std::string &path, Clock::time_point until, bool watch = false) noexcept;
	Answer get_data(const std::string &path, bool watch, Clock::time_point until) noexcept;
	/// setData only if the node's version is still `version` (the server
	/// compares and writes in one step: ZBADVERSION otherwise)
	Answer set_data(const std::string &path, std::string_view data, int version,
	                Clock::time_point until) noexcept;
	Answer get_acl(const std::string &path, Clock::time_point until) noexcept;
	/// One operation of multi: a create (mode: ZOO_EPHEMERAL_SEQUENTIAL, ...),
	/// a delete of any version, or (set) a setData of any version.
	struct Op {
		bool create = true;
		std::string path;
		std::string data;
		int mode = 0;
		bool set = false;
	};
	/// Several operations as one transaction (zoo_amulti): all or none, one
	/// zxid, and a folder's sequential creates get consecutive numbers.
	/// names: the created nodes' paths, in the order of their ops; stat:
	/// the Stat of its setData op, if any (a create in a multi reports none).
	Answer multi(const std::vector<Op> &ops, Clock::time_point until) noexcept;

	/// The watcher of the session and of every watch it sets (context: this).
	static void on_event(zhandle_t *zh, int type, int state, const char *path, void *context) noexcept;

private:
	explicit Session(std::string hosts) : hosts_(std::move(hosts)) {}
	template <class Start> Pending send(Start start) noexcept;
	template <class Start> Answer run(Clock::time_point until, Start start) noexcept;
	int start_multi(zhandle_t *zh, Call *call, const std::vector<Op> &ops);
	Result<void> authenticate(const std::string &auth, Clock::time_point until) noexcept;

	std::string hosts_;
	bool authenticated_ = false; // set once in open(): which ACL create() gives
	zhandle_t *zh_ = nullptr;    // set once in open(), cleared by close()
	std::mutex mu_;
	std::condition_variable cv_;
	std::uint64_t generation_ = 0;
	// every request whose completion may still run: freed when answered,
	// or after close (no completion runs after zookeeper_close)
	std::unordered_map<Call *, std::shared_ptr<Call>> calls_;
};

} // namespace pglease::detail::zookeeper
