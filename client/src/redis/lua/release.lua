-- release.lua -- a lock's, a reader's or a permit's release (redis/grant.cpp).
-- KEYS: lock.  ARGV: match, mode (lib/match.lua), channel.  1: deleted (and
-- waiters told); 0: not held.  A shared grant leaves the set, which goes
-- with its last member.
--#include common
--#include read_lock
--#include grants
--#include match

if member then
	redis.call('ZREM', KEYS[1], member)
	drop_if_idle(KEYS[1], read_grants(KEYS[1], now))
else
	redis.call('DEL', KEYS[1])
end
redis.call('PUBLISH', ARGV[3], 'released')
return 1
