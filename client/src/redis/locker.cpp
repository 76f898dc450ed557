// redis/locker.cpp -- the redis:// provider: leases on one Redis node; and
// redis+sentinel://, the same on whichever node Sentinel names the master.
//
// Recipe: the single-instance lock of the Redis distlock page
// (https://redis.io/docs/latest/develop/clients/patterns/distributed-locks/):
// SET key value NX PX ttl to take, compare-and-PEXPIRE to extend,
// compare-and-DEL to release, each one Lua script so the compare and the
// write are atomic.
//
// Token: the acquire script checks everything first (the lock is free, the
// counter is sound) and only then INCRs a per-resource counter that is never
// deleted and SETs the lock key to "<token>:<holder>"; a refusal writes
// nothing.  Tokens are exact integers up to 2^53-1 (the script's numbers are
// Lua doubles): a counter that is not an integer from 0 to 2^53-2 is damaged
// server state, refused with Errc::internal naming the key, never a token
// that repeats or goes down.  The counter is as durable as the node's data:
// monotonic across restarts only with AOF and appendfsync always (a node
// restarted without its data starts counting again at 1).
//
// Bounds: TTLs up to 2^53-1 ms (max_ttl); acquire returns within wait +
// statement_grace, renew and release within statement_grace; an acquire
// whose reply is lost leaves a lock of at most min(ttl, statement_grace)
// (see RedisLocker).
//
// Keys (not hash-tagged: one node, no Redis Cluster; redis/keys.hpp):
//   pglease:lock:<resource>      the grant, "<token>:<holder>", PX ttl; or
//                                the shared grants or permits, a sorted set
//   pglease:lock:<resource>\0writers  the waiting writers' marks, a sorted
//                                set (\0: a NUL byte, in no resource's name)
//   pglease:token:<resource>     the token counter (a plain integer, no TTL)
//   pglease:released:<resource>  the pub/sub channel a release publishes on
// and for an election (redis/election.cpp, docs/election.md):
//   pglease:value:<election>     "<term>:<since ms>:<value>", PX the grant's ttl
//   pglease:token:<election>\0epoch  the epoch of its terms, the counter's
//                                life (a new one when the counter starts again)
//   pglease:election:<election>  the pub/sub channel every change publishes on
//
// Access: with the URL's credentials every connection AUTHs first; an ACL
// user needs the keys pglease:lock:* and pglease:token:*, the channel
// pglease:released:*, and the commands EVALSHA, EVAL, SUBSCRIBE (the waiters'
// wake-up; without it they poll), SELECT for a /db other than 0, and those
// the scripts call: GET, SET, PEXPIRE, PTTL, INCR, DEL, PUBLISH (the
// ACL SETUSER line: tests/client/redis_auth_test.cpp).  Shared leases and
// permits add TIME, ZADD, ZRANGE, ZRANGEBYSCORE, ZREMRANGEBYSCORE, ZSCORE
// and ZREM (the lock scripts call them only on a resource that has shared
// grants, and a waiting writer's mark through pcall, so a lock-only user
// keeps working: its writers wait unmarked).  Elections add the
// key pglease:value:*, the channel pglease:election:* and the command TIME
// (the term's since; tests/client/redis_election_test.cpp).  A refused
// AUTH, a key or a command outside the user's ACL is Errc::permission, and
// it changes nothing on the server.
//
// Token-level calls: renew and release by (resource, token) compare the
// lock's value with "<token>:" (any holder) or, given the holder, with the
// whole "<token>:<holder>", inside the renew or release script.  They are
// the lock's scripts (a lock-only ACL keeps working), so on an election
// they touch the lock alone: a release there ends the term at once (the
// lock says who leads) but publishes no change (observers learn it within
// their one-second re-read), and a renewal leaves the value key to expire
// at its own end (leader() then shows the term with an empty value).
//
// Sentinel (redis+sentinel://): the recipe runs on the master the Sentinels
// name (redis/node.hpp follows it through a failover; meanwhile every call
// is Errc::unavailable).  Redis replicates asynchronously: a replica
// promoted by a failover may lack the latest grant (a second holder while
// the first still holds) and the latest INCR of the counter (a token handed
// out again).  Nothing here waits for a replica (WAIT would only narrow the
// window, and Redis' docs say WAIT does not make Redis strongly consistent),
// so capabilities() claims neither durable nor survives_failover; tokens
// strictly increase between failovers.
//
// Shared leases and semaphores (docs/shared-leases.md): while a resource
// has readers or permits, its lock key is a sorted set instead of the lock's
// string: one member "<token>:<holder>" per grant, scored by its expiry in
// the server's TIME (ms), and "=shared" or "=limit:<N>" saying which it is.
// Each script prunes the members that expired, then decides, in one step; the
// key's own PTTL covers its longest member, so it ends with its last grant.
// Tokens come from the same counter as the locks', so they increase across
// modes.  The lock stays the string it always was (older clients, elections
// and the CLI keep working; an older client meeting the set gets Redis'
// WRONGTYPE, an error, never a grant), and the exclusive scripts keep their
// one key and their ACL: one key means the check "no shared grant" is in
// the same script as the grant.  Writer preference without a queue: a
// writer that waits refreshes its mark (writer_mark, 3 s) in the writers'
// key at each poll, whatever holds the resource, and no reader is granted
// while a mark lives; it takes its mark back when granted or when its wait
// is over (mark_lua).  A writer whose ACL user lacks TIME, ZADD,
// ZREMRANGEBYSCORE or ZREM waits unmarked: readers may then overtake it.
// Renew and release name a grant by its member, the token-level calls by
// "<token>:" as for locks.
//
// Re-acquire: a holder asking for a key it holds already gets its token back
// with a new expiry (as the PostgreSQL provider does), so an acquire retried
// after a lost reply does not wait for itself.  Waiting: retries with
// jittered backoff, woken early by the release's PUBLISH; not FIFO (a
// campaign waits the same way).
#include <algorithm>
#include <optional>
#include <thread>

#include "detail/provider.hpp"
#include "detail/backoff.hpp"
#include "redis/component.hpp"
#include "redis/election.hpp"
#include "redis/keys.hpp"
#include "redis/node.hpp"

namespace pglease::detail {

namespace {

using redis::Keys;
using redis::keys_of;
using redis::Node;
using redis::Reply;
using redis::Script;

// The Lua every lock script starts with.  token_of: a token's text as a
// number, nil when it is not one.  The counter goes through Lua numbers
// (doubles), exact only up to 2^53-1: it must be absent or a decimal integer
// from 0 to 2^53-2 (the next token then is at most 2^53-1), else
// PGLEASE_COUNTER: a damaged or hostile counter (abc, 5.5, -3,
// 9007199254740993) must never hand out a token that repeats or goes down.
// INCR then cannot fail, and its result is exact.
//
// The lock key holds an exclusive grant (a string, "<token>:<holder>", PX
// ttl: the layout of every release so far) or the shared grants and permits
// of the resource (a sorted set, see grants_lua).  read_lock answers the
// string, or false with true when the key is such a set (GET's WRONGTYPE),
// so the exclusive scripts keep their one key and their ACL: they call the
// sorted-set commands only on a resource that has shared grants.
const std::string common_lua = R"lua(
local limit = 9007199254740991
local function token_of(s)
	if s == '0' then return 0 end
	if #s > 16 or not string.find(s, '^[1-9]%d*$') then return nil end
	local n = tonumber(s)
	if n > limit then return nil end
	return n
end
local function read_lock(key)
	local v = redis.pcall('GET', key)
	if type(v) == 'table' then
		if v.err and string.find(v.err, 'WRONGTYPE', 1, true) then return false, true end
		error(v)
	end
	return v, false
end
-- the next token of the counter KEYS[2], checked before anything is written
local function next_token()
	local raw = redis.call('GET', KEYS[2])
	if not raw then return 1 end
	local last = token_of(raw)
	if not last then
		error(redis.error_reply('PGLEASE_COUNTER ' .. (string.gsub(string.sub(raw, 1, 32), '[^%w%.%+%-]', '?'))))
	end
	if last >= limit then error(redis.error_reply('PGLEASE_EXHAUSTED counter')) end
	return last + 1
end
)lua";

// The sorted set of a resource's shared grants or permits (at the lock key):
//   "<token>:<holder>"  one grant, scored by its expiry (the server's TIME, ms)
//   "=shared" or "=limit:<N>"  what the grants are, scored +inf
// (waiting writers' marks are a set of their own, see mark_lua).  Every script prunes what expired (ZREMRANGEBYSCORE) before it reads, and
// keeps the key's PTTL at least as long as its longest member (cover), so
// the key ends by itself after its last grant.  A request that disagrees
// with the set's kind is PGLEASE_MISMATCH <kind> (own:<kind>: the holder's
// own grant is of that kind), written before anything changes.
const std::string grants_lua = R"lua(
local function now_ms()
	local t = redis.call('TIME')
	return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function cover(key, ms)
	if redis.call('PTTL', key) < ms then redis.call('PEXPIRE', key, string.format('%d', ms)) end
end
local function expiry(now, ms)
	return string.format('%d', math.min(now + ms, limit))
end
local function mismatch(kind)
	error(redis.error_reply('PGLEASE_MISMATCH ' .. kind))
end
-- read_grants: {kind, grants = {{member, token, holder, expiry}},
-- first (the earliest grant's expiry)}, after the pruning
local function read_grants(key, now)
	redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now))
	local all = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
	local s = {grants = {}}
	for i = 1, #all, 2 do
		local m, score = all[i], tonumber(all[i + 1])
		if string.sub(m, 1, 1) == '=' then
			s.kind = string.sub(m, 2)
		else
			local sep = string.find(m, ':', 1, true)
			local token = sep and token_of(string.sub(m, 1, sep - 1))
			if not token then error(redis.error_reply('PGLEASE_LOCK holds no token')) end
			table.insert(s.grants, {member = m, token = token, holder = string.sub(m, sep + 1), expiry = score})
			s.first = math.min(s.first or score, score)
		end
	end
	return s
end
-- idle: no grant left: the key goes
local function drop_if_idle(key, s)
	if #s.grants == 0 then
		redis.call('DEL', key)
		return true
	end
	return false
end
local function wait_for(t, now)
	return -math.max(t - now, 1)
end
)lua";

// The marks of the writers waiting for a resource, at its writers' key (the
// lock's name, a NUL byte, "writers"; redis/keys.hpp): a sorted set of
// holders, each scored by its mark's expiry (the server's TIME, ms), the
// key's PTTL covering the longest.  A writer that waits (re)marks itself at
// each poll, whatever holds the resource -- readers or another writer's
// lock -- and takes its mark back when granted or when its wait is over;
// no reader is granted while a mark lives (share_script), so readers that
// come after a waiting writer go after it (writer preference), also when
// the writer before it releases.  mark_writer goes through pcall: a user
// whose ACL lacks TIME or ZADD (a lock-only user) waits unmarked instead of
// failing; the lock's own commands are never refused by it.
const std::string mark_lua = R"lua(
local function mark_writer(key, holder, ms)
	local t = redis.pcall('TIME')
	if t.err then return end
	local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
	local pruned = redis.pcall('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now))
	if type(pruned) == 'table' and pruned.err then return end
	local added = redis.pcall('ZADD', key, string.format('%d', math.min(now + ms, limit)), holder)
	if type(added) == 'table' and added.err then return end
	if redis.call('PTTL', key) < ms then redis.call('PEXPIRE', key, string.format('%d', ms)) end
end
local function unmark_writer(key, holder)
	local removed = redis.pcall('ZREM', key, holder)
	if type(removed) ~= 'number' then return 0 end
	return removed
end
)lua";

// KEYS: lock, counter, writers.  ARGV: holder, ttl (ms), writer mark (ms;
// '0': not waiting), '1' when this request has marked itself before.  (A
// campaign marks nothing: its KEYS[3] and ARGV[3] are its value's.)
// > 0: the token granted (or the holder's own, its expiry set to ttl); <= 0:
// held by another holder, -(ms until it may be free).  Every check comes
// before the first write, so a refusal (an error reply) changes nothing.
// A waiting writer marks itself (mark_lua), on shared grants (the sorted
// set) or behind another holder's lock; the readers' last release or
// expiry frees the resource, and the set is replaced by the lock.  Permits
// there, or a reader's grant of this holder, are a mismatch.
// acquire_lua defines acquire(prepare, w): the script's answer, for
// acquire_script as it is and for campaign_script before it stores the
// value; w (nil for a campaign) is {key, mark, marked}, the writer's mark.
// prepare (nil for a lock) runs with the token about to be granted
// before the first write: Redis checks a script's commands and channels
// against the user's ACL only when it calls them, and a script is not
// rolled back, so whatever may be refused runs before anything is written.
const std::string acquire_lua = common_lua + grants_lua + mark_lua + R"lua(
local function over_grants()
	local now = now_ms()
	local s = read_grants(KEYS[1], now)
	for _, g in ipairs(s.grants) do
		if g.holder == ARGV[1] then mismatch('own:' .. (s.kind or '?')) end
	end
	if #s.grants == 0 then
		redis.call('DEL', KEYS[1])
		return nil
	end
	if s.kind ~= 'shared' then mismatch(s.kind or '?') end
	return wait_for(s.first, now)
end
local function refuse(w, answer)
	if w and w.mark > 0 then mark_writer(w.key, ARGV[1], w.mark) end
	return answer
end
local function granted(w, token)
	if w and w.marked then unmark_writer(w.key, ARGV[1]) end
	return token
end
local function acquire(prepare, w)
	local current, grants = read_lock(KEYS[1])
	if grants then
		local refused = over_grants()
		if refused then return refuse(w, refused) end
	end
	if current then
		local sep = string.find(current, ':', 1, true)
		if sep and string.sub(current, sep + 1) == ARGV[1] then
			local token = token_of(string.sub(current, 1, sep - 1))
			if not token or token < 1 then
				return redis.error_reply('PGLEASE_LOCK holds no token')
			end
			if prepare then prepare(token) end
			redis.call('PEXPIRE', KEYS[1], ARGV[2])
			return granted(w, token)
		end
		return refuse(w, -math.max(redis.call('PTTL', KEYS[1]), 1))
	end
	local token = next_token()
	if prepare then prepare(token) end
	token = redis.call('INCR', KEYS[2])
	redis.call('SET', KEYS[1], string.format('%d', token) .. ':' .. ARGV[1], 'PX', ARGV[2])
	return granted(w, token)
end
)lua";

const Script acquire_script{acquire_lua +
                            "return acquire(nil, {key = KEYS[3], mark = tonumber(ARGV[3]), marked = ARGV[4] == '1'})\n"};

// KEYS: lock, counter, writers.  ARGV: holder, ttl (ms), kind ('shared' or
// 'limit:<N>'), N (0 for shared).  acquire_script's answers, for a reader or
// a permit: granted while the set's grants admit it -- a reader while no
// writer holds or waits (no live mark at KEYS[3]), a permit while fewer
// than N are held.  A lock held
// (a string) makes a reader wait; a permit request there is a mismatch.
const Script share_script{common_lua + grants_lua + R"lua(
local holder, ttl, kind, n = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local current, grants = read_lock(KEYS[1])
if current then
	local sep = string.find(current, ':', 1, true)
	if sep and string.sub(current, sep + 1) == holder then mismatch('own:lock') end
	if kind ~= 'shared' then mismatch('lock') end
	return -math.max(redis.call('PTTL', KEYS[1]), 1)
end
local now = now_ms()
local s = read_grants(KEYS[1], now)
for _, g in ipairs(s.grants) do
	if g.holder == holder then
		if s.kind ~= kind then mismatch('own:' .. (s.kind or '?')) end
		redis.call('ZADD', KEYS[1], 'XX', expiry(now, ttl), g.member)
		cover(KEYS[1], ttl)
		return g.token
	end
end
if drop_if_idle(KEYS[1], s) then s.kind = nil end
if s.kind and s.kind ~= kind then mismatch(s.kind) end
if kind == 'shared' then
	local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
	if last[2] and tonumber(last[2]) > now then return wait_for(tonumber(last[2]), now) end
elseif #s.grants >= n then
	return wait_for(s.first, now)
end
local token = next_token()
token = redis.call('INCR', KEYS[2])
if not s.kind then redis.call('ZADD', KEYS[1], '+inf', '=' .. kind) end
redis.call('ZADD', KEYS[1], expiry(now, ttl), string.format('%d', token) .. ':' .. holder)
cover(KEYS[1], ttl)
return token
)lua"};

// KEYS: lock, counter, value, epoch.  ARGV: holder, ttl (ms), value,
// election channel.  acquire_script's answers; when granted, the value key
// set to "<term>:<since>:<value>" with the same PX (the term's since kept
// on a re-campaign), a change published, and a new epoch when the counter
// starts anew (keep_epoch).  TIME and PUBLISH come before the writes (see
// acquire_lua); observers read after the script either way.
const Script campaign_script{acquire_lua + redis::term_value_lua() + redis::epoch_lua() + R"lua(
local new, old
local token = acquire(function(t)
	new, old = term_value(KEYS[3], string.format('%d', t) .. ':', ARGV[3])
	if new ~= old then redis.call('PUBLISH', ARGV[4], 'elected') end
	keep_epoch(KEYS[4], KEYS[2])
end, nil)
if type(token) ~= 'number' or token <= 0 then return token end
redis.call('SET', KEYS[3], new, 'PX', ARGV[2])
return token
)lua"};

// The compare of renew and release: ARGV[1] is the whole value
// "<token>:<holder>" (ARGV[2] = 'value') or its token part "<token>:"
// (ARGV[2] = 'token', the token-level calls).  On a lock (a string) the
// script goes on with the key matched; on shared grants (the sorted set),
// `member` is the live grant matched (nil: not held), for the script's
// grants part.  An election's scripts match locks only.
constexpr const char *match_lua = R"lua(
local current, grants = read_lock(KEYS[1])
local member, now
if grants then
	now = now_ms()
	if ARGV[2] == 'value' then
		local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
		if score and tonumber(score) > now then member = ARGV[1] end
	else
		local all = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. string.format('%d', now), '+inf')
		for _, m in ipairs(all) do
			if string.sub(m, 1, #ARGV[1]) == ARGV[1] then member = m end
		end
	end
	if not member then return 0 end
elseif not current then
	return 0
elseif ARGV[2] == 'value' then
	if current ~= ARGV[1] then return 0 end
elseif string.sub(current, 1, #ARGV[1]) ~= ARGV[1] then
	return 0
end
)lua";

const std::string lock_match_lua = common_lua + grants_lua + match_lua;

// KEYS: lock.  ARGV: match, mode, ttl (ms).  1: extended; 0: not held.
const Script renew_script{lock_match_lua + R"lua(
if member then
	redis.call('ZADD', KEYS[1], 'XX', expiry(now, tonumber(ARGV[3])), member)
	cover(KEYS[1], tonumber(ARGV[3]))
	return 1
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
)lua"};

// KEYS: lock.  ARGV: match, mode, channel.  1: deleted (and waiters told); 0:
// not held.  A shared grant leaves the set, which goes with its last member.
const Script release_script{lock_match_lua + R"lua(
if member then
	redis.call('ZREM', KEYS[1], member)
	drop_if_idle(KEYS[1], read_grants(KEYS[1], now))
else
	redis.call('DEL', KEYS[1])
end
redis.call('PUBLISH', ARGV[3], 'released')
return 1
)lua"};

// KEYS: writers.  ARGV: holder.  A writer that stops waiting (its wait is
// over) takes its mark back, so the readers need not wait for its expiry.
const Script withdraw_script{mark_lua + "return unmark_writer(KEYS[1], ARGV[1])\n"};

// An election's grant is a lock: its scripts see shared grants as "not held".
const std::string leader_match_lua = common_lua + grants_lua + match_lua + "if member then return 0 end\n";

// An election's grant: the value key lives and ends with the lock.
// KEYS: lock, value.  ARGV: match, mode, ttl (ms).  1: both extended; 0: not held.
const Script renew_leader_script{leader_match_lua + "redis.call('PEXPIRE', KEYS[1], ARGV[3])\n"
                                                    "redis.call('PEXPIRE', KEYS[2], ARGV[3])\n"
                                                    "return 1\n"};

// KEYS: lock, value.  ARGV: match, mode, release channel, election channel.
// 1: both deleted, waiting candidates and observers told; 0: not held.
// (Published first: a channel outside the ACL is refused before the DEL.)
const Script resign_script{leader_match_lua + "redis.call('PUBLISH', ARGV[3], 'released')\n"
                                              "redis.call('PUBLISH', ARGV[4], 'resigned')\n"
                                              "redis.call('DEL', KEYS[1], KEYS[2])\n"
                                              "return 1\n"};

// The longest TTL: 2^53-1 ms (about 285,000 years).  PX takes a signed
// 64-bit count of ms, but the acquire script answers a holder's PTTL
// through a Lua number, exact only up to 2^53-1; and every deadline of a
// lease is computed with deadline_after, so even this one never overflows.
constexpr milliseconds max_redis_ttl{(std::int64_t{1} << 53) - 1};
// The largest token (the acquire script's limit): 2^53-1.
constexpr std::int64_t max_token = (std::int64_t{1} << 53) - 1;
// margin_of -- what each local deadline leaves out of the TTL.  The server
// counts a key's expiry on its wall clock in whole ms (the key lives while
// its ms clock is at most the script's start + ttl, so never less than
// ttl after the send), but that clock's rate may differ from the client's
// steady clock (NTP slews it by up to 500 ppm) and the two are read at
// different moments: ttl/1000 (twice the slew) + 2 ms (the ms steps of
// both, and as much again), the clock-drift allowance of the distlock
// page's formula with a single node's rate; a holder never relies on its
// lease up to the instant the server lets the key go.
milliseconds
margin_of(milliseconds ttl) noexcept
{
	return ttl / 1000 + milliseconds{2};
}

// How long a waiting writer's mark holds later readers back after its last
// poll: a few of its polls (at most a second apart), so a writer that
// died waiting stops blocking readers soon.
constexpr milliseconds writer_mark{3000};

// left_of -- what is left before deadline, at most cap (<= 0: nothing)
milliseconds
left_of(Clock::time_point deadline, milliseconds cap) noexcept
{
	if (deadline == Clock::time_point::max())
		return cap;
	return std::min(cap, std::chrono::ceil<milliseconds>(deadline - Clock::now()));
}

// describe_kind -- a grant kind of the scripts ("lock", "shared",
// "limit:<N>") in words
std::string
describe_kind(std::string_view kind)
{
	if (kind == "lock")
		return "an exclusive lock";
	if (kind == "shared")
		return "shared leases (readers)";
	if (kind.rfind("limit:", 0) == 0)
		return "permits of a semaphore of " + std::string{kind.substr(6)};
	return "\"" + std::string{kind.substr(0, 32)} + "\" (damaged or foreign data)";
}

// kind_of -- a request's grant kind, as the scripts name it
std::string
kind_of(const LeaseOptions &options)
{
	if (options.mode == Mode::shared)
		return "shared";
	if (options.limit > 0)
		return "limit:" + std::to_string(options.limit);
	return "lock";
}

// script_error -- the Error for an error reply of a lock script: the
// acquire script's own refusals name the key they found damaged (damaged
// server state: Errc::internal, which is not retryable)
Error
script_error(const Reply &reply, const Node &node, const Keys &keys)
{
	std::string where = "redis " + to_string(node.endpoint()) + ": ";
	std::string_view text = reply.text;
	if (text.rfind("ERR ", 0) == 0) // what Redis puts before a one-word error_reply
		text.remove_prefix(4);
	if (text.rfind("PGLEASE_EXHAUSTED", 0) == 0)
		return Error{
		    Errc::internal, "",
		    where + "the token counter " + keys.counter + " reached " + std::to_string(max_token) +
		        " (2^53-1, the largest exact token): no higher token can be granted; nothing was changed"};
	if (text.rfind("PGLEASE_COUNTER ", 0) == 0)
		return Error{Errc::internal, "",
		             where + "the token counter " + keys.counter + " holds \"" +
		                 std::string{text.substr(16)} + "\", not an integer from 0 to " +
		                 std::to_string(max_token - 1) +
		                 " (damaged or foreign data); "
		                 "nothing was changed, the lease is not granted until it is repaired"};
	if (text.rfind("PGLEASE_MISMATCH ", 0) == 0) {
		std::string_view kind = text.substr(17);
		kind = kind.substr(0, kind.find(' '));
		bool own = kind.rfind("own:", 0) == 0;
		if (own)
			kind.remove_prefix(4);
		return Error{Errc::invalid_argument, "LS003",
		             where + (own ? "this holder's own grant of the resource is " : "the resource is held as ") +
		                 describe_kind(kind) +
		                 ": every holder and waiter of a resource asks for the same mode and limit; "
		                 "nothing was changed"};
	}
	if (text.rfind("PGLEASE_LOCK", 0) == 0)
		return Error{
		    Errc::internal, "",
		    where + "the lock " + keys.lock +
		        " names this holder but no valid token (damaged or foreign data); nothing was changed"};
	return redis::error_from_reply(reply, node.endpoint());
}

// integer_of -- the integer a script answered, or the Error it amounts to
Result<long long>
integer_of(const Result<Reply> &reply, const Node &node, const Keys &keys)
{
	if (!reply)
		return reply.error();
	if (reply->is_error())
		return script_error(*reply, node, keys);
	if (!reply->is_integer())
		return Error{Errc::internal, "",
		             "redis " + to_string(node.endpoint()) + ": a lock script answered no integer"};
	return reply->integer;
}

// compare_and -- run renew_script or release_script for one grant within
// timeout (0: the node's command timeout); true: done
Result<bool>
compare_and(Node &node, const Script &script, const Keys &keys, std::string_view match, std::string_view mode,
            std::string_view last_arg, milliseconds timeout = {}) noexcept
{
	try {
		auto done = integer_of(node.eval(script, {keys.lock}, {match, mode, last_arg}, timeout), node, keys);
		if (!done)
			return done.error();
		return *done == 1;
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

// renew_grant / release_grant -- a grant's renewal or release by its whole
// value: a lock's with the lock scripts, an election's with the scripts
// that extend or delete the value key with the lock (and tell observers)
Result<bool>
renew_grant(Node &node, const Keys &keys, bool election, std::string_view match, milliseconds ttl,
            milliseconds timeout) noexcept
{
	try {
		const std::string ms = std::to_string(ttl.count());
		if (!election)
			return compare_and(node, renew_script, keys, match, "value", ms, timeout);
		auto done =
		    integer_of(node.eval(renew_leader_script, {keys.lock, keys.value}, {match, "value", ms}, timeout),
		               node, keys);
		if (!done)
			return done.error();
		return *done == 1;
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

Result<bool>
release_grant(Node &node, const Keys &keys, bool election, std::string_view match,
              milliseconds timeout = {}) noexcept
{
	if (!election)
		return compare_and(node, release_script, keys, match, "value", keys.released, timeout);
	try {
		auto done = integer_of(node.eval(resign_script, {keys.lock, keys.value},
		                                 {match, "value", keys.released, keys.election}, timeout),
		                       node, keys);
		if (!done)
			return done.error();
		return *done == 1;
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

// RedisGrant -- one grant: its value names it.  A renewal ends by the grant's
// local deadline: past it the lease is lost anyway, and a renewal still in
// flight would only keep a lock nobody counts on.  An election's grant also
// proclaims (redis/election.cpp), compared with the lock in the same script.
class RedisGrant final : public Grant {
public:
	RedisGrant(std::shared_ptr<Node> node, Keys keys, bool election, std::string value, milliseconds grace,
	           Clock::time_point valid_until)
	    : node_(std::move(node)), keys_(std::move(keys)), election_(election), value_(std::move(value)),
	      grace_(grace), valid_until_(valid_until)
	{
	}

	Result<bool> renew(milliseconds ttl) noexcept override
	{
		auto sent = Clock::now();
		auto budget = left_of(valid_until_, grace_);
		if (budget <= milliseconds{0})
			return Error{Errc::lost, "", "the local deadline passed before the renewal"};
		auto renewed = renew_grant(*node_, keys_, election_, value_, ttl, budget);
		if (renewed && *renewed)
			valid_until_ = deadline_after(sent, ttl);
		return renewed;
	}
	Result<bool> release() noexcept override { return release_grant(*node_, keys_, election_, value_); }
	Result<bool> proclaim(std::string_view value) noexcept override
	{
		if (!election_)
			return Grant::proclaim(value);
		return redis::proclaim(*node_, keys_, value_, value, grace_);
	}

private:
	std::shared_ptr<Node> node_;
	Keys keys_;
	bool election_;
	std::string value_;
	milliseconds grace_;
	Clock::time_point valid_until_;
};

// RedisLocker -- acquire with the acquire script, wait on the release channel.
//
// Time bounds (ClientOptions::statement_grace, "grace"): acquire returns
// within wait + grace, every other call within grace (one deadline per call
// across reconnects and retries).  A lost reply: the acquire script grants
// for min(ttl, grace) only, and the client extends that to ttl once it has
// the reply; so an acquire the server runs after the caller gave up (a
// frozen server that resumes) leaves a lock that expires within grace of
// running, not one of the full TTL under a holder nobody knows.  The cost:
// a TTL longer than grace takes a second round trip at acquire.
class RedisLocker final : public LockerBase {
public:
	RedisLocker(std::shared_ptr<Node> node, milliseconds grace) noexcept
	    : node_(std::move(node)), grace_(std::max(grace, milliseconds{1}))
	{
	}

	// The same behind Sentinels: a failover to an asynchronous replica can
	// lose the last grant and the last INCR (see the banner), so neither
	// durable nor survives_failover, with or without Sentinel.
	Capabilities capabilities() const noexcept override
	{
		Capabilities c;
		c.distributed = true;
		c.fencing_token = true; // while the node keeps its data (AOF, appendfsync always), no failover
		c.election = true;      // redis/election.cpp
		c.shared_mode = true;   // the sorted set of grants (see the banner)
		c.semaphore = true;
		c.reclaim = true; // a holder asking for a key it holds gets its token back
		return c;
	}
	std::string_view provider() const noexcept override { return "Redis"; }

	// by token alone the script compares the value's "<token>:" prefix; with
	// a holder the whole "<token>:<holder>", in the same script as the change
	Result<bool> renew_by_token(std::string_view resource, std::int64_t token, std::string_view holder,
	                            milliseconds ttl) override
	{
		return compare_and(*node_, renew_script, keys_of(resource),
		                   std::to_string(token) + ":" + std::string{holder},
		                   holder.empty() ? "token" : "value", std::to_string(ttl.count()));
	}

	Result<bool> release_by_token(std::string_view resource, std::int64_t token,
	                              std::string_view holder) override
	{
		Keys keys = keys_of(resource);
		return compare_and(*node_, release_script, keys, std::to_string(token) + ":" + std::string{holder},
		                   holder.empty() ? "token" : "value", keys.released);
	}

protected:
	milliseconds max_ttl() const noexcept override { return max_redis_ttl; }
	// every renewal's deadline leaves margin_of(ttl) out (the engine's drift)
	milliseconds drift(milliseconds ttl) const noexcept override { return margin_of(ttl); }

	Result<Granted> grant(std::string_view resource, const LeaseOptions &options, const std::string &holder,
	                      milliseconds) override
	{
		if (options.strategy != Strategy::lease || options.session_bound)
			return Error{Errc::invalid_argument, "",
			             "the Redis provider offers Strategy::lease only (no sessions, no advisory locks)"};
		return take(resource, options, holder, nullptr); // acquire() turns a throw into Errc::internal
	}

	// an election's grant: the lock's, with the value stored beside it
	Result<Granted> grant_leadership(std::string_view election, std::string_view value,
	                                 const LeaseOptions &options, const std::string &holder,
	                                 milliseconds) override
	{
		if (options.strategy != Strategy::lease || options.session_bound)
			return Error{Errc::invalid_argument, "",
			             "the Redis provider offers Strategy::lease only (no sessions, no advisory locks)"};
		const std::string kept{value};
		return take(election, options, holder, &kept);
	}
	Result<LeaderView> read_leader(std::string_view election) override
	{
		return redis::read_view(*node_, keys_of(election), grace_);
	}
	Result<LeaderView> next_leader(std::string_view election, const LeaderView &seen,
	                               Clock::time_point deadline) override
	{
		return redis::next_view(*node_, keys_of(election), seen, deadline, grace_, subscriptions_);
	}

private:
	// take -- the acquire script (the campaign script when value is not
	// null) until granted or options.wait is over; the whole call ends by
	// wait + grace
	Result<Granted> take(std::string_view resource, const LeaseOptions &options, const std::string &holder,
	                     const std::string *value)
	{
		Keys keys = keys_of(resource);
		const auto start = Clock::now();
		const auto give_up = deadline_after(start, options.wait);
		const auto call_deadline = deadline_after(start, saturating_add(options.wait, grace_));
		const milliseconds provisional = std::min(options.ttl, grace_);
		const std::string provisional_ttl = std::to_string(provisional.count());
		// a writer that will wait marks itself on the readers' grants
		const bool writer = !value && options.mode == Mode::exclusive && options.limit == 0;
		const std::string mark =
		    writer && options.wait > milliseconds{0} ? std::to_string(writer_mark.count()) : "0";
		bool marked = false; // the script has marked this writer (mark_lua)
		std::optional<redis::Subscriber> woken_by_release;
		bool subscribed = false;
		Backoff delay{milliseconds{25}, milliseconds{1000}};
		for (;;) {
			auto budget = left_of(call_deadline, grace_);
			if (budget <= milliseconds{0})
				return not_granted(resource, options);
			auto sent = Clock::now();
			auto answer =
			    integer_of(ask(keys, options, holder, value, provisional_ttl, mark, marked, budget), *node_, keys);
			if (!answer) {
				Error e = answer.error();
				if (e.sqlstate == "LS003")
					e.message = (value ? "election \"" + std::string{resource} + "\": a campaign asks for "
					                   : "lease \"" + std::string{resource} + "\" asked for ") +
					            describe_kind(kind_of(options)) + ": " + e.message;
				return e;
			}
			if (*answer > 0)
				return confirm(resource, std::move(keys), value != nullptr, *answer, holder, options.ttl,
				               provisional, sent, call_deadline);
			marked = marked || mark != "0";
			auto now = Clock::now();
			if (now >= give_up) {
				if (marked) // best effort: else the mark expires by itself
					if (auto left = left_of(call_deadline, grace_); left > milliseconds{0})
						(void)node_->eval(withdraw_script, {keys.writers}, {holder}, left);
				return not_granted(resource, options);
			}
			if (!subscribed) {
				// subscribe, then ask again at once: a release published
				// between the first try and the subscription is not missed
				subscribed = true;
				if (auto sub = node_->subscribe(keys.released, left_of(give_up, grace_)))
					woken_by_release.emplace(std::move(*sub));
				continue;
			}
			// wake for the release, the holder's expiry, or the next retry
			auto holder_left = milliseconds{-*answer} + milliseconds{1};
			auto pause = std::min({delay.next(), holder_left, left_of(give_up, holder_left)});
			auto wake = now + pause;
			if (woken_by_release && woken_by_release->usable()) {
				if (!woken_by_release->wait(pause))
					woken_by_release.reset(); // polling from now on
			}
			std::this_thread::sleep_until(woken_by_release ? now : wake);
		}
	}

	// ask -- one try of the script for the request: the campaign's, the
	// lock's, or a reader's or permit's
	Result<Reply> ask(const Keys &keys, const LeaseOptions &options, const std::string &holder,
	                  const std::string *value, const std::string &ttl, const std::string &mark, bool marked,
	                  milliseconds budget)
	{
		if (value)
			return node_->eval(campaign_script, {keys.lock, keys.counter, keys.value, keys.epoch},
			                   {holder, ttl, *value, keys.election}, budget);
		if (options.mode == Mode::exclusive && options.limit == 0)
			return node_->eval(acquire_script, {keys.lock, keys.counter, keys.writers},
			                   {holder, ttl, mark, marked ? "1" : "0"}, budget);
		return node_->eval(share_script, {keys.lock, keys.counter, keys.writers},
		                   {holder, ttl, kind_of(options), std::to_string(options.limit)}, budget);
	}

	// confirm -- a grant of min(ttl, grace) extended to ttl (see the class
	// comment); its local deadline counts from the request that set the TTL
	Result<Granted> confirm(std::string_view resource, Keys keys, bool election, std::int64_t token,
	                        const std::string &holder, milliseconds ttl, milliseconds provisional,
	                        Clock::time_point sent, Clock::time_point call_deadline)
	{
		std::string value = std::to_string(token) + ":" + holder;
		Granted g;
		g.token = token;
		g.deadline = deadline_after(sent, provisional - margin_of(provisional));
		if (ttl > provisional) {
			auto extended_at = Clock::now();
			auto budget = left_of(call_deadline, grace_);
			Result<bool> extended =
			    Error{Errc::unavailable, "", "no time left within wait + statement_grace"};
			if (budget > milliseconds{0})
				extended = renew_grant(*node_, keys, election, value, ttl, budget);
			if (!extended || !*extended) {
				std::string why = extended ? std::string{"it expired first (the server answered too late)"}
				                           : extended.error().message;
				if (auto left = left_of(call_deadline, grace_); left > milliseconds{0})
					(void)release_grant(*node_, keys, election, value, left);
				return Error{Errc::unavailable, "",
				             "lease \"" + std::string{resource} + "\": token " + std::to_string(token) +
				                 " was granted for " + format_duration(provisional) +
				                 " but could not be extended to its ttl " + format_duration(ttl) + ": " +
				                 why + " (the provisional grant expires by itself)"};
			}
			g.deadline = deadline_after(extended_at, ttl - margin_of(ttl));
		}
		g.grant = std::make_unique<RedisGrant>(node_, std::move(keys), election, std::move(value), grace_,
		                                       g.deadline);
		return g;
	}

	static Error not_granted(std::string_view resource, const LeaseOptions &options)
	{
		return Error{Errc::timeout, "",
		             "lease \"" + std::string{resource} + "\" not granted within " +
		                 format_duration(options.wait)};
	}

	std::shared_ptr<Node> node_;
	milliseconds grace_;
	redis::Subscriptions subscriptions_; // observers' channels, kept between observe calls
};

} // namespace

Result<std::unique_ptr<Locker>>
connect_redis(std::string_view url, const ClientOptions &options)
{
	auto target = redis::parse_url(url, options);
	if (!target)
		return target.error();
	if (target->redlock || (!target->sentinel && target->nodes.size() != 1))
		return Error{Errc::invalid_argument, "",
		             "redis:// names exactly one node: redis://[[user]:password@]host:port[/db]"};
	std::shared_ptr<Node> node;
	if (target->sentinel)
		node = std::make_shared<Node>(
		    std::make_shared<redis::Sentinels>(std::move(target->nodes), std::move(target->master_name)),
		    target->db, target->credentials, options, options.statement_grace);
	else
		node = std::make_shared<Node>(target->nodes[0], target->db, target->credentials, options,
		                              options.statement_grace, target->tls);
	auto locker = std::make_unique<RedisLocker>(std::move(node), options.statement_grace);
	return handed_out(std::move(locker));
}

} // namespace pglease::detail
