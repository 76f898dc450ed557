-- read.lua -- an election's view (redis/election.cpp).
-- KEYS: lock, value, counter, epoch.  {lock, value, counter, PTTL of the
-- lock, epoch}, '' for a missing key (and for a lock key holding readers or
-- permits: no leader).
--#include read_lock

local lock = read_lock(KEYS[1]) or ''
local value = redis.call('GET', KEYS[2]) or ''
local counter = redis.call('GET', KEYS[3]) or ''
local ttl = -2
if lock ~= '' then ttl = redis.call('PTTL', KEYS[1]) end
return {lock, value, counter, ttl, redis.call('GET', KEYS[4]) or ''}
