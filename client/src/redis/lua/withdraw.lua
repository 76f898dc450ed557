-- withdraw.lua -- a writer that stops waiting (its wait is over) takes its
-- mark back, so the readers need not wait for its expiry (redis/lock.cpp).
-- KEYS: writers.  ARGV: holder.  1: a mark removed; 0: none.
--#include mark
return unmark_writer(KEYS[1], ARGV[1])
