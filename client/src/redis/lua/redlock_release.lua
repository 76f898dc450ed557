-- redlock_release.lua -- Redlock, on each node (redlock/locker.cpp).
-- KEYS: lock.  ARGV: value.  1: deleted; 0: not this grant.

if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])
