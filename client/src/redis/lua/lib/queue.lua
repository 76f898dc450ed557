-- lib/queue.lua -- the writers waiting for a lock, in their order of arrival
-- (issue 38): at the order key (the lock's name, a NUL byte, "queue";
-- redis/keys.hpp) a sorted set of holders scored by their place (1, 2, ...),
-- and at the beats key ("...\0beats") the same holders scored by the end of
-- their beat (the server's TIME, ms).  A waiter renews its beat at each poll
-- (at most redis::queue_poll apart, well within its beat); one whose beat
-- ended -- it died, or gave up without withdrawing -- leaves the queue when
-- it comes to the head, so it holds a free lock back at most one beat after
-- its last poll.  A free lock goes to the live head alone (acquire.lua), and
-- release.lua names that head in its PUBLISH so that it alone wakes.  Every
-- command goes through pcall: a user whose ACL lacks them (a lock-only user)
-- waits unqueued, as before the queue.  Both keys' PTTL cover their longest
-- beat, so an idle queue ends by itself.  A script given no order key
-- (nil) has no queue.  queue_beat: a waiter's beat (redis::queue_beat).

local queue_beat = 1500
-- queue_keys: the order and beats keys of the lock named lock
local function queue_keys(lock)
	return lock .. '\0queue', lock .. '\0beats'
end

local function q_call(...)
	local r = redis.pcall(...)
	if type(r) == 'table' and r.err then return nil end
	return r
end
local function q_now()
	local t = q_call('TIME')
	if not t then return nil end
	return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- queue_head: the first live waiter (the dead before it removed), or nil
local function queue_head(order, beats, now)
	for _ = 1, 1000 do
		local first = q_call('ZRANGE', order, 0, 0)
		if not first or not first[1] then return nil end
		local beat = q_call('ZSCORE', beats, first[1])
		if beat and tonumber(beat) > now then return first[1], tonumber(beat) end
		q_call('ZREM', order, first[1])
		q_call('ZREM', beats, first[1])
	end
	return nil
end
-- enqueue: holder at the tail (or where it is), its beat now + ms
local function enqueue(order, beats, holder, now, ms)
	if not q_call('ZSCORE', order, holder) then
		local last = q_call('ZRANGE', order, -1, -1, 'WITHSCORES')
		if not last then return end
		local place = 1
		if last[2] then place = tonumber(last[2]) + 1 end
		if not q_call('ZADD', order, string.format('%d', place), holder) then return end
	end
	q_call('ZADD', beats, string.format('%d', now + ms), holder)
	for _, k in ipairs({order, beats}) do
		local left = q_call('PTTL', k)
		if left and left < ms then q_call('PEXPIRE', k, string.format('%d', ms)) end
	end
end
local function dequeue(order, beats, holder)
	local removed = q_call('ZREM', order, holder)
	q_call('ZREM', beats, holder)
	return removed or 0
end
-- queued: whether the order key exists (a queue to look at)
local function queued(order)
	return order ~= nil and q_call('EXISTS', order) == 1
end
