// redis/keys.hpp -- the Redis provider's key and channel names for one
// resource or election, defined once for the lock recipe (redis/locker.cpp)
// and the election (redis/election.cpp).  Not hash-tagged: one node, no
// Redis Cluster.  docs/election.md and locker.cpp's banner list them.
#pragma once

#include <string>
#include <string_view>

namespace pglease::detail::redis {

struct Keys {
	std::string lock;     ///< pglease:lock:<r>: the grant, "<token>:<holder>", PX ttl; or shared grants, a sorted set
	std::string writers;  ///< pglease:lock:<r> NUL "writers": waiting writers' marks, a sorted set
	std::string queue;    ///< pglease:lock:<r> NUL "queue": waiting writers by arrival, a sorted set
	std::string beats;    ///< pglease:lock:<r> NUL "beats": the same by their beat's end, a sorted set
	std::string counter;  ///< pglease:token:<r>: the token (term) counter, no TTL
	std::string epoch;    ///< pglease:token:<r> NUL "epoch": an election's epoch, the counter's life, no TTL
	std::string released; ///< pglease:released:<r>: channel, a release wakes waiting candidates
	std::string value;    ///< pglease:value:<r>: an election's "<term>:<since ms>:<value>", PX ttl
	std::string election; ///< pglease:election:<r>: channel, every change of the election
};

inline Keys
keys_of(std::string_view resource)
{
	std::string r{resource};
	// the writers' key: the lock's name, a NUL byte, "writers" -- no
	// resource's lock (names hold no NUL), and within the lock's ACL
	// pattern; the queue's two likewise, the epoch's beside the counter
	return Keys{"pglease:lock:" + r,
	            "pglease:lock:" + r + std::string{"\0writers", 8},
	            "pglease:lock:" + r + std::string{"\0queue", 6},
	            "pglease:lock:" + r + std::string{"\0beats", 6},
	            "pglease:token:" + r,
	            "pglease:token:" + r + std::string{"\0epoch", 6},
	            "pglease:released:" + r,
	            "pglease:value:" + r,
	            "pglease:election:" + r};
}

} // namespace pglease::detail::redis
