-- lib/common.lua -- what every lock script starts with.  token_of: a
-- token's text as a number, nil when it is not one.  The counter goes
-- through Lua numbers (doubles), exact only up to 2^53-1: it must be absent
-- or a decimal integer from 0 to 2^53-2 (the next token then is at most
-- 2^53-1), else PGLEASE_COUNTER: a damaged or hostile counter (abc, 5.5,
-- -3, 9007199254740993) must never hand out a token that repeats or goes
-- down.  INCR then cannot fail, and its result is exact.
--
-- The lock key holds an exclusive grant (a string, "<token>:<holder>", PX
-- ttl: the layout of every release so far) or the shared grants and permits
-- of the resource (a sorted set, see lib/grants.lua).  read_lock answers the
-- string, or false with true when the key is such a set (GET's WRONGTYPE),
-- so the exclusive scripts keep their one key and their ACL: they call the
-- sorted-set commands only on a resource that has shared grants.

local limit = 9007199254740991
local function token_of(s)
	if s == '0' then return 0 end
	if #s > 16 or not string.find(s, '^[1-9]%d*$') then return nil end
	local n = tonumber(s)
	if n > limit then return nil end
	return n
end
local function read_lock(key)
	local v = redis.pcall('GET', key)
	if type(v) == 'table' then
		if v.err and string.find(v.err, 'WRONGTYPE', 1, true) then return false, true end
		error(v)
	end
	return v, false
end
-- the next token of the counter KEYS[2], checked before anything is written
local function next_token()
	local raw = redis.call('GET', KEYS[2])
	if not raw then return 1 end
	local last = token_of(raw)
	if not last then
		error(redis.error_reply('PGLEASE_COUNTER ' .. (string.gsub(string.sub(raw, 1, 32), '[^%w%.%+%-]', '?'))))
	end
	if last >= limit then error(redis.error_reply('PGLEASE_EXHAUSTED counter')) end
	return last + 1
end
