-- lib/share.lua -- share(admit): the answer of shared.lua and permits.lua,
-- a reader's or a permit's request.  After lib/common.lua and
-- lib/grants.lua.
--
-- KEYS: lock, counter, writers.  ARGV: holder, ttl (ms), kind ('shared' or
-- 'limit:<N>').  acquire.lua's answers: the holder's own grant renewed (its
-- token), or a new grant in the sorted set once admit(s, now) -- the
-- grants read -- answers nil, else admit's wait.  A lock held (a string)
-- makes a reader wait; a permit request there is a mismatch, as is a set of
-- another kind.

local function share(admit)
	local holder, ttl, kind = ARGV[1], tonumber(ARGV[2]), ARGV[3]
	local current = read_lock(KEYS[1])
	if current then
		local sep = string.find(current, ':', 1, true)
		if sep and string.sub(current, sep + 1) == holder then mismatch('own:lock') end
		if kind ~= 'shared' then mismatch('lock') end
		return -math.max(redis.call('PTTL', KEYS[1]), 1)
	end
	local now = now_ms()
	local s = read_grants(KEYS[1], now)
	for _, g in ipairs(s.grants) do
		if g.holder == holder then
			if s.kind ~= kind then mismatch('own:' .. (s.kind or '?')) end
			redis.call('ZADD', KEYS[1], 'XX', expiry(now, ttl), g.member)
			cover(KEYS[1], ttl)
			return g.token
		end
	end
	if drop_if_idle(KEYS[1], s) then s.kind = nil end
	if s.kind and s.kind ~= kind then mismatch(s.kind) end
	local wait = admit(s, now)
	if wait then return wait end
	local token = next_token()
	token = redis.call('INCR', KEYS[2])
	if not s.kind then redis.call('ZADD', KEYS[1], '+inf', '=' .. kind) end
	redis.call('ZADD', KEYS[1], expiry(now, ttl), string.format('%d', token) .. ':' .. holder)
	cover(KEYS[1], ttl)
	return token
end
