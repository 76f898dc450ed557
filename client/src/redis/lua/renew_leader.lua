-- renew_leader.lua -- a leader's renewal (redis/election.cpp): the value key
-- lives and ends with the lock; an election's grant is a lock, so shared
-- grants are "not held".
-- KEYS: lock, value.  ARGV: match, mode (lib/match.lua), ttl (ms).  1: both
-- extended; 0: not held.
--#include common
--#include read_lock
--#include grants
--#include match
if member then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
