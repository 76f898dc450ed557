-- lib/epoch.lua -- keep_epoch(key, counter): a new epoch at key when the
-- term counter is new (not yet INCRed: a server restarted without its data
-- counts from 1 again) or the key is missing (an election older than
-- epochs): the server's TIME in microseconds, as text.  Before any INCR of
-- the script.

local function keep_epoch(key, counter)
	if redis.call('GET', counter) and redis.call('GET', key) then return end
	local t = redis.call('TIME')
	redis.call('SET', key, t[1] .. string.format('%06d', tonumber(t[2])))
end
