-- acquire.lua -- an exclusive lock (redis/lock.cpp): lib/acquire.lua's
-- acquire with the writer's mark, and the waiters' queue (lib/queue.lua).
-- KEYS: lock, counter, writers.  ARGV: holder, ttl (ms), writer mark (ms;
-- '0': not waiting, nor queued), '1' when this request has marked itself
-- before.  The queue's keys are named after the lock's (queue_keys), not
-- passed: a client not yet authenticated may send at most 10 arguments,
-- and its EVALSHA must reach the server's NOAUTH.
-- > 0: the token granted (or the holder's own, its expiry set to ttl);
-- <= 0: held by another holder, or free but another waiter's turn,
-- -(ms until it may be free).  A waiting request takes its place in the
-- queue when refused, and leaves it when granted.
--#include common
--#include read_lock
--#include grants
--#include mark
--#include acquire
--#include queue
local w = {key = KEYS[3], mark = tonumber(ARGV[3]), marked = ARGV[4] == '1'}
local beat = 0
if w.mark > 0 then beat = queue_beat end
local order, beats = queue_keys(KEYS[1])
local now, head, head_beat
if beat > 0 or queued(order) then
	now = q_now()
	if now then head, head_beat = queue_head(order, beats, now) end
end
local answer
if head and head ~= ARGV[1] and redis.call('PTTL', KEYS[1]) == -2 then
	-- free, but the head's turn: at most until its beat ends
	if w.mark > 0 then mark_writer(w.key, ARGV[1], w.mark) end
	answer = -math.max(head_beat - now, 1)
else
	answer = acquire(nil, w)
end
if now and type(answer) == 'number' then
	if answer > 0 then
		dequeue(order, beats, ARGV[1])
	elseif beat > 0 then
		enqueue(order, beats, ARGV[1], now, beat)
	end
end
return answer
