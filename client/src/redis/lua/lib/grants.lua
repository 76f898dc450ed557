-- lib/grants.lua -- the sorted set of a resource's shared grants or permits
-- (at the lock key):
--   "<token>:<holder>"  one grant, scored by its expiry (the server's TIME, ms)
--   "=shared" or "=limit:<N>"  what the grants are, scored +inf
-- (waiting writers' marks are a set of their own, see lib/mark.lua).  Every
-- script prunes what expired (ZREMRANGEBYSCORE) before it reads, and keeps
-- the key's PTTL at least as long as its longest member (cover), so the key
-- ends by itself after its last grant.  A request that disagrees with the
-- set's kind is PGLEASE_MISMATCH <kind> (own:<kind>: the holder's own grant
-- is of that kind), written before anything changes.  After lib/common.lua.

local function now_ms()
	local t = redis.call('TIME')
	return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function cover(key, ms)
	if redis.call('PTTL', key) < ms then redis.call('PEXPIRE', key, string.format('%d', ms)) end
end
local function expiry(now, ms)
	return string.format('%d', math.min(now + ms, limit))
end
local function mismatch(kind)
	error(redis.error_reply('PGLEASE_MISMATCH ' .. kind))
end
-- read_grants: {kind, grants = {{member, token, holder, expiry}},
-- first (the earliest grant's expiry)}, after the pruning
local function read_grants(key, now)
	redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now))
	local all = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
	local s = {grants = {}}
	for i = 1, #all, 2 do
		local m, score = all[i], tonumber(all[i + 1])
		if string.sub(m, 1, 1) == '=' then
			s.kind = string.sub(m, 2)
		else
			local sep = string.find(m, ':', 1, true)
			local token = sep and token_of(string.sub(m, 1, sep - 1))
			if not token then error(redis.error_reply('PGLEASE_LOCK holds no token')) end
			table.insert(s.grants, {member = m, token = token, holder = string.sub(m, sep + 1), expiry = score})
			s.first = math.min(s.first or score, score)
		end
	end
	return s
end
-- idle: no grant left: the key goes
local function drop_if_idle(key, s)
	if #s.grants == 0 then
		redis.call('DEL', key)
		return true
	end
	return false
end
local function wait_for(t, now)
	return -math.max(t - now, 1)
end
