// redis/shared.cpp -- shared leases (readers) on one Redis node
// (docs/shared-leases.md).  While a resource has readers or permits, its
// lock key is a sorted set instead of the lock's string: one member
// "<token>:<holder>" per grant, scored by its expiry in the server's TIME
// (ms), and "=shared" or "=limit:<N>" saying which it is (lib/grants.lua).
// Each script prunes the members that expired, then decides, in one step;
// the key's own PTTL covers its longest member, so it ends with its last
// grant.  Tokens come from the same counter as the locks', so they increase
// across modes.  The lock stays the string it always was (older clients,
// elections and the CLI keep working; an older client meeting the set gets
// Redis' WRONGTYPE, an error, never a grant), and the exclusive scripts
// keep their one key and their ACL: one key means the check "no shared
// grant" is in the same script as the grant.
//
// Writer preference without a queue: a writer that waits refreshes its mark
// (writer_mark, 3 s) in the writers' key at each poll, whatever holds the
// resource, and no reader is granted while a mark lives (shared.lua); it
// takes its mark back when granted or when its wait is over (redis/lock.cpp).
// A writer whose ACL user lacks TIME, ZADD, ZREMRANGEBYSCORE or ZREM waits
// unmarked: readers may then overtake it.  Renew and release name a grant
// by its member, the token-level calls by "<token>:" as for locks
// (redis/grant.cpp).
#include "redis/lua.hpp"
#include "redis/recipes.hpp"

namespace pglease::detail::redis {

namespace {

const Script shared_script{std::string{lua::shared}};

} // namespace

Result<Reply>
ask_shared(Node &node, const Keys &keys, std::string_view holder, std::string_view ttl, std::uint32_t limit,
           std::chrono::milliseconds timeout) noexcept
{
	try {
		return node.eval(shared_script, {keys.lock, keys.counter, keys.writers},
		                 {holder, ttl, "shared", std::to_string(limit)}, timeout);
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

} // namespace pglease::detail::redis
