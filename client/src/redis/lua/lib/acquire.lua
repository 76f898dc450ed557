-- lib/acquire.lua -- acquire(prepare, w): the answer of acquire.lua, and of
-- campaign.lua before it stores the value.  After lib/common.lua,
-- lib/grants.lua and lib/mark.lua.
--
-- KEYS: lock, counter, and (a lock) writers.  ARGV: holder, ttl (ms).
-- > 0: the token granted (or the holder's own, its expiry set to ttl); <= 0:
-- held by another holder, -(ms until it may be free).  Every check comes
-- before the first write, so a refusal (an error reply) changes nothing.
-- w (nil for a campaign) is {key, mark, marked}, the writer's mark: a
-- waiting writer marks itself (lib/mark.lua), on shared grants (the sorted
-- set) or behind another holder's lock; the readers' last release or
-- expiry frees the resource, and the set is replaced by the lock.  Permits
-- there, or a reader's grant of this holder, are a mismatch.  prepare (nil
-- for a lock) runs with the token about to be granted before the first
-- write: Redis checks a script's commands and channels against the user's
-- ACL only when it calls them, and a script is not rolled back, so
-- whatever may be refused runs before anything is written.

local function over_grants()
	local now = now_ms()
	local s = read_grants(KEYS[1], now)
	for _, g in ipairs(s.grants) do
		if g.holder == ARGV[1] then mismatch('own:' .. (s.kind or '?')) end
	end
	if #s.grants == 0 then
		redis.call('DEL', KEYS[1])
		return nil
	end
	if s.kind ~= 'shared' then mismatch(s.kind or '?') end
	return wait_for(s.first, now)
end
local function refuse(w, answer)
	if w and w.mark > 0 then mark_writer(w.key, ARGV[1], w.mark) end
	return answer
end
local function granted(w, token)
	if w and w.marked then unmark_writer(w.key, ARGV[1]) end
	return token
end
local function acquire(prepare, w)
	local current, grants = read_lock(KEYS[1])
	if grants then
		local refused = over_grants()
		if refused then return refuse(w, refused) end
	end
	if current then
		local sep = string.find(current, ':', 1, true)
		if sep and string.sub(current, sep + 1) == ARGV[1] then
			local token = token_of(string.sub(current, 1, sep - 1))
			if not token or token < 1 then
				return redis.error_reply('PGLEASE_LOCK holds no token')
			end
			if prepare then prepare(token) end
			redis.call('PEXPIRE', KEYS[1], ARGV[2])
			return granted(w, token)
		end
		return refuse(w, -math.max(redis.call('PTTL', KEYS[1]), 1))
	end
	local token = next_token()
	if prepare then prepare(token) end
	token = redis.call('INCR', KEYS[2])
	redis.call('SET', KEYS[1], string.format('%d', token) .. ':' .. ARGV[1], 'PX', ARGV[2])
	return granted(w, token)
end
