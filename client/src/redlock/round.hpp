// redlock/round.hpp -- one round of Redlock: a script asked of every node at
// the same time from the calling thread, and what they answered.
//
// The call is written to every node first (redlock/link.hpp), then one
// poll(2) over all their sockets waits for the replies, until enough nodes
// said yes (the caller's majority), or every node answered, or the round's
// deadline (one per-node timeout) passed.  So a round takes one per-node
// timeout however many nodes are frozen, and no time at all for a node that
// is slower than a majority; and it starts no thread.
//
// The links of a round come from a pool of the locker's (one link per node
// per set, at most ClientOptions::max_idle_connections sets kept idle), so
// that calls from several threads each have their own.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "redlock/link.hpp"

namespace pglease::detail::redlock {

/// What the nodes answered to one round of a script.
struct Votes {
	std::size_t yes = 0;     ///< replied 1
	std::size_t no = 0;      ///< replied another integer
	std::size_t refused = 0; ///< refused the credentials or the keys (Errc::permission)
	std::string errors;      ///< the failing nodes, for a message

	/// The Error of a round with no majority of answers: Errc::permission
	/// when a node refused us (waiting will not change its ACL or password),
	/// else Errc::unavailable.
	[[nodiscard]] Error short_of(std::string what) const
	{
		return Error{refused > 0 ? Errc::permission : Errc::unavailable, "", std::move(what) + errors};
	}
};

/// The nodes of one redlock:// URL and the idle link sets.
class Cluster {
public:
	Cluster(std::vector<std::shared_ptr<Node>> nodes, std::size_t max_idle);

	[[nodiscard]] std::size_t size() const noexcept { return nodes_.size(); }

	/// One round: script on key with args, every node bounded by timeout; it
	/// ends early once enough nodes said yes (the others' replies are left
	/// to come, see link.hpp).  May throw std::bad_alloc.
	[[nodiscard]] Votes ask(const Script &script, std::string_view key,
	                        const std::vector<std::string_view> &args, std::chrono::milliseconds timeout,
	                        std::size_t enough);

private:
	using Links = std::vector<Link>;
	std::unique_ptr<Links> borrow();
	void give_back(std::unique_ptr<Links> links) noexcept;

	const std::vector<std::shared_ptr<Node>> nodes_;
	const std::size_t max_idle_;
	std::mutex mu_; // guards idle_
	std::vector<std::unique_ptr<Links>> idle_;
};

} // namespace pglease::detail::redlock
