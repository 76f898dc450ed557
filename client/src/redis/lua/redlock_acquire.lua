-- redlock_acquire.lua -- Redlock, on each node (redlock/locker.cpp).
-- KEYS: lock.  ARGV: value, ttl (ms).  1: set; 0: held.

if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
