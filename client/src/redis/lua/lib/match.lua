-- lib/match.lua -- the compare of renew and release, run at the script's
-- top level: ARGV[1] is the whole value "<token>:<holder>" (ARGV[2] =
-- 'value') or its token part "<token>:" (ARGV[2] = 'token', the token-level
-- calls).  Not held: the script answers 0 here.  On a lock (a string) the
-- script goes on with the key matched; on shared grants (the sorted set),
-- `member` is the live grant matched, for the script's grants part.  After
-- lib/common.lua and lib/grants.lua.

local current, grants = read_lock(KEYS[1])
local member, now
if grants then
	now = now_ms()
	if ARGV[2] == 'value' then
		local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
		if score and tonumber(score) > now then member = ARGV[1] end
	else
		local all = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. string.format('%d', now), '+inf')
		for _, m in ipairs(all) do
			if string.sub(m, 1, #ARGV[1]) == ARGV[1] then member = m end
		end
	end
	if not member then return 0 end
elseif not current then
	return 0
elseif ARGV[2] == 'value' then
	if current ~= ARGV[1] then return 0 end
elseif string.sub(current, 1, #ARGV[1]) ~= ARGV[1] then
	return 0
end
