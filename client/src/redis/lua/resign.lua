-- resign.lua -- a leader's resignation (redis/election.cpp).
-- KEYS: lock, value.  ARGV: match, mode (lib/match.lua), release channel,
-- election channel.  1: both deleted, waiting candidates and observers
-- told; 0: not held.  (Published first: a channel outside the ACL is
-- refused before the DEL.)
--#include common
--#include read_lock
--#include grants
--#include match
if member then return 0 end
redis.call('PUBLISH', ARGV[3], 'released')
redis.call('PUBLISH', ARGV[4], 'resigned')
redis.call('DEL', KEYS[1], KEYS[2])
return 1
