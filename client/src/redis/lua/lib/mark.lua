-- lib/mark.lua -- the marks of the writers waiting for a resource, at its
-- writers' key (the lock's name, a NUL byte, "writers"; redis/keys.hpp): a
-- sorted set of holders, each scored by its mark's expiry (the server's
-- TIME, ms), the key's PTTL covering the longest.  A writer that waits
-- (re)marks itself at each poll, whatever holds the resource -- readers or
-- another writer's lock -- and takes its mark back when granted or when its
-- wait is over; no reader is granted while a mark lives (share.lua), so
-- readers that come after a waiting writer go after it (writer preference),
-- also when the writer before it releases.  mark_writer goes through pcall:
-- a user whose ACL lacks TIME or ZADD (a lock-only user) waits unmarked
-- instead of failing; the lock's own commands are never refused by it.
-- Needs `limit` (lib/common.lua) when a script marks.

local function mark_writer(key, holder, ms)
	local t = redis.pcall('TIME')
	if t.err then return end
	local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
	local pruned = redis.pcall('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now))
	if type(pruned) == 'table' and pruned.err then return end
	local added = redis.pcall('ZADD', key, string.format('%d', math.min(now + ms, limit)), holder)
	if type(added) == 'table' and added.err then return end
	if redis.call('PTTL', key) < ms then redis.call('PEXPIRE', key, string.format('%d', ms)) end
end
local function unmark_writer(key, holder)
	local removed = redis.pcall('ZREM', key, holder)
	if type(removed) ~= 'number' then return 0 end
	return removed
end
