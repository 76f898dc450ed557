-- campaign.lua -- an election's campaign (redis/election.cpp).
-- KEYS: lock, counter, value, epoch.  ARGV: holder, ttl (ms), value,
-- election channel.  acquire.lua's answers; when granted, the value key
-- set to "<term>:<since>:<value>" with the same PX (the term's since kept
-- on a re-campaign), a change published, and a new epoch when the counter
-- starts anew (keep_epoch).  TIME and PUBLISH come before the writes (see
-- lib/acquire.lua); observers read after the script either way.
--#include common
--#include read_lock
--#include grants
--#include mark
--#include acquire
--#include term_value
--#include epoch

local new, old
local token = acquire(function(t)
	new, old = term_value(KEYS[3], string.format('%d', t) .. ':', ARGV[3])
	if new ~= old then redis.call('PUBLISH', ARGV[4], 'elected') end
	keep_epoch(KEYS[4], KEYS[2])
end, nil)
if type(token) ~= 'number' or token <= 0 then return token end
redis.call('SET', KEYS[3], new, 'PX', ARGV[2])
return token
