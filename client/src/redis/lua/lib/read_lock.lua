-- lib/read_lock.lua -- read_lock(key): the lock key holds an exclusive grant
-- (a string, "<token>:<holder>", PX ttl: the layout of every release so
-- far) or the shared grants and permits of the resource (a sorted set, see
-- lib/grants.lua).  read_lock answers the string, or false with true when
-- the key is such a set (GET's WRONGTYPE), so the exclusive scripts keep
-- their one key and their ACL: they call the sorted-set commands only on a
-- resource that has shared grants.  An election's scripts take its first
-- answer alone: a set leads nobody.  Any other error is raised.

local function read_lock(key)
	local v = redis.pcall('GET', key)
	if type(v) == 'table' then
		if v.err and string.find(v.err, 'WRONGTYPE', 1, true) then return false, true end
		error(v)
	end
	return v, false
end
