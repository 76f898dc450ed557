-- shared.lua -- a reader (redis/shared.cpp): lib/share.lua's share, admitted
-- while no writer holds or waits (no live mark at KEYS[3], lib/mark.lua).
-- KEYS: lock, counter, writers.  ARGV: holder, ttl (ms), 'shared', '0'.
-- > 0: the token granted (or the holder's own); <= 0: -(ms to wait).
--#include common
--#include read_lock
--#include grants
--#include share
return share(function(s, now)
	local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
	if last[2] and tonumber(last[2]) > now then return wait_for(tonumber(last[2]), now) end
	return nil
end)
