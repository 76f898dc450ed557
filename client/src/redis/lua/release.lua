-- release.lua -- a lock's, a reader's or a permit's release (redis/grant.cpp).
-- KEYS: lock, queue order, queue beats.  ARGV: match, mode (lib/match.lua),
-- channel.  1: deleted (and waiters told); 0: not held.  A shared grant
-- leaves the set, which goes with its last member.  The message is
-- "turn:<holder>" when a lock's queue has a live head (lib/queue.lua: it
-- alone may take the lock, the others need not wake), else "released".
--#include common
--#include read_lock
--#include grants
--#include match
--#include queue

local said = 'released'
if member then
	redis.call('ZREM', KEYS[1], member)
	drop_if_idle(KEYS[1], read_grants(KEYS[1], now))
else
	if queued(KEYS[2]) then
		local at = q_now()
		local head = at and queue_head(KEYS[2], KEYS[3], at)
		if head then said = 'turn:' .. head end
	end
	redis.call('DEL', KEYS[1])
end
redis.call('PUBLISH', ARGV[3], said)
return 1
