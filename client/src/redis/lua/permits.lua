-- permits.lua -- a permit of a semaphore of N (redis/permits.cpp):
-- lib/share.lua's share, admitted while fewer than N are held.
-- KEYS: lock, counter, writers.  ARGV: holder, ttl (ms), 'limit:<N>', N.
-- > 0: the token granted (or the holder's own); <= 0: -(ms to wait).
--#include common
--#include read_lock
--#include grants
--#include share
local n = tonumber(ARGV[4])
return share(function(s, now)
	if #s.grants >= n then return wait_for(s.first, now) end
	return nil
end)
