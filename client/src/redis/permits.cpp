// redis/permits.cpp -- semaphores on one Redis node: a permit is a member of
// the resource's sorted set of grants, as a reader is (redis/shared.cpp
// says how the set works), of kind "=limit:<N>"; permits.lua admits one
// while fewer than N are live.  Every holder and waiter names the same N
// (another is PGLEASE_MISMATCH, LS003).  Not FIFO: a waiter polls, woken
// by a release's PUBLISH.
#include "redis/lua.hpp"
#include "redis/recipes.hpp"

namespace pglease::detail::redis {

namespace {

const Script permits_script{std::string{lua::permits}};

} // namespace

Result<Reply>
ask_permit(Node &node, const Keys &keys, std::string_view holder, std::string_view ttl, std::uint32_t limit,
           std::chrono::milliseconds timeout) noexcept
{
	try {
		const std::string n = std::to_string(limit);
		return node.eval(permits_script, {keys.lock, keys.counter, keys.writers},
		                 {holder, ttl, "limit:" + n, n}, timeout);
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

} // namespace pglease::detail::redis
