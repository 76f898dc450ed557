-- lib/term_value.lua -- term_value(key, p, v): an election's value key's new
-- content "<term>:<since>:<v>" for the term whose prefix is p ("<term>:"):
-- the term's own since kept when the key holds that term already (a
-- re-campaign, a proclaim), else the server's TIME now in ms; and the key's
-- old content.

local function term_value(key, p, v)
	local old = redis.call('GET', key)
	local since
	if old and string.sub(old, 1, #p) == p then
		local rest = string.sub(old, #p + 1)
		local sep = string.find(rest, ':', 1, true)
		if sep then since = string.sub(rest, 1, sep - 1) end
	end
	if not since then
		local t = redis.call('TIME')
		since = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
	end
	return p .. since .. ':' .. v, old
end
