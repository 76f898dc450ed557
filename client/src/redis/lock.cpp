// redis/lock.cpp -- the exclusive lock on one Redis node: the single-instance
// lock of the Redis distlock page (acquire.lua: the lock key set to
// "<token>:<holder>" PX ttl when free, the token from the resource's
// counter), with writer preference over readers: a writer that will wait
// leaves its mark at each try (lib/mark.lua), and takes it back when its
// wait is over (withdraw.lua).  Renewal and release: redis/grant.cpp.
#include "redis/lua.hpp"
#include "redis/recipes.hpp"

namespace pglease::detail::redis {

namespace {

const Script acquire_script{std::string{lua::acquire}};
const Script withdraw_script{std::string{lua::withdraw}};

} // namespace

Result<Reply>
ask_lock(Node &node, const Keys &keys, std::string_view holder, std::string_view ttl,
         std::chrono::milliseconds mark, bool marked, std::chrono::milliseconds timeout) noexcept
{
	try {
		// a waiting writer (mark > 0) is queued for lib/queue.lua's
		// queue_beat; the script names the queue's keys itself
		return node.eval(acquire_script, {keys.lock, keys.counter, keys.writers},
		                 {holder, ttl, std::to_string(mark.count()), marked ? "1" : "0"}, timeout);
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

void
withdraw_mark(Node &node, const Keys &keys, std::string_view holder,
              std::chrono::milliseconds timeout) noexcept
{
	(void)node.eval(withdraw_script, {keys.writers, keys.queue, keys.beats}, {holder}, timeout);
}

} // namespace pglease::detail::redis
