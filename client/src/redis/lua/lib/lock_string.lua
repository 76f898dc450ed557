-- lib/lock_string.lua -- lock_string(key): the lock's "<term>:<holder>", or
-- false when there is none -- also when the key holds a resource's readers
-- or permits (a sorted set: GET's WRONGTYPE), which lead nobody; any other
-- error is raised.

local function lock_string(key)
	local v = redis.pcall('GET', key)
	if type(v) == 'table' then
		if v.err and string.find(v.err, 'WRONGTYPE', 1, true) then return false end
		error(v)
	end
	return v
end
