-- lib/common.lua -- what every lock script starts with: its tokens.
-- token_of: a token's text as a number, nil when it is not one.  The
-- counter goes through Lua numbers (doubles), exact only up to 2^53-1: it
-- must be absent or a decimal integer from 0 to 2^53-2 (the next token then
-- is at most 2^53-1), else PGLEASE_COUNTER: a damaged or hostile counter
-- (abc, 5.5, -3, 9007199254740993) must never hand out a token that repeats
-- or goes down.  INCR then cannot fail, and its result is exact.
--
-- Before lib/read_lock.lua, which every lock script includes too.

local limit = 9007199254740991
local function token_of(s)
	if s == '0' then return 0 end
	if #s > 16 or not string.find(s, '^[1-9]%d*$') then return nil end
	local n = tonumber(s)
	if n > limit then return nil end
	return n
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
