-- proclaim.lua -- a leader's new value (redis/election.cpp).
-- KEYS: lock, value.  ARGV: grant "<term>:<holder>", "<term>:", value,
-- channel.  1: set and published; 0: the lock no longer holds that grant
-- (readers or permits hold the name now, say).  The value key takes the
-- lock's remaining PTTL, so the two still end together.  TIME and PUBLISH
-- before the write: Redis checks them against the ACL only when called, and
-- a script is not rolled back.
--#include read_lock

if read_lock(KEYS[1]) ~= ARGV[1] then return 0 end
local ttl = redis.call('PTTL', KEYS[1])
--#include term_value

local new = term_value(KEYS[2], ARGV[2], ARGV[3])
redis.call('PUBLISH', ARGV[4], 'proclaimed')
if ttl > 0 then
	redis.call('SET', KEYS[2], new, 'PX', ttl)
else
	redis.call('SET', KEYS[2], new)
end
return 1
