-- acquire.lua -- an exclusive lock (redis/lock.cpp): lib/acquire.lua's
-- acquire with the writer's mark, and the waiters' queue (lib/queue.lua).
-- KEYS: lock, counter, writers, queue order, queue beats.  ARGV: holder,
-- ttl (ms), writer mark (ms; '0': not waiting), '1' when this request has
-- marked itself before, beat (ms; '0': not queued, a try).
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
local beat = tonumber(ARGV[5] or '0')
local now, head, head_beat
if KEYS[4] and (beat > 0 or queued(KEYS[4])) then
	now = q_now()
	if now then head, head_beat = queue_head(KEYS[4], KEYS[5], now) end
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
		dequeue(KEYS[4], KEYS[5], ARGV[1])
	elseif beat > 0 then
		enqueue(KEYS[4], KEYS[5], ARGV[1], now, beat)
	end
end
return answer
