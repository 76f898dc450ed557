-- withdraw.lua -- a writer that stops waiting (its wait is over) takes its
-- mark back, so the readers need not wait for its expiry, and leaves the
-- queue, so the next waiter need not wait for its beat's end (redis/lock.cpp).
-- KEYS: writers, queue order, queue beats.  ARGV: holder.  1: a mark or a
-- place removed; 0: none.
--#include mark
--#include queue
local removed = unmark_writer(KEYS[1], ARGV[1])
if KEYS[2] and dequeue(KEYS[2], KEYS[3], ARGV[1]) == 1 then removed = 1 end
return removed
