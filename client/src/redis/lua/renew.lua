-- renew.lua -- a lock's, a reader's or a permit's renewal (redis/grant.cpp).
-- KEYS: lock.  ARGV: match, mode (lib/match.lua), ttl (ms).  1: extended;
-- 0: not held.
--#include common
--#include read_lock
--#include grants
--#include match

if member then
	redis.call('ZADD', KEYS[1], 'XX', expiry(now, tonumber(ARGV[3])), member)
	cover(KEYS[1], tonumber(ARGV[3]))
	return 1
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
