-- redlock_extend.lua -- Redlock, on each node (redlock/locker.cpp).
-- KEYS: lock.  ARGV: value, ttl (ms).  1: extended; 0: not this grant.

if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
